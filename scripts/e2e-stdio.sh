#!/usr/bin/env bash
# e2e-stdio.sh runs stdio MCP servers as the sidecar's upstream
# (`skills-sidecar serve -- CMD ARGS...`) and checks them through it with the
# MCP Inspector CLI in both protocol eras, then checks that stopping the
# sidecar (SIGTERM) leaves none of their processes behind. Prints one row per
# check and "N passed, N failed"; exits 1 when a check failed, 2 on a setup
# error.
#
# Servers (pinned in test/e2e/package.json):
#   server-everything 2026.8.31 in its stdio mode (legacy era only: the
#       2026-07-28 era is the sidecar's era bridge, over held processes),
#       with examples/plugin: tools/list and tools/call echo, and
#       skills/list --verify (every skill file read back and re-hashed);
#   server-filesystem 2026.8.31 on a scratch folder: tools/list and
#       tools/call list_directory, which must name the folder's file.
#
# Usage: scripts/e2e-stdio.sh [--sidecar-bin PATH]
# Environment: E2E_TOOLS_DIR, E2E_CALL_TIMEOUT (seconds per call, default 60).
set -euo pipefail

E2E_NAME=e2e-stdio
# shellcheck source=scripts/e2e-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/e2e-lib.sh"

FS_JS=$E2E_NPM_DIR/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
PASSED=0
FAILED=0

# check NAME CONDITION-EXIT DETAIL records one row.
check() {
  local name=$1 rc=$2 detail=${3:-}
  if ((rc == 0)); then
    PASSED=$((PASSED + 1))
    printf 'ok    %s\n' "$name"
  else
    FAILED=$((FAILED + 1))
    printf 'FAIL  %s: %s\n' "$name" "${detail:0:400}"
  fi
}

# call NAME ERA JQ ARGS... runs the inspector through the sidecar and checks
# its JSON output, read as an array of documents (jq -s), with the jq filter
# JQ (must print true).
call() {
  local name=$1 era=$2 filter=$3 out rc=0
  shift 3
  out=$WORK/${name//[^A-Za-z0-9_.-]/_}.$era
  e2e_inspector "$E2E_SIDECAR_URL" --format json --protocol-era "$era" "$@" >"$out.json" 2>"$out.err" || rc=$?
  if ((rc == 0)) && [[ $(jq -rs "$filter" "$out.json" 2>/dev/null) == true ]]; then
    check "$name ($era)" 0
  else
    check "$name ($era)" 1 "exit $rc: $(head -c 300 "$out.json") $(head -c 300 "$out.err")"
  fi
}

# descendants PID prints every descendant of PID, one per line.
descendants() {
  local c
  for c in $(pgrep -P "$1" || true); do
    echo "$c"
    descendants "$c"
  done
}

# alive PID: the process exists and is not a zombie.
alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  [[ $(awk '{print $1}' <<<"${stat##*) }") != Z ]]
}

# stop_and_count NAME stops the sidecar with SIGTERM and checks that every
# process it had started (and theirs) is gone.
stop_and_count() {
  local name=$1 kids left=()
  mapfile -t kids < <(descendants "$E2E_SIDECAR_PID")
  e2e_stop "$E2E_SIDECAR_PID"
  local p
  for p in "${kids[@]}"; do
    if alive "$p"; then left+=("$p"); fi
  done
  if ((${#kids[@]} == 0)); then
    check "$name: processes under the sidecar before SIGTERM" 1 "none found"
  fi
  check "$name: nothing left after SIGTERM (${#kids[@]} processes)" "${#left[@]}" "still running: ${left[*]}"
}

main() {
  local bin=$E2E_ROOT/bin/skills-sidecar era
  case ${1:-} in
    --sidecar-bin) bin=${2:?--sidecar-bin needs a path} ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
      return
      ;;
    '') ;;
    *) e2e_die "unknown argument $1 (try --help)" ;;
  esac
  e2e_require_tools
  [[ -f $FS_JS ]] || e2e_die "missing $FS_JS; run scripts/install-e2e-tools.sh first"
  WORK=$(mktemp -d -t e2e-stdio.XXXXXX)
  trap 'e2e_cleanup; if [[ ${E2E_KEEP:-} == 1 ]]; then e2e_log "kept $WORK"; else rm -rf "$WORK"; fi' EXIT
  trap 'exit 130' INT TERM
  export HOME=$WORK/home
  mkdir -p "$HOME" "$WORK/files"
  echo "hello from a file" >"$WORK/files/stdio-e2e-marker.txt"

  # The example plugin's agents name the demo server's tools, which
  # server-everything lacks (see e2e-inspector-verify.sh).
  export SKILLS_SIDECAR_DROP_UNKNOWN_TOOLS=true
  E2E_SIDECAR_EXTRA=(-- "$E2E_NODE" "$E2E_EVERYTHING_JS" stdio)
  e2e_start_sidecar "$bin" '' "$WORK/everything.log" "$E2E_ROOT/examples/plugin"
  e2e_log "sidecar at $E2E_SIDECAR_URL running server-everything stdio"
  for era in legacy modern; do
    call "everything tools/list" "$era" '[.[0].result.tools[].name] | index("echo") != null' --method tools/list
    call "everything tools/call echo" "$era" '.[0].result.content[0].text | contains("stdio-hello")' \
      --method tools/call --tool-name echo --tool-arg message=stdio-hello
    call "everything skills/list --verify" "$era" 'length > 0 and all(.[]; .outcome == "verified")' \
      --method skills/list --verify
  done
  stop_and_count everything

  E2E_SIDECAR_EXTRA=(-- "$E2E_NODE" "$FS_JS" "$WORK/files")
  e2e_start_sidecar "$bin" '' "$WORK/filesystem.log"
  e2e_log "sidecar at $E2E_SIDECAR_URL running server-filesystem on a scratch folder"
  for era in legacy modern; do
    call "filesystem tools/list" "$era" '[.[0].result.tools[].name] | index("list_directory") != null' --method tools/list
    call "filesystem list_directory" "$era" '[.[0].result.content[].text] | join(" ") | contains("stdio-e2e-marker.txt")' \
      --method tools/call --tool-name list_directory --tool-arg "path=$WORK/files"
  done
  stop_and_count filesystem

  printf '%d passed, %d failed\n' "$PASSED" "$FAILED"
  ((FAILED == 0))
}

main "$@"
