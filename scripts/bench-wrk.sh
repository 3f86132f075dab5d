#!/usr/bin/env bash
# bench-wrk.sh measures forwarding with a general-purpose HTTP load generator
# (wrk, Debian's package), outside the Go harness, against a stateless go-sdk
# upstream directly and through five hops in front of it: a default
# httputil.ReverseProxy (skillsbench bareproxy); a minimal Go relay without
# net/http's server (skillsbench loopproxy, target loop: net.Conn and
# net/http's parsing); the floor for a hop in a Go process (skillsbench
# floorproxy, target floor: a relay that only frames HTTP/1.1 messages, on
# the sidecar's raw sockets, internal/rawsock; neither relay is a usable
# proxy); nginx as a plain hop with one worker (the harness's own
# configuration, skipped when nginx is not installed); and the sidecar. The upstream (skillsbench wrk-upstream) is the demo server as
# `demo-upstream --stateless --json` serves it, plus a `progress` tool whose
# reply streams N events over SSE.
#
# Interleaved, ROUNDS times (default 3), for each concurrency in CONNS
# (default "1 32") and each era in ERAS (default "legacy modern": a
# 2025-11-25 tools/call without a session, and a 2026-07-28 one), it runs
# every target for DURATION (default 5s), in reverse order on even rounds,
# and records wrk's counts and what
# the target's processes spent over the run, from /proc: user+system CPU
# (/proc/PID/stat; nginx: master and workers), read/write-family system
# calls (syscr+syscw of /proc/PID/io) and context switches of every thread
# (/proc/PID/task/*/status), and the heap allocations of the Go
# targets that count them; beside them the CPU of the upstream behind the
# target and of wrk itself, for where the machine's CPU went per call. Then, per era, a progress call streaming
# SSE_EVENTS events (default 50) at SSE_CONNS (default "1"), for the CPU per
# relayed event. Then, unless STRACE=0, an untimed pass of STRACE_DURATION
# (default 2s) per target at the largest concurrency under `strace -c -f`
# (Debian's strace, installed if missing) for all system calls per request;
# and, unless GOBENCH=0, internal/proxy's BenchmarkForward with -benchmem.
#
# Unless SEALED=0, the sealed-session path runs in the same rounds (era
# "sealed"): a modern-only upstream (skillsbench modernonly-upstream), the
# sidecar in front of it serving one legacy session it minted (the state
# sealed in the Mcp-Session-Id), and nginx passing 2026-07-28 calls to the
# same upstream as the plain-hop reference. Unless STDIO=0, the stdio path
# (the sidecar's `serve -- CMD` against supergateway 4.0.0) follows, by the
# harness's stdio scenario with the same DURATION and ROUNDS.
#
# With FLOOR_BUSY=D (a Go duration, e.g. 10us), the floor also runs spinning
# D of CPU per request (skillsbench floorproxy -busy D), as target
# floor-busy: a hop that forwards the floor's bytes at more CPU. A spin of
# D raises the floor's whole cost by several times D (its goroutine holds
# the thread meanwhile; 10us cost 35-58 us a call on 2 cores), so choose D
# by the CPU the tables report for floor-busy against the sidecar's. A table
# sets the sidecar's throughput against it round by round. Off by default.
#
# With CLIENT_HEADERS=node, every call also carries the fields Node's fetch
# adds to an MCP client's own, with an Authorization and trace context
# (User-Agent, Accept-Encoding, Accept-Language, Sec-Fetch-Mode,
# Connection, Authorization, Traceparent: 14 fields with Host on a call,
# where wrk alone sends 7), for what a real client's head costs each hop. The
# upstreams check no credentials, so the Authorization only travels.
#
# With UPSTREAM_GOGC=N, the upstreams run with GOGC=N. At Go's default the
# demo upstream allocates about half a megabyte per call against a heap goal
# held at Go's 4 MB minimum, so it collects garbage every four or five calls
# and most of its CPU goes to that; its cost per call then moves with the
# timing of its collections. A larger N (800) takes that away, so that what
# is left between the hops is their own cost. Unset by default: the
# targets are judged against the upstream as it comes.
#
# Unless NETHTTP=0, the same sidecar binary also runs with net/http's server
# on its listener (http-server: net/http), as target sidecar-nethttp, and a
# table compares the two servers round by round.
#
# It prints each hop's medians with their range over the rounds, the ratios
# to nginx round by round, the floor's ratios to nginx and the sidecar's to
# the floor round by round, and the forwarding-cost targets with PASS, MISS or
# WITHIN-SPREAD (a median that misses by less than the spread). A reply
# counts only if it is HTTP 200 and holds a JSON-RPC result (and, streamed,
# all its events). Loopback only; every process it starts is stopped by pid.
# Numbers are printed, never asserted; the script exits non-zero only when a
# target cannot start or answers a request wrong. docs/performance.md says
# how to read the output.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
duration=${DURATION:-5s}
read -r -a conns_list <<<"${CONNS:-1 32}"
read -r -a eras <<<"${ERAS:-legacy modern}"
read -r -a sse_conns <<<"${SSE_CONNS:-1}"
rounds=${ROUNDS:-3}
sse_events=${SSE_EVENTS:-50}
strace_on=${STRACE:-1}
strace_duration=${STRACE_DURATION:-2s}
gobench_on=${GOBENCH:-1}
sealed_on=${SEALED:-1}
stdio_on=${STDIO:-1}
nethttp_on=${NETHTTP:-1}
floor_busy=${FLOOR_BUSY:-}
client_headers=${CLIENT_HEADERS:-}
[[ -z $client_headers || $client_headers == node ]] || { echo "CLIENT_HEADERS is node or empty, not $client_headers" >&2 && exit 2; }
upstream_env=(env)
[[ -n ${UPSTREAM_GOGC:-} ]] && upstream_env+=("GOGC=$UPSTREAM_GOGC")

