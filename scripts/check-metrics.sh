#!/usr/bin/env bash
# check-metrics.sh runs Prometheus' own linter on a real scrape: it starts
# the sidecar on its embedded default (demo upstream, example plugin) on
# free loopback ports, sends a little traffic through it (initialize,
# tools/call, skills/list, a refused request), scrapes /metrics and runs
# `promtool check metrics` on it. It first shows the check can fail by
# feeding promtool a deliberately broken exposition. Installs Debian's
# prometheus package (for promtool) when promtool is missing.
# Prints "metrics: N passed, N failed"; exit 1 when a check failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v promtool >/dev/null; then
  echo "installing promtool (Debian package prometheus)"
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus >/dev/null 2>&1; then
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus >/dev/null
  fi
fi

work=$(mktemp -d)
pid=
cleanup() {
  if [[ -n $pid ]]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

passed=0
failed=0
check() {
  local name=$1
  shift
  if "$@"; then
    passed=$((passed + 1)); echo "ok    $name"
  else
    failed=$((failed + 1)); echo "FAIL  $name"
  fi
}

# shellcheck source=scripts/ports.sh
source scripts/ports.sh

# The checker must refuse a broken exposition: a counter without _total and
# a metric with no HELP.
printf '# TYPE bad_requests counter\nbad_requests 1\nno_help_gauge 2\n' >"$work/broken.prom"
refuses_broken() { ! promtool check metrics <"$work/broken.prom" >/dev/null 2>&1; }
check "promtool refuses a broken exposition" refuses_broken

go build -o "$work/skills-sidecar" ./cmd/skills-sidecar
free_port port
free_port mport
"$work/skills-sidecar" --listen "127.0.0.1:$port" --metrics-listen "127.0.0.1:$mport" --annotations-file "" \
  >"$work/sidecar.out" 2>"$work/sidecar.log" </dev/null &
pid=$!
for _ in $(seq 100); do
  curl -s -o /dev/null -m 1 "http://127.0.0.1:$mport/healthz" && break
  sleep 0.1
done

mcp() {
  curl -s -m 10 -D "$work/headers" "http://127.0.0.1:$port/mcp" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' "$@"
}
mcp -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"check","version":"1"}}}' >/dev/null
sid=$(tr -d '\r' <"$work/headers" | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')
mcp -H "Mcp-Session-Id: $sid" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' >/dev/null
mcp -H "Mcp-Session-Id: $sid" -d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}' >/dev/null
mcp -H "Mcp-Session-Id: $sid" -d '{"jsonrpc":"2.0","id":3,"method":"skills/list","params":{}}' >/dev/null
mcp -d 'not json' >/dev/null

curl -s -m 10 "http://127.0.0.1:$mport/metrics" >"$work/scrape.prom"
lint_scrape() { promtool check metrics <"$work/scrape.prom"; }
check "promtool check metrics on a real scrape" lint_scrape
has() { grep -q "$1" "$work/scrape.prom"; }
check "the scrape counts the tools/call" has 'skills_sidecar_requests_total{method="tools/call",outcome="2xx",route="upstream"} 1'
check "the scrape counts the local skills/list" has 'skills_sidecar_requests_total{method="skills/list",outcome="2xx",route="local"} 1'
check "the scrape counts the declaration" has 'skills_sidecar_declarations_injected_total{era="legacy"} 1'

echo "metrics: $passed passed, $failed failed"
((failed == 0))
