#!/usr/bin/env bash
# e2e-upstream-files.sh checks, with a verifier the project did not write,
# that the sidecar publishes digests of the bytes the upstream serves when
# the upstream serves catalog files itself (docs/design.md, decision 2).
#
# The upstream is cmd/demo-upstream --skill-files (go-sdk, stateless): it
# lists every SKILL.md of examples/plugin in resources/list, serves each
# skill's examples/ files through a URI template (resources/templates/list),
# and rewrites both to CRLF, so its bytes differ from the plugin folder's.
# The sidecar runs in front of it with examples/plugin and its defaults.
#
#   ok  the MCP Inspector's --verify passes in both eras (every file read
#       back matches the published digest, size and frontmatter)
#   ok  skills/list publishes sha256 of the CRLF bytes for the listed and
#       the templated files, and of the plugin's bytes for a file the
#       upstream does not serve; digests computed here from the plugin
#       folder with sed and sha256sum, not taken from the sidecar
#   ok  resources/directory/read and resources/list state the size
#       skills/list states (the CRLF bytes' for the upstream's files; sizes
#       counted here with sed and wc), and resources/list holds each URI once
#   ok  with --upstream-files off the same digest check fails (the sidecar
#       then publishes the plugin's bytes): the check can fail
#   ok  an upstream whose bytes change after the first read (--drift) makes
#       the Inspector's --verify fail with a mismatch: the verifier can fail
#
# Usage: scripts/e2e-upstream-files.sh. Prints a row per check and
# "upstream-files: N passed, N failed"; exits 1 when a check failed, 2 on a
# setup error. Loopback only; every process it starts is stopped by pid.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/e2e-lib.sh
source scripts/e2e-lib.sh
E2E_NAME=e2e-upstream-files
e2e_require_tools
work=$(mktemp -d -t e2e-upstream-files.XXXXXX)
trap 'e2e_cleanup; if [[ ${E2E_KEEP:-} == 1 ]]; then e2e_log "kept $work"; else rm -rf "$work"; fi' EXIT
trap 'exit 130' INT TERM
go build -o "$work/demo-upstream" ./cmd/demo-upstream || e2e_die "cannot build demo-upstream"
go build -o "$work/skills-sidecar" ./cmd/skills-sidecar || e2e_die "cannot build skills-sidecar"
plugin=examples/plugin


# stack NAME [UPSTREAM FLAGS...] starts the upstream serving the plugin's
# files and the sidecar in front of it (E2E_SIDECAR_EXTRA: its flags).
stack() {
  local name=$1 port
  shift
  free_port port
  e2e_spawn "$work/$name-upstream.log" "$work/demo-upstream" --listen "127.0.0.1:$port" --stateless \
    --skill-files "$plugin/skills" "$@"
  e2e_wait_http "http://127.0.0.1:$port/mcp" "$E2E_LAST_PID" 20 "$work/$name-upstream.log" ||
    e2e_die "demo-upstream --skill-files did not start"
  e2e_start_sidecar "$work/skills-sidecar" "http://127.0.0.1:$port/mcp" "$work/$name-sidecar.log" "$plugin"
}

