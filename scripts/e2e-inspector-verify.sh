#!/usr/bin/env bash
# e2e-inspector-verify.sh checks a skills server (normally the sidecar) the way
# a strict host does: `mcp-inspector --cli URL --method skills/list --verify`
# (@modelcontextprotocol/inspector 2.12.0) reads every listed skill file back
# with resources/read, re-hashes the bytes and compares digest, size and
# frontmatter with the listing. Runs it with --protocol-era legacy and modern,
# prints one row per era and "N passed, N failed"; exits 1 when an era failed,
# 2 on a setup error.
#
# Usage:
#   scripts/e2e-inspector-verify.sh URL [--era legacy|modern|both]
#   scripts/e2e-inspector-verify.sh --start-sidecar [--upstream modern|modern-only|everything|go]
#           [--plugin-dir DIR | --demo] [--sidecar-bin PATH] [--era ...]
#       start an upstream (default modern: test/e2e/modern-upstream.mjs, which
#       speaks both eras; modern-only: the same with --modern-only, whose
#       legacy era is the sidecar's era bridge; everything: server-everything,
#       legacy only, whose modern era is the sidecar's era bridge) and
#       bin/skills-sidecar in front of it with the plugin folder (default
#       examples/plugin) on free loopback ports (with --demo: the sidecar
#       alone, with its embedded demo upstream and example plugin),
#       verify through it with the inspector and with the binary's own
#       `skills-sidecar verify` (each must pass), and stop both at the end
#   scripts/e2e-inspector-verify.sh --self-test
#       runs the check against test/e2e/fake-skills-server.mjs serving a good
#       digest (must pass), the same server advertising a wrong digest (must
#       fail with exit 7) and server-everything, which declares no skills
#       extension (must fail with exit 1)
# Environment: E2E_TOOLS_DIR, E2E_CALL_TIMEOUT (seconds per call, default 60).
#
# A row passes when the inspector exits 0, printed at least one report, and
# every report has outcome "verified" (so a skill with resources "dynamic",
# which the inspector reports as "unverifiable" and still exits 0 for, fails
# here: the sidecar always knows its files). An empty catalog fails too:
# nothing was verified.
#
# --verify findings: stdout has one JSON report per skill, one per line:
#   {uri, name, conformance: [issues], frontmatter: [issues],
#    files: [{uri, status: verified|mismatch|read-error|..., expectedDigest,
#             actualDigest, expectedSize, actualSize}], ok, outcome}
#   outcome: verified | failed | incomplete | unverifiable. stderr has a
#   one-line summary and, on failure, {"error": {code, message}}.
# Exit codes: 0 every skill verified (or unverifiable without
#   --require-digests); 1 error, including "skills_unsupported" (extension not
#   declared) and JSON-RPC errors such as -32601; 3 auth required;
#   4 unreachable; 7 skills_nonconformant: a digest/size mismatch, an unreadable
#   file or a conformance error; 8 skills_incomplete: read bounds hit
#   (--skill-catalog-max-skills/--skill-catalog-max-bytes); 9 with
#   --require-digests, a skill with resources "dynamic". 124 here means our own
#   timeout fired.
set -euo pipefail

E2E_NAME=e2e-inspector-verify
# shellcheck source=scripts/e2e-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/e2e-lib.sh"

ROWS=()
ROW_VERDICTS=()
ROW_EXITS=()
DETAILS=()
PASSED=0
FAILED=0

exit_meaning() {
  case $1 in
    0) echo "ok" ;;
    1) echo "error" ;;
    3) echo "auth required" ;;
    4) echo "unreachable" ;;
    7) echo "nonconformant (digest/size mismatch or conformance error)" ;;
    8) echo "incomplete (read bounds)" ;;
    9) echo "unverifiable (no digests)" ;;
    124) echo "timed out" ;;
    *) echo "unexpected" ;;
  esac
}

