#!/usr/bin/env bash
# bench-wrk.sh measures tools/call with a general-purpose HTTP load generator
# (wrk, Debian's package), outside the Go harness, against the stateless
# go-sdk demo upstream directly and through four hops in front of it: a
# default httputil.ReverseProxy (skillsbench bareproxy); a minimal Go relay
# without net/http's server (skillsbench loopproxy: the floor for a hop in a
# Go process, not a usable proxy); nginx as a plain hop (the harness's own
# configuration, skipped when nginx is not installed); and the sidecar.
#
# For each concurrency in CONNS (default "1 32") it runs every target for
# DURATION (default 5s), ROUNDS times (default 3) interleaved, and prints the
# median throughput and latency of each target and, per hop, the throughput
# ratio to direct and the p50 it adds over direct. A reply counts only if it
# is HTTP 200 and holds a JSON-RPC result. Loopback only; every process it
# starts is stopped by pid. Numbers are printed, never asserted; the script
# exits non-zero only when a target cannot start or answers a request wrong.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
duration=${DURATION:-5s}
read -r -a conns_list <<<"${CONNS:-1 32}"
rounds=${ROUNDS:-3}
if ! command -v wrk >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q wrk >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q wrk >/dev/null; }
fi

# shellcheck source=scripts/e2e-lib.sh
source scripts/e2e-lib.sh # e2e_spawn, e2e_wait_http, e2e_cleanup; free_port
E2E_NAME=bench-wrk
work=$(mktemp -d)
trap 'e2e_cleanup; rm -rf "$work"' EXIT

go build -o "$work/demo-upstream" ./cmd/demo-upstream
go build -o "$work/skills-sidecar" ./cmd/skills-sidecar
go build -o "$work/skillsbench" ./bench/cmd/skillsbench

# start TARGET CMD... runs CMD (which listens on ${port[TARGET]}) with its
# output in TARGET's log, and adds TARGET to the targets.
declare -A port pid
targets=()
start() {
  local t=$1
  shift
  e2e_spawn "$work/$t.log" "$@"
  pid[$t]=$E2E_LAST_PID
  targets+=("$t")
}

free_port "port[direct]"
start direct "$work/demo-upstream" --listen "127.0.0.1:${port[direct]}" --stateless --json
free_port "port[bare]"
start bare "$work/skillsbench" bareproxy -listen "127.0.0.1:${port[bare]}" -upstream "http://127.0.0.1:${port[direct]}"
free_port "port[loop]"
start loop "$work/skillsbench" loopproxy -listen "127.0.0.1:${port[loop]}" -upstream "http://127.0.0.1:${port[direct]}"

nginx_bin=$(command -v nginx || true)
[[ -z $nginx_bin && -x /usr/sbin/nginx ]] && nginx_bin=/usr/sbin/nginx
if [[ -n $nginx_bin ]]; then
  free_port "port[nginx]"
  mkdir "$work/nginx"
  "$work/skillsbench" nginx-config -prefix "$work/nginx" -listen "127.0.0.1:${port[nginx]}" \
    -upstream "127.0.0.1:${port[direct]}" >"$work/nginx/nginx.conf"
  start nginx "$nginx_bin" -p "$work/nginx" -c "$work/nginx/nginx.conf" -e "$work/nginx/error.log"
else
  echo "nginx not installed (apt-get install -y nginx-light): its rows are skipped" >&2
fi

free_port "port[sidecar]"
start sidecar "$work/skills-sidecar" --listen "127.0.0.1:${port[sidecar]}" --metrics-listen "" --annotations-file "" \
  --upstream "http://127.0.0.1:${port[direct]}/mcp" --log-level warn

for t in "${targets[@]}"; do
  e2e_wait_http "http://127.0.0.1:${port[$t]}/mcp" "${pid[$t]}" 10 "$work/$t.log" || exit 1
done

cat >"$work/call.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "echo"

local threads = {}
setup = function(thread) table.insert(threads, thread) end
init = function() bad = 0 end
response = function(status, headers, body)
  if status ~= 200 or not string.find(body, '"result"', 1, true) then bad = bad + 1 end
end
done = function(summary, latency, requests)
  local wrong = 0
  for _, t in ipairs(threads) do wrong = wrong + t:get("bad") end
  io.write(string.format("RESULT rps=%.0f p50_us=%d p99_us=%d errors=%d wrong=%d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50), latency:percentile(99),
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, wrong))
end
LUA

# results: one line per run, "conns target rps p50 p99 errors wrong".
results=$work/results
for c in "${conns_list[@]}"; do
  threads=2
  ((c < 2)) && threads=1
  for ((r = 1; r <= rounds; r++)); do
    for t in "${targets[@]}"; do
      echo "== c=$c round $r/$rounds: $t (wrk -t$threads -c$c -d$duration)" >&2
      line=$(wrk -t"$threads" -c"$c" -d"$duration" -s "$work/call.lua" "http://127.0.0.1:${port[$t]}/mcp" | grep '^RESULT')
      echo "$line" >&2
      echo "$c $t $line" | sed 's/RESULT //; s/[a-z0-9_]*=//g' >>"$results"
    done
  done
done

# Medians per (conns, target), then the ratios to direct.
awk -v order="${targets[*]}" '
function median(list,    n, a, i, j, x) {
  n = split(list, a, " ")
  for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > x + 0; j--) a[j + 1] = a[j]; a[j + 1] = x }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
  k = $1 SUBSEP $2; seen[$1] = 1
  rps[k] = rps[k] " " $3; p50[k] = p50[k] " " $4; p99[k] = p99[k] " " $5
  errs[k] += $6; wrong[k] += $7; bad += $6 + $7
}
END {
  nt = split(order, ts, " ")
  print "| conns | target | req/s | p50 µs | p99 µs | errors | wrong replies | /direct | +p50 µs |"
  print "|--:|---|--:|--:|--:|--:|--:|--:|--:|"
  for (c in seen) cs[++nc] = c + 0
  for (i = 2; i <= nc; i++) { x = cs[i]; for (j = i - 1; j >= 1 && cs[j] > x; j--) cs[j + 1] = cs[j]; cs[j + 1] = x }
  for (i = 1; i <= nc; i++) {
    c = cs[i]; d = c SUBSEP "direct"
    for (t = 1; t <= nt; t++) {
      k = c SUBSEP ts[t]
      r = median(rps[k]); l = median(p50[k])
      ratio = "–"; added = "–"
      if (ts[t] != "direct") { ratio = sprintf("%.2f×", r / median(rps[d])); added = sprintf("%d", l - median(p50[d])) }
      printf "| %d | %s | %.0f | %d | %d | %d | %d | %s | %s |\n", c, ts[t], r, l, median(p99[k]), errs[k], wrong[k], ratio, added
    }
  }
  exit bad > 0
}' "$results"