# published URL FILE_URI prints the digest skills/list (all pages, the
# 2026-07-28 wire) publishes for FILE_URI.
published() {
  local url=$1 uri=$2 cursor='' page params
  for page in $(seq 1 20); do
    params='{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}'
    [[ -n $cursor ]] && params=$(jq -c --arg c "$cursor" '. + {cursor: $c}' <<<"$params")
    page=$(curl -sS -m 30 -X POST "$url" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
      -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: skills/list' \
      --data "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"skills/list\",\"params\":$params}" | sed -n 's/^data: //p; /^{/p' | head -n 1)
    jq -r --arg u "$uri" '.result.skills[]?.resources | arrays | .[] | select(.uri == $u) | .digest' <<<"$page"
    cursor=$(jq -r '.result.nextCursor // empty' <<<"$page")
    [[ -z $cursor ]] && return
  done
}

# want_digest FILE [crlf] prints sha256:HEX of the plugin file, as CRLF
# when asked (what the upstream serves).
want_digest() {
  if [[ ${2:-} == crlf ]]; then
    sed 's/\r$//; s/$/\r/' "$plugin/skills/$1" | sha256sum
  else
    sha256sum <"$plugin/skills/$1"
  fi | awk '{print "sha256:" $1}'
}

# digests_of_upstream URL: the listed SKILL.md and a templated example carry
# the CRLF bytes' digests, a file the upstream does not serve the plugin's.
digests_of_upstream() {
  local url=$1 file kind got want bad=0
  for spec in "incident-summary/SKILL.md crlf" "acme/billing/refunds/SKILL.md crlf" \
    "acme/billing/refunds/examples/partial-refund.md crlf" "incident-summary/templates/summary.md plugin"; do
    read -r file kind <<<"$spec"
    got=$(published "$url" "skill://$file")
    want=$(want_digest "$file" "$kind")
    if [[ $got != "$want" ]]; then
      e2e_log "skill://$file: published ${got:-nothing}, want $want ($kind bytes)"
      bad=1
    fi
  done
  return $bad
}

verify() { scripts/e2e-inspector-verify.sh "$1" --era both >"$work/verify-$2.txt" 2>&1; }

# rpc URL METHOD PARAMS prints the result of one 2026-07-28 request.
rpc() {
  local params
  params=$(jq -c '. + {_meta: {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}' <<<"$3")
  curl -sS -m 30 -X POST "$1" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H "Mcp-Method: $2" $(jq -r '.uri // empty | "-HMcp-Name:" + .' <<<"$3") \
    --data "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$2\",\"params\":$params}" | sed -n 's/^data: //p; /^{/p' | head -n 1 | jq -c '.result'
}

# all_pages URL METHOD KEY prints every entry of KEY over all pages, one a line.
all_pages() {
  local cursor='' page n
  for n in $(seq 1 50); do
    page=$(rpc "$1" "$2" "$(jq -nc --arg c "$cursor" 'if $c == "" then {} else {cursor: $c} end')")
    jq -c --arg k "$3" '.[$k][]?' <<<"$page"
    cursor=$(jq -r '.nextCursor // empty' <<<"$page")
    [[ -z $cursor ]] && return
  done
}

# sizes_agree URL: every size the sidecar states for a URI (skills/list,
# resources/directory/read, its own resources/list entries) is the size of
# the bytes served (the CRLF bytes for the files the upstream serves), and
# resources/list holds each URI once.
sizes_agree() {
  local url=$1 bad=0 stated dup dir file kind want got
  stated=$(all_pages "$url" skills/list skills | jq -c '.resources[]? | {uri, size}')
  all_pages "$url" resources/list resources >"$work/resources.jsonl"
  dup=$(jq -r '.uri' "$work/resources.jsonl" | sort | uniq -d)
  if [[ -n $dup ]]; then
    e2e_log "resources/list lists these URIs more than once: $dup"
    bad=1
  fi
  for dir in skill://incident-summary skill://incident-summary/templates skill://acme/billing/refunds skill://acme/billing/refunds/examples; do
    rpc "$url" resources/directory/read "{\"uri\":\"$dir\"}" | jq -c '.resources[]?'
  done >"$work/dirs.jsonl"
  got=$(jq -rs --argjson s "$(jq -s 'map({(.uri): .size}) | add' <<<"$stated")" \
    '.[] | select(.size != null and $s[.uri] != null and .size != $s[.uri]) | "\(.uri) \(.size) (skills/list: \($s[.uri]))"' \
    "$work/resources.jsonl" "$work/dirs.jsonl")
  if [[ -n $got ]]; then
    e2e_log "sizes that differ from skills/list's: $got"
    bad=1
  fi
  for spec in "incident-summary/SKILL.md crlf" "acme/billing/refunds/examples/partial-refund.md crlf" "incident-summary/templates/summary.md plugin"; do
    read -r file kind <<<"$spec"
    if [[ $kind == crlf ]]; then want=$(sed 's/\r$//; s/$/\r/' "$plugin/skills/$file" | wc -c); else want=$(wc -c <"$plugin/skills/$file"); fi
    got=$(jq -r --arg u "skill://$file" 'select(.uri == $u) | .size' <<<"$stated")
    if [[ $got != "$want" ]]; then
      e2e_log "skills/list states ${got:-no} size for skill://$file, want $want ($kind bytes)"
      bad=1
    fi
  done
  return $bad
}

# 1. The honest upstream, the sidecar's defaults.
stack honest
if verify "$E2E_SIDECAR_URL" honest; then
  e2e_row ok "the Inspector's --verify passes in both eras in front of an upstream serving CRLF files"
else
  e2e_row FAIL "the Inspector's --verify in front of an upstream serving CRLF files (output below)"
  cat "$work/verify-honest.txt"
fi
if digests_of_upstream "$E2E_SIDECAR_URL"; then
  e2e_row ok "skills/list publishes the upstream's CRLF bytes' digests (listed and templated), the plugin's elsewhere"
else
  e2e_row FAIL "skills/list's digests are not those of the bytes the upstream serves"
fi
if sizes_agree "$E2E_SIDECAR_URL"; then
  e2e_row ok "skills/list, resources/directory/read and resources/list state the served sizes; resources/list lists each URI once"
else
  e2e_row FAIL "the sizes the sidecar states for a URI differ, or resources/list repeats a URI"
fi
e2e_cleanup
E2E_PIDS=()

# 2. The same check must fail when the sidecar ignores the upstream.
E2E_SIDECAR_EXTRA=(--upstream-files off)
stack off
unset E2E_SIDECAR_EXTRA
if digests_of_upstream "$E2E_SIDECAR_URL" 2>/dev/null; then
  e2e_row FAIL "with --upstream-files off the digest check still passed: it cannot fail"
else
  e2e_row ok "with --upstream-files off the digest check fails (plugin bytes published)"
fi
e2e_cleanup
E2E_PIDS=()

# 3. An upstream whose bytes change after they were read must fail --verify.
stack drift --drift
rc=0
verify "$E2E_SIDECAR_URL" drift || rc=$?
if ((rc == 1)) && grep -q mismatch "$work/verify-drift.txt"; then
  e2e_row ok "the Inspector's --verify fails (a digest mismatch) when the upstream's bytes change under the published digest"
else
  e2e_row FAIL "the Inspector's --verify exited $rc, want 1 with a mismatch, though the upstream's bytes changed after the first read"
  cat "$work/verify-drift.txt"
fi

e2e_tally upstream-files
