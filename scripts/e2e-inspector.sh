#!/usr/bin/env bash
# shellcheck disable=SC2016 # single-quoted jq programs use jq's own $variables
# e2e-inspector.sh: the sidecar must be invisible to a real MCP client for
# everything it forwards. For each upstream it starts that MCP server on a free
# loopback port, starts bin/skills-sidecar in front of it, and makes the same
# inspector CLI calls (@modelcontextprotocol/inspector --cli) once directly and
# once through the sidecar. The two JSON outputs of every call must be equal
# after the normalisations listed below. Prints one line per call and
# "N passed, N failed" at the end; exits 1 when any call failed, 2 on a setup
# error.
#
# Upstreams (--upstream, default both):
#   everything  @modelcontextprotocol/server-everything, legacy era only:
#               --protocol-era legacy, auto and modern. Directly auto falls
#               back to legacy and modern fails; through the sidecar the era
#               bridge answers server/discover, so auto and modern
#               negotiate 2026-07-28. Those two are compared with the direct
#               call made with --protocol-era legacy, after JQ_ERA_BRIDGED.
#   modern      test/e2e/modern-upstream.mjs (TypeScript SDK v2), dual era:
#               --protocol-era legacy, auto (negotiates 2026-07-28) and modern.
# Calls: initialize, tools/list, resources/list, resources/read of a text and a
# blob resource, tools/call echo and get-sum; with server-everything also
# resources/templates/list and prompts/list.
#
# Usage:
#   scripts/e2e-inspector.sh [--upstream everything|modern|both]
#                            [--sidecar-bin PATH] [--plugin-dir DIR]
#   scripts/e2e-inspector.sh --upstream U --sidecar-url URL|upstream
#       use a sidecar that is already running at URL instead of starting one
#       (it must forward to the upstream this script starts, so this is mostly
#       useful as "upstream": compare the upstream with itself, a dry run of
#       the harness that skips the declaration checks)
#   scripts/e2e-inspector.sh --self-test
#       run the comparison on fixed pairs of outputs, some deliberately
#       different, and show that each difference is caught
# Environment: E2E_TOOLS_DIR (see install-e2e-tools.sh), E2E_CALL_TIMEOUT
# (seconds per inspector call, default 60), E2E_START_TIMEOUT (seconds to wait
# for each server, default 30), E2E_KEEP=1 keeps the work directory.
#
# Inspector CLI findings (2.12.0):
#   mcp-inspector --cli URL --method M [--format json] [--protocol-era E]
#     --transport http is inferred from a URL ending in /mcp.
#     --protocol-era legacy (default for an ad-hoc URL): initialize handshake.
#     --protocol-era modern: 2026-07-28 only; against a legacy-only server it
#       fails with "Version negotiation failed ... via server/discover".
#     --protocol-era auto: probes server/discover, falls back to initialize.
#     --format json prints {"result": ...} on stdout, or {"error": {code,
#       message}} on stdout for a failed call; no banners.
#     tools/call: --tool-name N and --tool-arg k=v ... (values coerced) or
#       --tool-args-json '{"k":...}' (verbatim). resources/read: --uri U.
#     --method initialize prints {serverInfo, protocolVersion, capabilities,
#       instructions} as the client saw them.
#     It writes state under $HOME/.mcp-inspector, so HOME points at a scratch
#     directory here.
#   Exit codes: 0 ok; 1 usage or a JSON-RPC error (e.g. unknown resource,
#     unknown method, skills extension not declared); 2 no MCP App (--app-info);
#     3 auth required; 4 unreachable; 5 tool error (also unknown tool);
#     6 unportable tool schema (--strict); 7 --verify found a SEP-2640
#     violation (digest/size mismatch ...); 8 --verify could not check the whole
#     catalog within its read bounds; 9 --verify --require-digests met a skill
#     with resources "dynamic".
#
# Normalisations (fields that legitimately differ), applied to both sides:
#   - resources/read of demo://resource/dynamic/blob/N: server-everything
#     builds the blob from the wall-clock time of the read ("... created at
#     5:58:58 AM", base64), so the two reads differ by the clock; the blob is
#     decoded and the time masked. (The static text document has no such field.)
#   - resources/list: the sidecar appends its own skill:// resources on the
#     last page when it has a plugin folder; entries with a skill:// URI are
#     dropped before comparing.
#   - initialize: the sidecar adds capabilities.extensions
#     io.modelcontextprotocol/skills = {"directoryRead": true} and
#     io.modelcontextprotocol/agents = {"listChanged": true} (and "resources":
#     {"listChanged": true}, or listChanged: true in the upstream's own
#     resources; server-everything declares it already). Those exact values
#     are checked on the sidecar side and then removed; everything else must be
#     equal.
#   - a bridged call (everything, auto and modern) against the direct legacy
#     one: the fields only one era's wire has are removed on both sides
#     (JQ_ERA_BRIDGED): the modern result's resultType, ttlMs, cacheScope and
#     _meta serverInfo, initialize's protocolVersion, and the 2025-11-25 task
#     fields 2026-07-28 moved to the tasks extension (capabilities.tasks,
#     tools[].execution). Every other byte must be equal.
set -euo pipefail