# apt_need PKG installs a Debian package whose command is missing.
apt_need() {
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$1" >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$1" >/dev/null; }
}
command -v wrk >/dev/null || apt_need wrk
if [[ $strace_on == 1 ]] && ! command -v strace >/dev/null; then
  apt_need strace || { echo "strace could not be installed: no strace pass" >&2 && strace_on=0; }
fi

# shellcheck source=scripts/e2e-lib.sh
source scripts/e2e-lib.sh # e2e_spawn, e2e_wait_http, e2e_cleanup; free_port
E2E_NAME=bench-wrk
work=$(mktemp -d)
trap 'e2e_cleanup; rm -rf "$work"' EXIT

go build -o "$work/skills-sidecar" ./cmd/skills-sidecar
go build -o "$work/skillsbench" ./bench/cmd/skillsbench
sb=$work/skillsbench

# start TARGET CMD... runs CMD (which listens on ${port[TARGET]}) with its
# output in TARGET's log, and adds TARGET to the targets (those of the
# sealed-session path, named sealed-*, to sealed_targets).
# ${mallocs_url[T]} is where T serves go_memstats_mallocs_total, if it does.
declare -A port pid mallocs_url
targets=()
sealed_targets=()
start() {
  local t=$1
  shift
  e2e_spawn "$work/$t.log" "$@"
  pid[$t]=$E2E_LAST_PID
  if [[ $t == sealed-* ]]; then sealed_targets+=("$t"); else targets+=("$t"); fi
}
# stats_port T picks a second port on which T serves its allocation
# counter, in $stats.
stats_port() {
  local p
  free_port p
  mallocs_url[$1]="http://127.0.0.1:$p/metrics"
  stats=127.0.0.1:$p
}

free_port "port[direct]"
stats_port direct
start direct "${upstream_env[@]}" "$sb" wrk-upstream -listen "127.0.0.1:${port[direct]}" -stats-listen "$stats"
free_port "port[bare]"
stats_port bare
start bare "$sb" bareproxy -listen "127.0.0.1:${port[bare]}" -upstream "http://127.0.0.1:${port[direct]}" -stats-listen "$stats"
free_port "port[loop]"
start loop "$sb" loopproxy -listen "127.0.0.1:${port[loop]}" -upstream "http://127.0.0.1:${port[direct]}"
free_port "port[floor]"
start floor "$sb" floorproxy -listen "127.0.0.1:${port[floor]}" -upstream "http://127.0.0.1:${port[direct]}"
if [[ -n $floor_busy ]]; then
  free_port "port[floor-busy]"
  start floor-busy "$sb" floorproxy -listen "127.0.0.1:${port[floor-busy]}" -upstream "http://127.0.0.1:${port[direct]}" -busy "$floor_busy"
