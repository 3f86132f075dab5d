#!/usr/bin/env bash
# bench-wrk.sh measures tools/call with a general-purpose HTTP load generator
# (wrk, Debian's package), outside the Go harness: the stateless go-sdk demo
# upstream directly, and the same upstream behind the sidecar, each for
# DURATION (default 10s) with CONNS connections (default 32) on 2 threads.
# Loopback only; every process it starts is stopped by pid. Prints wrk's
# summary for both and the throughput ratio. Numbers are printed, never
# asserted.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
duration=${DURATION:-10s}
conns=${CONNS:-32}
command -v wrk >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q wrk >/dev/null

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  local p
  for _ in $(seq 50); do
    p=$((20000 + RANDOM % 40000))
    if ! (: </dev/tcp/127.0.0.1/"$p") 2>/dev/null; then echo "$p"; return 0; fi
  done
  return 1
}
wait_up() {
  for _ in $(seq 100); do
    curl -s -o /dev/null -m 1 "$1" && return 0
    sleep 0.1
  done
  echo "$1 did not come up" >&2
  return 1
}

go build -o "$work/demo-upstream" ./cmd/demo-upstream
go build -o "$work/skills-sidecar" ./cmd/skills-sidecar
up=$(free_port)
"$work/demo-upstream" --listen "127.0.0.1:$up" --stateless --json >/dev/null 2>&1 &
pids+=($!)
side=$(free_port)
"$work/skills-sidecar" --listen "127.0.0.1:$side" --metrics-listen "" --annotations-file "" \
  --upstream "http://127.0.0.1:$up/mcp" --log-level warn >/dev/null 2>"$work/sidecar.log" &
pids+=($!)
wait_up "http://127.0.0.1:$up/mcp"
wait_up "http://127.0.0.1:$side/mcp"

cat >"$work/call.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "echo"
done = function(summary, latency, requests)
  io.write(string.format("RESULT rps=%.0f p50_us=%d p99_us=%d errors=%d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50), latency:percentile(99),
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
LUA

declare -A rps
for target in direct sidecar; do
  port=$up
  [[ $target == sidecar ]] && port=$side
  echo "== $target (wrk -t2 -c$conns -d$duration)"
  wrk -t2 -c"$conns" -d"$duration" --latency -s "$work/call.lua" "http://127.0.0.1:$port/mcp" | tee "$work/$target.txt" | grep -E "Latency|Req/Sec|requests in|RESULT|Non-2xx"
  rps[$target]=$(sed -n 's/^RESULT rps=\([0-9]*\).*/\1/p' "$work/$target.txt")
done
awk -v d="${rps[direct]}" -v s="${rps[sidecar]}" 'BEGIN { printf "sidecar/direct throughput: %.2f\n", s / d }'