E2E_NAME=e2e-inspector
# shellcheck source=scripts/e2e-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/e2e-lib.sh"

SKILLS_EXT=io.modelcontextprotocol/skills
AGENTS_EXT=io.modelcontextprotocol/agents
TEXT_URI=demo://resource/static/document/architecture.md
BLOB_URI=demo://resource/dynamic/blob/1
MODERN_TEXT_URI=demo://static/readme.md
MODERN_BLOB_URI=demo://static/blob.bin

# Normalising jq filters, by call kind. They are jq programs, not shell: the
# $names in them are jq variables ($skills and $agents come from --arg).
JQ_IDENTITY='.'
JQ_BLOB='if (.result.contents? | type) == "array" then
  .result.contents |= map(if has("blob")
    then .blob |= (@base64d | sub("created at [^\n]*$"; "created at <time>"))
    else . end)
  else . end'
JQ_RESOURCES_LIST='if (.result.resources? | type) == "array" then
  .result.resources |= map(select((.uri // "") | startswith("skill://") | not))
  else . end'
# JQ_INIT_DECLARED raises an error unless the sidecar's declarations are
# exactly the ones docs/protocol.md section 2 names; JQ_INIT_STRIP removes them.
JQ_INIT_DECLARED='.result.capabilities.extensions as $e
  | if ($e | type) != "object" then error("capabilities.extensions missing")
    elif $e[$skills] != {"directoryRead": true}
      then error("\($skills) is \($e[$skills] | tojson), want {\"directoryRead\":true}")
    elif $e[$agents] != {"listChanged": true}
      then error("\($agents) is \($e[$agents] | tojson), want {\"listChanged\":true}")
    else . end'
JQ_INIT_STRIP='del(.result.capabilities.extensions[$skills, $agents])
  | if .result.capabilities.extensions == {} then del(.result.capabilities.extensions) else . end'

JQ_ERA_BRIDGED='if (.result? | type) == "object" then
    .result |= (del(.resultType, .ttlMs, .cacheScope, .protocolVersion, .capabilities.tasks)
      | del(._meta["io.modelcontextprotocol/serverInfo"])
      | if ._meta == {} then del(._meta) else . end
      | if (.tools? | type) == "array" then .tools |= map(del(.execution)) else . end)
  else . end'

# jqx runs jq with the extension identifiers bound to $skills and $agents.
jqx() { jq --arg skills "$SKILLS_EXT" --arg agents "$AGENTS_EXT" "$@"; }

PASSED=0
FAILED=0

# record NAME VERDICT [MESSAGE] counts and prints one result line.
record() {
  if [[ $2 == ok ]]; then
    PASSED=$((PASSED + 1))
    printf 'PASS %s\n' "$1"
  else
    FAILED=$((FAILED + 1))
    printf 'FAIL %s: %s\n' "$1" "$3"
  fi
}

# compare_json NAME FILTER DIRECT_FILE SIDECAR_FILE [SIDECAR_CHECK] returns 0
# when both files hold JSON that is equal after FILTER (and after sorting keys),
# and SIDECAR_CHECK (a jq program that raises an error when the sidecar side
# is wrong) passes. Otherwise it prints why on stdout, a diff included, and
# returns 1.
compare_json() {
  local name=$1 filter=$2 direct=$3 sidecar=$4 check=${5:-} a b err
  if ! a=$(jqx -S "$filter" "$direct" 2>&1); then
    printf '%s: direct output is not the expected JSON: %s\n' "$name" "$(head -c 300 "$direct")"
    return 1
  fi
  if [[ -n $check ]] && ! err=$(jqx "$check" "$sidecar" 2>&1 >/dev/null); then
    printf '%s: sidecar output fails its check: %s\n' "$name" "$err"
    return 1
  fi
  if ! b=$(jqx -S "$filter" "$sidecar" 2>&1); then
    printf '%s: sidecar output is not the expected JSON: %s\n' "$name" "$(head -c 300 "$sidecar")"
    return 1
  fi
  if [[ $a != "$b" ]]; then
    printf '%s: outputs differ (- direct, + through sidecar):\n' "$name"
    diff -u <(printf '%s\n' "$a") <(printf '%s\n' "$b") | tail -n +3 | head -n 40
    return 1
  fi
  return 0
}

# run_pair NAME FILTER CHECK ERA ARGS... makes one inspector call directly and
# through the sidecar, and records the comparison.
run_pair() {
  local name=$1 filter=$2 check=$3 era=$4 rc_d=0 rc_s=0 msg
  shift 4
  local base=$WORK/${name//[^A-Za-z0-9_.-]/_}
  # The direct call runs in the background while the sidecar call runs, which
  # halves the wall time. It is `timeout` itself that is started and recorded,
  # so the EXIT trap's TERM reaches it and timeout relays it to the inspector.
  local direct_pid
  # DIRECT_ERA, when set, is the era of the direct call (a bridged pair).
  timeout -k 5 "${E2E_CALL_TIMEOUT:-60}" "$E2E_NODE" "$E2E_INSPECTOR_JS" --cli "$DIRECT_URL" \
    --format json --protocol-era "${DIRECT_ERA:-$era}" "$@" >"$base.direct.json" 2>"$base.direct.err" &
  direct_pid=$!
  E2E_PIDS+=("$direct_pid")
  e2e_inspector "$SIDECAR_URL" --format json --protocol-era "$era" "$@" >"$base.sidecar.json" 2>"$base.sidecar.err" || rc_s=$?
  wait "$direct_pid" || rc_d=$?
  unset 'E2E_PIDS[-1]'
  if ((rc_d != 0)); then
    record "$name" fail "direct call exited $rc_d: $(head -c 300 "$base.direct.json") $(head -c 300 "$base.direct.err")"
    return
  fi
  if ((rc_s != 0)); then
    record "$name" fail "call through the sidecar exited $rc_s: $(head -c 300 "$base.sidecar.json") $(head -c 300 "$base.sidecar.err")"
    return
  fi
  [[ -z ${DIRECT_ERA:-} ]] || filter="$filter | $JQ_ERA_BRIDGED"
  if msg=$(compare_json "$name" "$filter" "$base.direct.json" "$base.sidecar.json" "$check"); then
    record "$name" ok
  else
    record "$name" fail "$msg"
  fi
}

# self_case NAME WANT FILTER CHECK DIRECT_JSON SIDECAR_JSON runs compare_json
# on the two literal outputs; WANT is "equal" or "differ".
self_case() {
  local name=$1 want=$2 filter=$3 check=$4 got msg
  printf '%s\n' "$5" >"$WORK/self.direct.json"
  printf '%s\n' "$6" >"$WORK/self.sidecar.json"
  if msg=$(compare_json "$name" "$filter" "$WORK/self.direct.json" "$WORK/self.sidecar.json" "$check"); then
    got=equal
  else
    got=differ
  fi
  if [[ $got == "$want" ]]; then
    record "self-test $name (want $want)" ok
    if [[ -n $msg ]]; then printf '%s\n' "$msg" | sed 's/^/    caught: /'; fi
  else
    record "self-test $name (want $want)" fail "compare_json said $got: $msg"
  fi
}

self_test() {
  local tools='{"result":{"tools":[{"name":"echo","description":"Echoes back the input string","inputSchema":{"type":"object"}}]}}'
  local tools_reordered='{"result":{"tools":[{"inputSchema":{"type":"object"},"description":"Echoes back the input string","name":"echo"}]}}'
  local tools_changed='{"result":{"tools":[{"name":"echo","description":"Echoes back the input","inputSchema":{"type":"object"}}]}}'
  local blob1 blob2 blob3
  blob1=$(jq -cn --arg b "$(printf 'Resource 1: This is a base64 blob created at 5:58:58 AM' | base64 -w0)" \
    '{result:{contents:[{uri:"demo://resource/dynamic/blob/1",mimeType:"text/plain",blob:$b}]}}')
  blob2=$(jq -cn --arg b "$(printf 'Resource 1: This is a base64 blob created at 5:59:03 AM' | base64 -w0)" \
    '{result:{contents:[{uri:"demo://resource/dynamic/blob/1",mimeType:"text/plain",blob:$b}]}}')
  blob3=$(jq -cn --arg b "$(printf 'Resource 2: This is a base64 blob created at 5:59:03 AM' | base64 -w0)" \
    '{result:{contents:[{uri:"demo://resource/dynamic/blob/1",mimeType:"text/plain",blob:$b}]}}')
  local init='{"result":{"serverInfo":{"name":"e","version":"2"},"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"resources":{}}}}'
  local init_ok init_no_agents init_bad_skills init_changed
  init_ok=$(jqx -c '.result.capabilities.extensions = {($skills): {"directoryRead": true}, ($agents): {"listChanged": true}}' <<<"$init")
  init_no_agents=$(jqx -c 'del(.result.capabilities.extensions[$agents])' <<<"$init_ok")
  init_bad_skills=$(jqx -c '.result.capabilities.extensions[$skills] = {"config": {"directoryRead": true}}' <<<"$init_ok")
  init_changed=$(jq -c '.result.capabilities.tools.listChanged = false' <<<"$init_ok")
  local rl='{"result":{"resources":[{"uri":"demo://resource/static/document/a.md","name":"a.md"}]}}'
  local rl_skill rl_lost
  rl_skill=$(jq -c '.result.resources += [{"uri":"skill://git-workflow/SKILL.md","name":"git-workflow"}]' <<<"$rl")
  rl_lost=$(jq -c '.result.resources = [{"uri":"skill://git-workflow/SKILL.md","name":"git-workflow"}]' <<<"$rl")

  self_case same-json-other-key-order equal "$JQ_IDENTITY" '' "$tools" "$tools_reordered"
  self_case tool-description-changed differ "$JQ_IDENTITY" '' "$tools" "$tools_changed"
  self_case sidecar-printed-an-error differ "$JQ_IDENTITY" '' "$tools" '{"error":{"code":"unreachable","message":"fetch failed"}}'
  self_case sidecar-printed-no-json differ "$JQ_IDENTITY" '' "$tools" 'Error: something broke'
  self_case blob-read-at-another-time equal "$JQ_BLOB" '' "$blob1" "$blob2"
  self_case blob-other-content differ "$JQ_BLOB" '' "$blob1" "$blob3"
  self_case resources-list-plus-skills equal "$JQ_RESOURCES_LIST" '' "$rl" "$rl_skill"
  self_case resources-list-lost-upstream-entry differ "$JQ_RESOURCES_LIST" '' "$rl" "$rl_lost"
  self_case initialize-declared equal "$JQ_INIT_STRIP" "$JQ_INIT_DECLARED" "$init" "$init_ok"
  self_case initialize-not-declared differ "$JQ_INIT_STRIP" "$JQ_INIT_DECLARED" "$init" "$init"
  self_case initialize-agents-missing differ "$JQ_INIT_STRIP" "$JQ_INIT_DECLARED" "$init" "$init_no_agents"
  self_case initialize-skills-enveloped differ "$JQ_INIT_STRIP" "$JQ_INIT_DECLARED" "$init" "$init_bad_skills"
  self_case initialize-upstream-capability-changed differ "$JQ_INIT_STRIP" "$JQ_INIT_DECLARED" "$init" "$init_changed"
}

main() {
  local mode=run sidecar_bin=$E2E_ROOT/bin/skills-sidecar sidecar_url='' plugin_dir=''
  local upstreams=(everything modern)
  while (($#)); do
    case $1 in
      --self-test) mode=self-test ;;
      --sidecar-bin) sidecar_bin=${2:?--sidecar-bin needs a path}; shift ;;
      --sidecar-url) sidecar_url=${2:?--sidecar-url needs a URL}; shift ;;
      --plugin-dir) plugin_dir=${2:?--plugin-dir needs a directory}; shift ;;
      --upstream)
        case ${2:-} in
          everything | modern) upstreams=("$2") ;;
          both) upstreams=(everything modern) ;;
          *) e2e_die "--upstream takes everything, modern or both" ;;
        esac
        shift
        ;;
      -h | --help) sed -n '3,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
      *) e2e_die "unknown argument $1 (try --help)" ;;
    esac
    shift
  done
  command -v jq >/dev/null || e2e_die "jq not found (Debian package jq)"

  WORK=$(mktemp -d -t e2e-inspector.XXXXXX)
  trap 'e2e_cleanup; if [[ ${E2E_KEEP:-} == 1 ]]; then e2e_log "kept $WORK"; else rm -rf "$WORK"; fi' EXIT
  trap 'exit 130' INT TERM

  if [[ $mode == self-test ]]; then
    self_test
    printf '%d passed, %d failed\n' "$PASSED" "$FAILED"
    ((FAILED == 0))
    return
  fi

  if [[ -n $sidecar_url && $sidecar_url != upstream && ${#upstreams[@]} != 1 ]]; then
    e2e_die "--sidecar-url URL needs --upstream everything or --upstream modern"
  fi
  e2e_require_tools
  export HOME=$WORK/home
  mkdir -p "$HOME"

  local up
  for up in "${upstreams[@]}"; do
    run_upstream "$up" "$sidecar_bin" "$sidecar_url" "$plugin_dir"
  done
  printf '%d passed, %d failed\n' "$PASSED" "$FAILED"
  ((FAILED == 0))
}

# run_upstream everything|modern SIDECAR_BIN SIDECAR_URL PLUGIN_DIR starts the
# upstream and (unless SIDECAR_URL is set) a sidecar in front of it, makes
# every call of the matrix both ways, and stops both again.
run_upstream() {
  local up=$1 sidecar_bin=$2 sidecar_url=$3 plugin_dir=$4 eras text_uri blob_uri blob_filter
  if [[ $up == everything ]]; then
    e2e_start_everything "$WORK/everything.log"
    DIRECT_URL=$E2E_EVERYTHING_URL
    eras=(legacy auto modern)
    text_uri=$TEXT_URI blob_uri=$BLOB_URI blob_filter=$JQ_BLOB
  else
    e2e_start_modern_upstream "$WORK/modern.log"
    DIRECT_URL=$E2E_MODERN_URL
    eras=(legacy auto modern)
    text_uri=$MODERN_TEXT_URI blob_uri=$MODERN_BLOB_URI blob_filter=$JQ_IDENTITY
  fi
  local upstream_pid=$E2E_LAST_PID
  e2e_log "$up upstream at $DIRECT_URL (pid $upstream_pid)"

  local declared=yes
  if [[ $sidecar_url == upstream ]]; then
    SIDECAR_URL=$DIRECT_URL
    declared=no
    e2e_log "dry run: comparing the upstream with itself, declaration checks off"
  elif [[ -n $sidecar_url ]]; then
    SIDECAR_URL=$sidecar_url
  else
    e2e_start_sidecar "$sidecar_bin" "$DIRECT_URL" "$WORK/sidecar-$up.log" "$plugin_dir"
    SIDECAR_URL=$E2E_SIDECAR_URL
    e2e_log "sidecar at $SIDECAR_URL (pid $E2E_SIDECAR_PID)"
  fi

  local era p init_filter=$JQ_IDENTITY init_check=''
  if [[ $declared == yes ]]; then
    init_filter=$JQ_INIT_STRIP
    init_check=$JQ_INIT_DECLARED
  fi
  for era in "${eras[@]}"; do
    p="$up $era"
    DIRECT_ERA=''
    if [[ $up == everything && $era != legacy && $declared == yes ]]; then
      DIRECT_ERA=legacy
      p="$up $era (bridged, direct legacy)"
    fi
    local check=$init_check
    if [[ -n $DIRECT_ERA ]]; then
      # A bridged pair must really have negotiated the modern era.
      check="${check:-.} | if .result.protocolVersion != \"2026-07-28\" then error(\"negotiated \\(.result.protocolVersion) through the sidecar, want 2026-07-28 (era bridge)\") else . end"
    fi
    run_pair "$p initialize" "$init_filter" "$check" "$era" --method initialize
    run_pair "$p tools/list" "$JQ_IDENTITY" '' "$era" --method tools/list
    run_pair "$p resources/list" "$JQ_RESOURCES_LIST" '' "$era" --method resources/list
    if [[ $up == everything ]]; then
      # The modern upstream declares no prompts and no templates.
      run_pair "$p resources/templates/list" "$JQ_IDENTITY" '' "$era" --method resources/templates/list
      run_pair "$p prompts/list" "$JQ_IDENTITY" '' "$era" --method prompts/list
    fi
    run_pair "$p resources/read text" "$JQ_IDENTITY" '' "$era" --method resources/read --uri "$text_uri"
    run_pair "$p resources/read blob" "$blob_filter" '' "$era" --method resources/read --uri "$blob_uri"
    run_pair "$p tools/call echo" "$JQ_IDENTITY" '' "$era" --method tools/call --tool-name echo \
      --tool-arg 'message=hello through the sidecar'
    run_pair "$p tools/call get-sum" "$JQ_IDENTITY" '' "$era" --method tools/call --tool-name get-sum \
      --tool-args-json '{"a": 2, "b": 40}'
  done

  if ! kill -0 "$upstream_pid" 2>/dev/null; then
    record "$up upstream still running" fail "it exited during the run"
  fi
  e2e_cleanup
}

main "$@"