fi

nginx_bin=$(command -v nginx || true)
[[ -z $nginx_bin && -x /usr/sbin/nginx ]] && nginx_bin=/usr/sbin/nginx
if [[ -n $nginx_bin ]]; then
  free_port "port[nginx]"
  mkdir "$work/nginx"
  "$sb" nginx-config -prefix "$work/nginx" -listen "127.0.0.1:${port[nginx]}" \
    -upstream "127.0.0.1:${port[direct]}" >"$work/nginx/nginx.conf"
  grep -q '^worker_processes 1;' "$work/nginx/nginx.conf" || { echo "nginx config without worker_processes 1" >&2 && exit 1; }
  start nginx "$nginx_bin" -p "$work/nginx" -c "$work/nginx/nginx.conf" -e "$work/nginx/error.log"
else
  echo "nginx not installed (apt-get install -y nginx-light): its rows are skipped" >&2
fi

free_port "port[sidecar]"
stats_port sidecar
start sidecar "$work/skills-sidecar" --listen "127.0.0.1:${port[sidecar]}" --metrics-listen "$stats" \
  --annotations-file "" --upstream "http://127.0.0.1:${port[direct]}/mcp" --log-level warn
if [[ $nethttp_on == 1 ]]; then
  free_port "port[sidecar-nethttp]"
  stats_port sidecar-nethttp
  start sidecar-nethttp "$work/skills-sidecar" --listen "127.0.0.1:${port[sidecar-nethttp]}" --metrics-listen "$stats" \
    --annotations-file "" --upstream "http://127.0.0.1:${port[direct]}/mcp" --log-level warn --http-server net/http
fi

# The sealed-session path: a modern-only upstream (it refuses legacy
# requests), the sidecar in front of it serving legacy callers in sessions
# it mints, sealed in their ids, and nginx passing the 2026-07-28 calls the
# sidecar sends it, as the plain-hop reference for the same upstream.
if [[ $sealed_on == 1 ]]; then
  free_port "port[sealed-direct]"
  stats_port sealed-direct
  start sealed-direct "${upstream_env[@]}" "$sb" modernonly-upstream -listen "127.0.0.1:${port[sealed-direct]}" -stats-listen "$stats"
  if [[ -n $nginx_bin ]]; then
    free_port "port[sealed-nginx]"
    mkdir "$work/sealed-nginx"
    "$sb" nginx-config -prefix "$work/sealed-nginx" -listen "127.0.0.1:${port[sealed-nginx]}" \
      -upstream "127.0.0.1:${port[sealed-direct]}" >"$work/sealed-nginx/nginx.conf"
    start sealed-nginx "$nginx_bin" -p "$work/sealed-nginx" -c "$work/sealed-nginx/nginx.conf" -e "$work/sealed-nginx/error.log"
  fi
  free_port "port[sealed-sidecar]"
  stats_port sealed-sidecar
  start sealed-sidecar "$work/skills-sidecar" --listen "127.0.0.1:${port[sealed-sidecar]}" --metrics-listen "$stats" \
    --annotations-file "" --session-keys-file "" --upstream "http://127.0.0.1:${port[sealed-direct]}/mcp" --log-level warn
fi

for t in "${targets[@]}" "${sealed_targets[@]}"; do
  e2e_wait_http "http://127.0.0.1:${port[$t]}/mcp" "${pid[$t]}" 10 "$work/$t.log" || exit 1
done

