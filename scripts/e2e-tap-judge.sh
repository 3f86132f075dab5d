#!/usr/bin/env bash
# e2e-tap-judge.sh checks, with the official TypeScript SDK client as judge,
# that the digest the sidecar publishes for an upstream-served skill file it
# learned from a forwarded read is the digest of what the client took from
# that read, or that nothing is published.
#
# For each mode of test/e2e/crafted-read-upstream.mjs (a raw upstream that
# crafts the SSE reply: a byte order mark, ids spelled "1", " 1 " or 1.0,
# events of another type, a padded type, two replies, duplicate keys, data
# split across lines) the sidecar runs in front of it with
# test/e2e/testdata/tap-plugin and --auth-gate none; test/e2e/ts-read.mjs
# reads skill://tapped/data.txt through the sidecar with
# @modelcontextprotocol/sdk (the version test/e2e/package-lock.json pins;
# the inspector depends on it) and prints the sha256 of the text it took.
# The upstream refuses the sidecar's own reads (-32603), so skills/get
# publishes the plugin folder's digest unless the forwarded read published
# the upstream's.
#
#   ok  published digest == the client's, or nothing published
#   ok  in the modes every client reads alike (one reply, a BOM before one
#       reply, id 1.0, a notification first, an event of another type then
#       the reply, data split across lines) a digest is published
#
# Usage: scripts/e2e-tap-judge.sh. E2E_SIDECAR_BIN=PATH judges another
# build (an older one, to watch it fail). Prints a row per mode and
# "tap-judge: N passed, N failed"; exits 1 when a check failed, 2 on a setup
# error. Loopback only; every process it starts is stopped by pid.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/e2e-lib.sh
source scripts/e2e-lib.sh
E2E_NAME=e2e-tap-judge
e2e_require_tools
work=$(mktemp -d -t e2e-tap-judge.XXXXXX)
trap 'e2e_cleanup; if [[ ${E2E_KEEP:-} == 1 ]]; then e2e_log "kept $work"; else rm -rf "$work"; fi' EXIT
trap 'exit 130' INT TERM
bin=${E2E_SIDECAR_BIN:-$work/skills-sidecar}
if [[ -z ${E2E_SIDECAR_BIN:-} ]]; then
  go build -o "$bin" ./cmd/skills-sidecar || e2e_die "cannot build skills-sidecar"
fi
plugin=test/e2e/testdata/tap-plugin
uri=skill://tapped/data.txt

# published URL prints the digest skills/get publishes for $uri, or "none"
# when that is the plugin folder's (nothing learned from the read).
plugin_digest=sha256:$(sha256sum "$plugin/skills/tapped/data.txt" | cut -d' ' -f1)
published() {
  curl -sS -m 30 -X POST "$1" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: skills/get' \
    -d '{"jsonrpc":"2.0","id":1,"method":"skills/get","params":{"uri":"skill://tapped/SKILL.md","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}' |
    jq -r --arg u "$uri" --arg p "$plugin_digest" '(.result.skill.resources[]? | select(.uri == $u) | .digest) // "none" | if . == $p then "none" else . end'
}

# MODE must-publish
modes=(
  "one yes" "bom-one yes" "bom-two no" "id-float yes" "id-float-then no" "id-string-then no"
  "id-padded-string-then no" "type-other-then yes" "type-other-alone no" "type-padded-then no"
  "dup-id no" "dup-text no" "split-lines yes" "two-equal no"
)
E2E_SIDECAR_EXTRA=(--auth-gate none)
for row in "${modes[@]}"; do
  read -r mode must <<<"$row"
  free_port port
  e2e_spawn "$work/$mode-upstream.log" "$E2E_NODE" test/e2e/crafted-read-upstream.mjs "$port" "$mode"
  up_pid=$E2E_LAST_PID
  e2e_wait_http "http://127.0.0.1:$port/mcp" "$up_pid" 20 "$work/$mode-upstream.log" || e2e_die "crafted-read-upstream did not start"
  e2e_start_sidecar "$bin" "http://127.0.0.1:$port/mcp" "$work/$mode-sidecar.log" "$plugin"
  took=$(E2E_NPM_DIR="$E2E_NPM_DIR" timeout 60 "$E2E_NODE" test/e2e/ts-read.mjs "$E2E_SIDECAR_URL" "$uri" || echo none)
  pub=$(published "$E2E_SIDECAR_URL")
  if [[ $pub != none && $pub != "$took" ]]; then
    e2e_row FAIL "$mode: published $pub, the TypeScript client took $took"
  elif [[ $must == yes && $pub == none ]]; then
    e2e_row FAIL "$mode: nothing published; the TypeScript client took $took"
  else
    e2e_row ok "$mode: published $pub, the TypeScript client took $took"
  fi
  e2e_stop "$E2E_SIDECAR_PID"
  e2e_stop "$up_pid"
done
e2e_tally tap-judge
