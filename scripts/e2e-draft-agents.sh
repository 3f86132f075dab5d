#!/usr/bin/env bash
# shellcheck disable=SC2016 # single-quoted jq programs use jq's own $variables
# e2e-draft-agents.sh judges `skills-sidecar verify` and the sidecar against a
# peer they did not shape: test/e2e/draft-agents-server.mjs, an agents server
# written from the Agents WG draft's wire types and examples.
#   1. verify passes the clean peer, on both eras (exit 0);
#   2. verify fails each of the peer's deliberate faults (exit 1, and the
#      check named below fails);
#   3. the sidecar, with test/e2e/testdata/draft-agents-plugin (the same two
#      agents) in front of the clean peer, answers agents/list, agents/get and
#      an unknown agents/get exactly as the peer does, member by member (its
#      own _meta aside), on both eras; and verify passes the sidecar.
# Prints one row per case and "N passed, N failed"; exits 1 when a case
# failed, 2 on a setup error.
#
# Usage: scripts/e2e-draft-agents.sh
# Environment: E2E_TOOLS_DIR (see install-e2e-tools.sh; only the pinned Node
# is used); E2E_SIDECAR_BIN, a skills-sidecar binary to judge instead of
# building bin/skills-sidecar (for example an older build, to see it fail).
set -euo pipefail

E2E_NAME=e2e-draft-agents
# shellcheck source=scripts/e2e-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/e2e-lib.sh"

PEER_JS=$E2E_ROOT/test/e2e/draft-agents-server.mjs
PLUGIN=$E2E_ROOT/test/e2e/testdata/draft-agents-plugin
BIN=${E2E_SIDECAR_BIN:-$E2E_ROOT/bin/skills-sidecar}

# FAULTS: fault name, then the verify check that must fail.
FAULTS=(
  "agent-object agents.get"
  "agent-other-name agents.get"
  "tool-differs agent.tools"
  "tool-unlisted agent.tools"
  "no-tools agent.tools"
  "bad-role agent.details"
  "vision-string agent.details"
  "instructions-array agent.details"
  "no-ttl agents.get"
  "no-cache-scope agents.get"
  "no-result-type agents.get"
  "unknown-no-reason agents.get.unknown"
  "unknown-wrong-code agents.get.unknown"
  "card-no-capabilities agent.shape"
)


# start_peer LOG [FAULT] starts the peer on a free port; sets PEER_URL, PEER_PID.
start_peer() {
  local log=$1 fault=${2:-} port
  free_port port
  e2e_spawn "$log" "$E2E_NODE" "$PEER_JS" "$port" ${fault:+"$fault"}
  PEER_PID=$E2E_LAST_PID
  PEER_URL=http://127.0.0.1:$port/mcp
  e2e_wait_http "$PEER_URL" "$PEER_PID" 20 "$log" || e2e_die "draft-agents-server did not start"
}

# rpc URL ERA METHOD PARAMS prints the JSON-RPC reply of one request.
rpc() {
  local url=$1 era=$2 method=$3 params=$4 hdr=()
  if [[ $era == modern ]]; then
    params=$(jq -c '. + {_meta: {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientCapabilities": {}}}' <<<"$params")
    hdr=(-H 'MCP-Protocol-Version: 2026-07-28' -H "Mcp-Method: $method")
  else
    hdr=(-H 'MCP-Protocol-Version: 2025-11-25')
  fi
  curl -sS -m 10 -X POST "$url" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    "${hdr[@]}" --data "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$method\",\"params\":$params}" |
    sed -n 's/^data: //p; /^{/p' | head -n 1
}

# agents_all URL ERA prints every agents/list card, all pages, sorted by name.
agents_all() {
  local url=$1 era=$2 cursor='' page cards='[]' i
  for ((i = 0; i < 20; i++)); do
    if [[ -n $cursor ]]; then page=$(rpc "$url" "$era" agents/list "{\"cursor\":\"$cursor\"}")
    else page=$(rpc "$url" "$era" agents/list '{}'); fi
    cards=$(jq -c --argjson acc "$cards" '$acc + .result.agents' <<<"$page")
    cursor=$(jq -r '.result.nextCursor // empty' <<<"$page")
    [[ -z $cursor ]] && break
  done
  jq -c 'sort_by(.name)' <<<"$cards"
}