# lua VERSION KIND [SESSION] writes a wrk script of tools/call. VERSION is
# legacy (2025-11-25, no session unless SESSION is given) or modern
# (2026-07-28 with its _meta and Mcp-Method/Mcp-Name headers). KIND "call"
# calls echo with a JSON reply (ECHO_ARGS its arguments); "sse" calls
# progress for SSE_EVENTS events on an SSE reply and counts them.
lua() {
  local era=$1 kind=$2 session=${3:-} version=2025-11-25 meta='' tool=echo args=${ECHO_ARGS:-'{"text":"hi"}'} extra=''
  if [[ $era == modern ]]; then
    version=2026-07-28
    meta='"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}'
  fi
  if [[ $kind == sse ]]; then
    tool=progress args="{\"n\":$sse_events}" extra='wrk.headers["Bench-Stream"] = "1"'
    meta="\"progressToken\":\"p\"${meta:+,$meta}"
  fi
  [[ -n $session ]] && extra="$extra
wrk.headers[\"Mcp-Session-Id\"] = \"$session\""
  if [[ $client_headers == node ]]; then
    extra="$extra
wrk.headers[\"User-Agent\"] = \"node\"
wrk.headers[\"Accept-Encoding\"] = \"gzip, deflate\"
wrk.headers[\"Accept-Language\"] = \"*\"
wrk.headers[\"Sec-Fetch-Mode\"] = \"cors\"
wrk.headers[\"Connection\"] = \"keep-alive\"
wrk.headers[\"Authorization\"] = \"Bearer bench-token-0123456789abcdef\"
wrk.headers[\"Traceparent\"] = \"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\""
  fi
  cat <<LUA
wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"$tool","arguments":$args,"_meta":{$meta}}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "$version"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "$tool"
$extra
local want = $([[ $kind == sse ]] && echo "$sse_events" || echo 0)

local threads = {}
setup = function(thread) table.insert(threads, thread) end
init = function() bad = 0; events = 0 end
response = function(status, headers, body)
  local n, pos = 0, 1
  while true do
    local s, e = string.find(body, "notifications/progress", pos, true)
    if not s then break end
    n, pos = n + 1, e + 1
  end
  events = events + n
  if status ~= 200 or not string.find(body, '"result"', 1, true) or n ~= want then bad = bad + 1 end
end
done = function(summary, latency, requests)
  local wrong, ev = 0, 0
  for _, t in ipairs(threads) do wrong = wrong + t:get("bad"); ev = ev + t:get("events") end
  io.write(string.format("RESULT requests=%d events=%d seconds=%.3f p50_us=%d p99_us=%d errors=%d wrong=%d\n",
    summary.requests, ev, summary.duration / 1e6, latency:percentile(50), latency:percentile(99),
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, wrong))
end
LUA
}
# script[KIND-ERA-TARGET] is the wrk script each run uses.
declare -A script
for era in "${eras[@]}"; do
  lua "$era" call >"$work/call-$era.lua"
  lua "$era" sse >"$work/sse-$era.lua"
  for t in "${targets[@]}"; do
    script[call-$era-$t]=$work/call-$era.lua
    script[sse-$era-$t]=$work/sse-$era.lua
  done
done
if [[ $sealed_on == 1 ]]; then
  # One legacy session, minted by the sidecar: its initialize, then
  # notifications/initialized, then every call carries the sealed id.
  sid=$(curl -s -m 10 -D - -o /dev/null -X POST "http://127.0.0.1:${port[sealed-sidecar]}/mcp" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-11-25' \
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench-wrk","version":"1"}}}' |
    tr -d '\r' | awk -F': ' 'tolower($1) == "mcp-session-id" { print $2 }')
  [[ -n $sid ]] || { echo "the sidecar minted no session for a legacy caller of the modern-only upstream" >&2 && exit 1; }
  curl -s -m 10 -o /dev/null -X POST "http://127.0.0.1:${port[sealed-sidecar]}/mcp" -H "Mcp-Session-Id: $sid" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-11-25' \
    -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
  ECHO_ARGS='{"message":"hi"}' lua legacy call "$sid" >"$work/call-sealed-sidecar.lua"
  ECHO_ARGS='{"message":"hi"}' lua modern call >"$work/call-sealed-modern.lua"
  script[call-sealed-sealed-sidecar]=$work/call-sealed-sidecar.lua
  script[call-sealed-sealed-direct]=$work/call-sealed-modern.lua
  script[call-sealed-sealed-nginx]=$work/call-sealed-modern.lua
fi

# counters T prints "cpu_us=N syscalls=N switches=N" of T's processes, and "mallocs=N"
# when T counts its allocations.
counters() {
  local m=''
  "$sb" wrk proc "${pid[$1]}" | tr '\n' ' '
  if [[ -n ${mallocs_url[$1]:-} ]]; then
    m=$(curl -s -m 5 "${mallocs_url[$1]}" | awk '$1 == "go_memstats_mallocs_total" { printf "%.0f", $2 }')
    [[ -n $m ]] && printf 'mallocs=%s' "$m"
  fi
  echo
}

# delta BEFORE AFTER prints each key=value of AFTER less the one in BEFORE.
delta() {
  local -A b=()
  local kv out=()
  for kv in $1; do b[${kv%%=*}]=${kv#*=}; done
  for kv in $2; do
    [[ -n ${b[${kv%%=*}]:-} ]] && out+=("${kv%%=*}=$((${kv#*=} - ${b[${kv%%=*}]}))")
  done
  echo "${out[*]}"
}

# upstream_cpu T prints the CPU in microseconds the upstream behind T has
# spent so far, or nothing for an upstream itself.
upstream_cpu() {
  local up=direct out
  [[ $1 == sealed-* ]] && up=sealed-direct
  [[ $1 == "$up" ]] && return
  out=$("$sb" wrk proc "${pid[$up]}")
  out=${out#cpu_us=}
  echo "${out%% *}"
}

# seconds_us M S prints bash's "XmY.YYYs" times as microseconds.
seconds_us() {
  local m=${1%%m*} s=${1#*m}
  s=${s%s}
  awk -v m="$m" -v s="$s" 'BEGIN { printf "%.0f", (m * 60 + s) * 1e6 }'
}

# measure KIND ERA CONNS TARGET ROUND DURATION runs wrk once with TARGET's
# script and appends the record to the results (a sealed-* target under
# its plain name), with the CPU the upstream behind it (up_cpu_us) and wrk
# (load_cpu_us, from the times of the subshell that ran it) spent meanwhile.
results=$work/results
measure() {
  local kind=$1 era=$2 c=$3 t=$4 r=$5 d=$6 threads=2 before after line out up0 up1 extra='' times
  ((c < 2)) && threads=1
  echo "== $kind $era c=$c round $r/$rounds: $t (wrk -t$threads -c$c -d$d)" >&2
  before=$(counters "$t")
  up0=$(upstream_cpu "$t")
  out=$(
    wrk -t"$threads" -c"$c" -d"$d" -s "${script[$kind-$era-$t]}" "http://127.0.0.1:${port[$t]}/mcp" | grep '^RESULT' || true
    times
  )
  up1=$(upstream_cpu "$t")
  after=$(counters "$t")
  line=$(grep '^RESULT' <<<"$out" || true)
  [[ -n $line ]] || { echo "wrk gave no result against $t" >&2 && exit 1; }
  read -r -a times < <(tail -n 1 <<<"$out") # the children's user and system time
  extra="load_cpu_us=$(($(seconds_us "${times[0]}") + $(seconds_us "${times[1]}")))"
  [[ -n $up0 ]] && extra+=" up_cpu_us=$((up1 - up0))"
  echo "$line" >&2
  echo "$kind era=$era c=$c target=${t#sealed-} round=$r ${line#RESULT } $(delta "$before" "$after") $extra" >>"$results"
}

# Rounds run the targets in the order they started, and even rounds in
# the reverse order: the upstream they share drifts in cost over a run (by
# more than a hop's CPU at Go's default collector), and a fixed order would
# lay that drift on the later targets (docs/performance.md, "The upstream's
# cost behind each hop, alternated").
for ((r = 1; r <= rounds; r++)); do
  order=("${targets[@]}") sealed_order=("${sealed_targets[@]}")
  if ((r % 2 == 0)); then
    order=() sealed_order=()
    for ((i = ${#targets[@]} - 1; i >= 0; i--)); do order+=("${targets[i]}"); done
    for ((i = ${#sealed_targets[@]} - 1; i >= 0; i--)); do sealed_order+=("${sealed_targets[i]}"); done
  fi
  for c in "${conns_list[@]}"; do
    for era in "${eras[@]}"; do
      for t in "${order[@]}"; do measure call "$era" "$c" "$t" "$r" "$duration"; done
    done
    for t in "${sealed_order[@]}"; do measure call sealed "$c" "$t" "$r" "$duration"; done
  done
  for c in "${sse_conns[@]}"; do
    for era in "${eras[@]}"; do
      for t in "${order[@]}"; do measure sse "$era" "$c" "$t" "$r" "$duration"; done
    done
  done
done

# The strace pass: all system calls of each target's processes (threads
# and nginx's workers followed) while wrk runs, outside the timed rounds as
# strace slows what it traces. Bounded by STRACE_DURATION per target.
if [[ $strace_on == 1 ]]; then
  c=${conns_list[-1]}
  threads=2
  ((c < 2)) && threads=1
  for era in "${eras[@]}"; do
    for t in "${targets[@]}"; do
      pids=(-p "${pid[$t]}")
      while read -r child; do pids+=(-p "$child"); done < <(pgrep -P "${pid[$t]}" || true)
      out=$work/strace-$t-$era.txt
      strace -c -f -o "$out" "${pids[@]}" 2>/dev/null &
      spid=$!
      sleep 0.5 # attached
      echo "== strace $era c=$c: $t (wrk -t$threads -c$c -d$strace_duration)" >&2
      line=$(wrk -t"$threads" -c"$c" -d"$strace_duration" -s "${script[call-$era-$t]}" "http://127.0.0.1:${port[$t]}/mcp" | grep '^RESULT')
      kill -INT "$spid"
      wait "$spid" || true
      requests=${line#*requests=}
      echo "strace era=$era c=$c target=$t requests=${requests%% *} $("$sb" wrk strace "$out")" >>"$results"
    done
  done
fi

# The Go benchmark: allocations per forwarded call, client, hop and
# upstream in one process (the sidecar's own is its row less direct's).
if [[ $gobench_on == 1 ]]; then
  echo "== go test -bench BenchmarkForward/tools-call -benchmem ./internal/proxy" >&2
  if out=$(go test -run '^$' -bench 'BenchmarkForward/tools-call' -benchmem -benchtime "${BENCHTIME:-3000x}" ./internal/proxy 2>&1); then
    "$sb" wrk gobench <<<"$out" >>"$results" || echo "no allocs/op in the benchmark's output" >&2
  else
    echo "BenchmarkForward failed; its output:" >&2
    echo "$out" >&2
  fi
fi

# RESULTS=FILE keeps the raw records (one line per run, every counter
# unrounded) for checking a printed median or verdict later.
if [[ -n ${RESULTS:-} ]]; then cp "$results" "$RESULTS"; fi
"$sb" wrk report "$results"

# The stdio path: the sidecar serving a stdio server (`serve -- CMD`)
# against supergateway, one legacy session (so one server process) per
# client, which wrk's fixed request cannot drive; the harness's stdio
# scenario measures it with the same duration and rounds. Supergateway
# comes from scripts/install-e2e-tools.sh; without it its rows say so.
if [[ $stdio_on == 1 ]]; then
  echo
  echo "### The stdio path (skillsbench -scenarios stdio -duration $duration -repeats $rounds)"
  echo
  "$sb" -q -scenarios stdio -sidecar "$work/skills-sidecar" -duration "$duration" -warmup 500ms -repeats "$rounds" ||
    echo "the stdio scenario failed (exit $?)" >&2
fi
# A target that could not answer a request right fails the run.
awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^(errors|wrong)=[1-9]/) bad = 1 } END { exit bad }' "$results" || {
  echo "some replies failed: see the errors and wrong columns" >&2
  exit 1
}