# verify_row LABEL URL ERA runs one verification, adds a row and returns 0
# when it passed.
verify_row() {
  local label=$1 url=$2 era=$3 rc=0 out err skills=0 verified=0 verdict=ok reasons=()
  out=$WORK/${label//[^A-Za-z0-9_.-]/_}.$era.out
  err=$WORK/${label//[^A-Za-z0-9_.-]/_}.$era.err
  e2e_inspector "$url" --method skills/list --verify --protocol-era "$era" >"$out" 2>"$err" || rc=$?
  if jq -e . "$out" >/dev/null 2>&1 || [[ ! -s $out ]]; then
    skills=$(jq -s 'length' "$out")
    verified=$(jq -s '[.[] | select(.outcome == "verified")] | length' "$out")
  else
    reasons+=("stdout is not JSON reports: $(head -c 200 "$out")")
  fi
  if ((rc != 0)); then
    reasons+=("exit $rc, $(exit_meaning "$rc"): $(grep -m 1 '"error"' "$err" | jq -r '.error.message // empty' 2>/dev/null | head -c 300 || true)")
  fi
  if ((skills == 0)); then
    reasons+=("no skill reports: nothing was verified")
  fi
  if ((verified != skills)); then
    while IFS= read -r line; do reasons+=("$line"); done < <(jq -r 'select(.outcome != "verified")
      | "\(.uri): \(.outcome); " + ([.files[]? | select(.status != "verified")
          | "\(.uri) \(.status) (advertised \(.expectedDigest // "-") size \(.expectedSize // "-"), served \(.actualDigest // "-") size \(.actualSize // "-"))"]
        + [.conformance[]?, .frontmatter[]? | tostring] | join("; "))' "$out" 2>/dev/null | head -n 5)
  fi
  ((${#reasons[@]} == 0)) || verdict=FAIL
  ROW_VERDICTS+=("$verdict")
  ROW_EXITS+=("$rc")
  ROWS+=("$(printf '%-28s  %-6s  %4s  %6s  %8s  %-7s  %s' "$label" "$era" "$rc" "$skills" "$verified" "$verdict" "$(exit_meaning "$rc")")")
  if [[ $verdict == ok ]]; then
    PASSED=$((PASSED + 1))
    return 0
  fi
  FAILED=$((FAILED + 1))
  local r
  for r in "${reasons[@]}"; do DETAILS+=("$label $era: $r"); done
  return 1
}

# own_verify_row BIN URL ERA runs our own `skills-sidecar verify` (it
# must exit 0 against the sidecar in front of each upstream), adds a row and
# returns 0 when it passed.
own_verify_row() {
  local bin=$1 url=$2 era=$3 rc=0 out
  out=$WORK/own-verify.$era.out
  timeout "${E2E_CALL_TIMEOUT:-60}" "$bin" verify "$url" --era "$era" >"$out" 2>&1 || rc=$?
  local verdict=ok
  ((rc == 0)) || verdict=FAIL
  ROWS+=("$(printf '%-28s  %-6s  %4s  %6s  %8s  %-7s  %s' "skills-sidecar verify" "$era" "$rc" - - "$verdict" "exit $rc")")
  if [[ $verdict == ok ]]; then
    PASSED=$((PASSED + 1))
    return 0
  fi
  FAILED=$((FAILED + 1))
  DETAILS+=("skills-sidecar verify $era: exit $rc: $(grep -m 3 -i 'fail' "$out" | tr '\n' ' ' | head -c 400)")
  return 1
}

print_table() {
  printf '%-28s  %-6s  %4s  %6s  %8s  %-7s  %s\n' server era exit skills verified verdict meaning
  printf '%s\n' "${ROWS[@]}"
  if ((${#DETAILS[@]})); then
    printf '\nWhy:\n'
    printf '  %s\n' "${DETAILS[@]}"
  fi
}

# start_fake MODE starts test/e2e/fake-skills-server.mjs and prints its URL.
start_fake() {
  local port
  free_port port
  e2e_spawn "$WORK/fake-$1.log" "$E2E_NODE" "$E2E_ROOT/test/e2e/fake-skills-server.mjs" "$port" "$1"
  e2e_wait_http "http://127.0.0.1:$port/mcp" "$E2E_LAST_PID" "${E2E_START_TIMEOUT:-30}" "$WORK/fake-$1.log" ||
    e2e_die "fake-skills-server $1 did not start"
  FAKE_URL=http://127.0.0.1:$port/mcp
}

self_test() {
  local era want label expectations=() i failures=0 verdict code
  start_fake good
  local good=$FAKE_URL
  start_fake bad-digest
  local bad=$FAKE_URL
  e2e_start_everything "$WORK/everything.log"
  for era in legacy modern; do
    verify_row "fake good digest" "$good" "$era" || true
    expectations+=("fake-good-digest ok 0")
    verify_row "fake wrong digest" "$bad" "$era" || true
    expectations+=("fake-wrong-digest FAIL 7")
  done
  verify_row "server-everything (no ext.)" "$E2E_EVERYTHING_URL" legacy || true
  expectations+=("server-everything-no-extension FAIL 1")
  print_table
  printf '\nself-test:\n'
  for i in "${!expectations[@]}"; do
    read -r label want code <<<"${expectations[$i]}"
    verdict=${ROW_VERDICTS[$i]}
    if [[ $verdict == "$want" && ${ROW_EXITS[$i]} == "$code" ]]; then
      printf 'PASS %s: verdict %s, exit %s\n' "$label" "$verdict" "${ROW_EXITS[$i]}"
    else
      printf 'FAIL %s: verdict %s exit %s, want %s exit %s\n' "$label" "$verdict" "${ROW_EXITS[$i]}" "$want" "$code"
      failures=$((failures + 1))
    fi
  done
  printf 'self-test: %d passed, %d failed\n' "$((${#expectations[@]} - failures))" "$failures"
  ((failures == 0))
}

main() {
  local url='' eras=(legacy modern) mode=run sidecar_bin=$E2E_ROOT/bin/skills-sidecar
  local plugin_dir=$E2E_ROOT/examples/plugin demo=no upstream=modern
  case ${1:-} in
    --self-test) mode=self-test ;;
    -h | --help | '')
      sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
      [[ -n ${1:-} ]]
      return
      ;;
    *)
      if [[ $1 == --start-sidecar ]]; then mode=start; else url=$1; fi
      shift
      while (($#)); do
        case $1 in
          --era)
            case ${2:-} in
              legacy | modern) eras=("$2") ;;
              both) eras=(legacy modern) ;;
              *) e2e_die "--era takes legacy, modern or both" ;;
            esac
            shift
            ;;
          --sidecar-bin) sidecar_bin=${2:?--sidecar-bin needs a path}; shift ;;
          --plugin-dir) plugin_dir=${2:?--plugin-dir needs a directory}; shift ;;
          --demo) demo=yes ;;
          --upstream) upstream=$(e2e_upstream_choice "${2:-}") || exit 2; shift ;;
          *) e2e_die "unknown argument $1 (try --help)" ;;
        esac
        shift
      done
      if [[ $mode == run ]]; then
        e2e_require_loopback "$url"
      fi
      ;;
  esac
  e2e_require_tools
  WORK=$(mktemp -d -t e2e-inspector-verify.XXXXXX)
  trap 'e2e_cleanup; if [[ ${E2E_KEEP:-} == 1 ]]; then e2e_log "kept $WORK"; else rm -rf "$WORK"; fi' EXIT
  trap 'exit 130' INT TERM
  export HOME=$WORK/home
  mkdir -p "$HOME"

  if [[ $mode == self-test ]]; then
    self_test
    return
  fi
  if [[ $mode == start ]]; then
    local kind=$upstream
    [[ $demo == yes ]] && kind=demo
    if [[ $kind == modern || $kind == modern-only || $kind == everything ]]; then
      # The example plugin's agents name the demo server's tools; these
      # upstreams have others, so agents/get would rightly refuse them
      # (and our verify with it). --drop-unknown-tools is the knob an
      # operator has for exactly this.
      export SKILLS_SIDECAR_DROP_UNKNOWN_TOOLS=true
    fi
    e2e_start_stack "$kind" "$sidecar_bin" "$WORK" "$plugin_dir"
    url=$E2E_SIDECAR_URL
  fi
  local era
  for era in "${eras[@]}"; do
    verify_row "$url" "$url" "$era" || true
    # Our own checker too, from the binary under test, when the script
    # started the sidecar (its verify is the same binary).
    if [[ $mode == start ]]; then
      own_verify_row "$sidecar_bin" "$url" "$era" || true
    fi
  done
  print_table
  printf '%d passed, %d failed\n' "$PASSED" "$FAILED"
  ((FAILED == 0))
}

main "$@"