# same WHAT A B records a row: A and B are equal JSON.
same() {
  if [[ "$(jq -S . <<<"$2")" == "$(jq -S . <<<"$3")" ]]; then
    e2e_row ok "$1"
  else
    e2e_row FAIL "$1"
    diff <(jq -S . <<<"$2") <(jq -S . <<<"$3") | sed 's/^/      /' | head -n 20 || true
  fi
}

main() {
  [[ ${1:-} == -h || ${1:-} == --help ]] && { sed -n '3,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; return 0; }
  [[ -x $E2E_NODE ]] || e2e_die "missing $E2E_NODE; run scripts/install-e2e-tools.sh first"
  command -v jq >/dev/null || e2e_die "jq not found"
  if [[ -z ${E2E_SIDECAR_BIN:-} ]]; then
    (cd "$E2E_ROOT" && go build -o bin/skills-sidecar ./cmd/skills-sidecar) || e2e_die "build failed"
  fi
  OUT_DIR=$(mktemp -d -t e2e-draft-agents.XXXXXX)
  trap 'e2e_cleanup; rm -rf "$OUT_DIR"' EXIT
  trap 'exit 130' INT TERM

  local era rc report fault check
  # 1. The clean peer passes.
  start_peer "$OUT_DIR/peer.log"
  for era in modern legacy; do
    rc=0
    "$BIN" verify --era "$era" "$PEER_URL" >"$OUT_DIR/clean-$era.txt" 2>&1 || rc=$?
    if ((rc == 0)); then e2e_row ok "verify passes the draft peer ($era)"
    else e2e_row FAIL "verify passes the draft peer ($era): exit $rc"; sed 's/^/      /' "$OUT_DIR/clean-$era.txt"; fi
  done

  # 3. The sidecar in front of the clean peer agrees with it.
  E2E_SIDECAR_EXTRA=(--cache-ttl-ms 60000) # the peer's ttlMs
  e2e_start_sidecar "$BIN" "$PEER_URL" "$OUT_DIR/sidecar.log" "$PLUGIN"
  local side=$E2E_SIDECAR_URL name params
  for era in modern legacy; do
    same "agents/list: every card the same ($era)" "$(agents_all "$PEER_URL" "$era")" "$(agents_all "$side" "$era")"
    for name in workflow-agent research-agent; do
      params="{\"name\":\"$name\"}"
      same "agents/get $name: every member the same, _meta aside ($era)" \
        "$(rpc "$PEER_URL" "$era" agents/get "$params" | jq -c '.result | del(._meta)')" \
        "$(rpc "$side" "$era" agents/get "$params" | jq -c '.result | del(._meta)')"
    done
    params='{"name":"no-such-agent"}'
    same "agents/get unknown: code, message, data.reason the same ($era)" \
      "$(rpc "$PEER_URL" "$era" agents/get "$params" | jq -c '.error | {code, message, reason: .data.reason}')" \
      "$(rpc "$side" "$era" agents/get "$params" | jq -c '.error | {code, message, reason: .data.reason}')"
    rc=0
    "$BIN" verify --era "$era" "$side" >"$OUT_DIR/side-$era.txt" 2>&1 || rc=$?
    if ((rc == 0)); then e2e_row ok "verify passes the sidecar in front of the peer ($era)"
    else e2e_row FAIL "verify passes the sidecar in front of the peer ($era): exit $rc"; sed 's/^/      /' "$OUT_DIR/side-$era.txt"; fi
  done
  e2e_stop "$PEER_PID"

  # 2. Each fault fails, on the check that exists to catch it.
  local f
  for f in "${FAULTS[@]}"; do
    read -r fault check <<<"$f"
    start_peer "$OUT_DIR/peer-$fault.log" "$fault"
    rc=0
    report=$("$BIN" verify --format json "$PEER_URL" 2>/dev/null) || rc=$?
    e2e_stop "$PEER_PID"
    if ((rc == 1)) && jq -e --arg c "$check" '[.server[], (.agents[]?.checks[]?)] | any(.name == $c and .status == "fail")' \
      <<<"$report" >/dev/null; then
      e2e_row ok "verify fails fault $fault (exit 1, $check fails)"
    else
      e2e_row FAIL "verify fails fault $fault: exit $rc, want 1 with $check failing"
      jq -c '[.server[], (.agents[]?.checks[]?)] | map(select(.status != "ok"))' <<<"$report" 2>/dev/null | sed 's/^/      /' || true
    fi
  done

  e2e_tally draft-agents
}

main "$@"
