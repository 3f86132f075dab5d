#!/usr/bin/env bash
# e2e-transparency.sh runs the official conformance server suites of the
# pinned @modelcontextprotocol/conformance against each upstream kind the e2e
# suite starts, once directly and once through the sidecar (examples/plugin,
# default settings), and compares the two checks.json sets check by check
# with test/transparency. A check whose status differs, or whose message
# differs beyond hosts, ports, UUIDs and timestamps, fails the stage unless
# test/e2e/transparency-allow.txt allows it with a reason. Prints the table
# of differences and "transparency: N passed, N failed" (checks); exits 1
# when a check failed or a suite run timed out, 2 on a setup error.
#
# Usage: scripts/e2e-transparency.sh [--out DIR] [--upstreams "everything everything-stdio go-legacy go-stateless modern"]
#        scripts/e2e-transparency.sh --bridged [--out DIR] [--upstreams "everything go-legacy"]
#        scripts/e2e-transparency.sh --reverse [--out DIR] [--upstreams modern-only]
#
# --reverse is the other direction: in front of
# test/e2e/modern-upstream.mjs --modern-only (which refuses the legacy
# wire), every scenario that passes on the 2026-07-28 wire (directly or
# through the sidecar) must pass through the sidecar on the legacy one;
# prints "modern-vs-bridged: N passed, N failed" (scenarios).
#
# --bridged is the era bridge's check: for each legacy-only
# upstream (default server-everything and the stateful go-sdk demo) the
# suites active and pending run on the legacy wire (--spec-version
# 2025-11-25) directly and through the sidecar, and on the 2026-07-28 wire
# through the sidecar, where the era bridge carries them. Every scenario
# that passes on the legacy wire (directly, or through the sidecar for the
# sidecar's own sep-2640 scenarios) must pass bridged on the modern one;
# a scenario the suite has only on the legacy wire is listed, not failed.
# Prints "legacy-vs-bridged: N passed, N failed" (scenarios) and exits 1
# when one failed or none passed.
# Environment: E2E_TOOLS_DIR (see install-e2e-tools.sh); E2E_JOBS (suite
# runs at a time, default 3); E2E_SUITE_TIMEOUT (seconds per suite run,
# default 300); E2E_KEEP=1 keeps the results when --out is not given.
#
# Upstreams: everything (server-everything, legacy only), go-legacy
# (bin/demo-upstream, go-sdk, stateful), go-stateless (bin/demo-upstream
# --stateless, the 2026-07-28 wire) and modern (test/e2e/modern-upstream.mjs,
# dual era); everything-stdio (server-everything directly on streamable HTTP,
# against its stdio mode run by the sidecar: not in the default list). Suite runs per upstream and side (conformance 0.2.0-alpha.12):
#   active                --suite active (the default suite and spec versions)
#   pending               --suite pending
#   draft                 --suite draft
#   active-2025-06-18     --suite active --spec-version 2025-06-18
#   active-2025-03-26     --suite active --spec-version 2025-03-26
# Each writes DIR/UPSTREAM/CONFIG/SIDE/server-SCENARIO-TIMESTAMP/checks.json.
# The CLI exits 1 whenever a check fails, which the demo upstreams do on
# purpose (they are not the conformance suite's reference server), so its
# exit code is logged and only a timeout counts: the comparison is the verdict.
# Upstreams are shared by the direct and the sidecar runs; runs go E2E_JOBS at
# a time (the suites are independent of each other's state: every scenario
# opens its own session or sends stateless requests).
set -euo pipefail

E2E_NAME=e2e-transparency
# shellcheck source=scripts/e2e-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/e2e-lib.sh"

CONFIGS=(active pending draft active-2025-06-18 active-2025-03-26)
declare -A RUNNING=()
ALLOW=$E2E_ROOT/test/e2e/transparency-allow.txt

# suite_args CONFIG prints the CLI arguments of one suite configuration.
suite_args() {
  case $1 in
    active | pending | draft) echo "--suite $1" ;;
    active-*) echo "--suite active --spec-version ${1#active-}" ;;
    # The sep-2640 scenarios declare no spec version, so a suite with one
    # named leaves them out: they run one by one, on the legacy wire with
    # --force as e2e-conformance.sh --wire legacy does, and on their
    # default (2026-07-28) wire.
    legacy-sep-2640-*) echo "--scenario ${1#legacy-} --spec-version 2025-11-25 --force" ;;
    modern-sep-2640-*) echo "--scenario ${1#modern-}" ;;
    legacy-*) echo "--suite ${1#legacy-} --spec-version 2025-11-25" ;;
    modern-*) echo "--suite ${1#modern-} --spec-version 2026-07-28" ;;
    *) e2e_die "unknown configuration $1" ;;
  esac
}

# start_upstream KIND DIR starts one upstream kind and the sidecar in front
# of it; sets URL_DIRECT and URL_SIDECAR.
start_upstream() {
  local kind=$1 dir=$2
  case $kind in
    everything) e2e_start_everything "$dir/upstream.log"; URL_DIRECT=$E2E_EVERYTHING_URL ;;
    go-legacy) e2e_start_go_upstream "$dir/upstream.log" stateful; URL_DIRECT=$E2E_GO_URL ;;
    go-stateless) e2e_start_go_upstream "$dir/upstream.log" stateless; URL_DIRECT=$E2E_GO_URL ;;
    modern) e2e_start_modern_upstream "$dir/upstream.log"; URL_DIRECT=$E2E_MODERN_URL ;;
    modern-only) e2e_start_modern_upstream "$dir/upstream.log" --modern-only; URL_DIRECT=$E2E_MODERN_URL ;;
    everything-stdio)
      # server-everything on its own streamable HTTP transport directly, and
      # in its stdio mode run by the sidecar itself (serve -- CMD).
      e2e_start_everything "$dir/upstream.log"
      URL_DIRECT=$E2E_EVERYTHING_URL
      local E2E_SIDECAR_EXTRA=(-- "$E2E_NODE" "$E2E_EVERYTHING_JS" stdio)
      e2e_start_sidecar "$E2E_ROOT/bin/skills-sidecar" '' "$dir/sidecar.log" "$E2E_ROOT/examples/plugin"
      URL_SIDECAR=$E2E_SIDECAR_URL
      return
      ;;
    *) e2e_die "unknown upstream kind $kind" ;;
  esac
  e2e_start_sidecar "$E2E_ROOT/bin/skills-sidecar" "$URL_DIRECT" "$dir/sidecar.log" "$E2E_ROOT/examples/plugin"
  URL_SIDECAR=$E2E_SIDECAR_URL
}

# start_suite URL OUT CONFIG starts one suite configuration in the
# background (timeout is the job, so signalling it ends the CLI too) and
# records it in RUNNING (pid -> OUT).
start_suite() {
  local url=$1 out=$2 config=$3 args
  read -r -a args <<<"$(suite_args "$config")"
  mkdir -p "$out"
  timeout -k 5 "${E2E_SUITE_TIMEOUT:-300}" "$E2E_NODE" "$E2E_CONFORMANCE_JS" server --url "$url" \
    "${args[@]}" -o "$out" >"$out.log" 2>&1 </dev/null &
  RUNNING[$!]=$out
}

# reap_one waits for one running suite and records its exit code in OUT.rc
# (124: timed out).
reap_one() {
  local pid rc=0
  wait -n -p pid "${!RUNNING[@]}" || rc=$?
  echo "$rc" >"${RUNNING[$pid]}.rc"
  unset "RUNNING[$pid]"
}

# stop_suites ends the suite runs still going, by pid (on INT or TERM).
stop_suites() {
  local pid
  for pid in "${!RUNNING[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
}

main() {
  local out='' upstreams=(everything everything-stdio go-legacy go-stateless modern) bridged=no upstreams_set=no
  while (($#)); do
    case $1 in
      --bridged) bridged=yes ;;
      --reverse) bridged=reverse ;;
      --out) out=${2:?--out needs a directory}; shift ;;
      --upstreams) read -r -a upstreams <<<"${2:?--upstreams needs a list}"; upstreams_set=yes; shift ;;
      -h | --help)
        sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
        return 0
        ;;
      *) e2e_die "unknown argument $1 (try --help)" ;;
    esac
    shift
  done
  if [[ $bridged != no ]]; then
    CONFIGS=(legacy-active legacy-pending modern-active modern-pending)
    local sc
    for sc in sep-2640-skills-enumeration sep-2640-skills-manifest sep-2640-skills-directory; do
      CONFIGS+=("legacy-$sc" "modern-$sc")
    done
    if [[ $upstreams_set != yes ]]; then
      upstreams=(everything go-legacy)
      [[ $bridged == reverse ]] && upstreams=(modern-only)
    fi
  fi
  e2e_require_tools
  [[ -f $ALLOW ]] || e2e_die "missing $ALLOW"
  OUT_KEEP=${E2E_KEEP:-}
  if [[ -z $out ]]; then
    out=$(mktemp -d -t e2e-transparency.XXXXXX)
  else
    OUT_KEEP=1
    mkdir -p "$out"
  fi
  OUT_DIR=$out
  trap 'stop_suites; e2e_cleanup; if [[ $OUT_KEEP == 1 ]]; then e2e_log "results in $OUT_DIR"; else rm -rf "$OUT_DIR"; fi' EXIT
  trap 'exit 130' INT TERM
  # Build before HOME moves: the Go caches live under the real HOME.
  local begin=$SECONDS
  (cd "$E2E_ROOT" && go build -o bin/skills-sidecar ./cmd/skills-sidecar && go build -o bin/demo-upstream ./cmd/demo-upstream &&
    go build -o bin/transparency ./test/transparency) || e2e_die "build failed"
  export HOME=$out/home
  mkdir -p "$HOME"

  e2e_log "built in $((SECONDS - begin))s"
  local start=$SECONDS kind config side jobs=() url dir
  for kind in "${upstreams[@]}"; do
    mkdir -p "$out/$kind"
    start_upstream "$kind" "$out/$kind"
    e2e_log "$kind: direct $URL_DIRECT, through the sidecar $URL_SIDECAR"
    for config in "${CONFIGS[@]}"; do
      for side in direct sidecar; do
        # The modern wire directly is refused by a legacy-only upstream:
        # the bridged comparison needs only the sidecar's side of it.
        [[ $bridged == yes && $config == modern-* && $side == direct ]] && continue
        # The reverse: a modern-only upstream refuses the legacy wire.
        [[ $bridged == reverse && $config == legacy-* && $side == direct ]] && continue
        url=$URL_DIRECT
        [[ $side == sidecar ]] && url=$URL_SIDECAR
        jobs+=("$url $out/$kind/$config/$side $config")
      done
    done
  done

  # E2E_JOBS suite runs at a time; every child is ours and waited for.
  local max=${E2E_JOBS:-3} j
  RUNNING=()
  for j in "${jobs[@]}"; do
    read -r url dir config <<<"$j"
    while ((${#RUNNING[@]} >= max)); do reap_one; done
    start_suite "$url" "$dir" "$config"
  done
  while ((${#RUNNING[@]} > 0)); do reap_one; done
  e2e_log "${#jobs[@]} suite runs in $((SECONDS - start))s"

  local timeouts=0 rcfile
  for rcfile in "$out"/*/*/*.rc; do
    if [[ $(<"$rcfile") == 124 ]]; then
      e2e_log "timed out: ${rcfile#"$out"/}"
      timeouts=$((timeouts + 1))
    fi
  done
  # A run that wrote no checks.json at all (the CLI died on both sides
  # alike) would compare as "no differences": count it as a failure.
  local empty=0
  for j in "${jobs[@]}"; do
    read -r url dir config <<<"$j"
    if ! compgen -G "$dir/server-*/checks.json" >/dev/null; then
      e2e_log "no checks.json from ${dir#"$out"/}; its log ends:"
      tail -n 5 "$dir.log" >&2 || true
      empty=$((empty + 1))
    fi
  done
  local rc=0
  if [[ $bridged == yes ]]; then
    "$E2E_ROOT/bin/transparency" -bridged "$out" || rc=$?
  elif [[ $bridged == reverse ]]; then
    "$E2E_ROOT/bin/transparency" -reverse "$out" || rc=$?
  else
    "$E2E_ROOT/bin/transparency" -allow "$ALLOW" "$out" || rc=$?
  fi
  if ((empty > 0)); then
    printf '%d suite runs wrote no results\n' "$empty"
    ((rc != 0)) || rc=1
  fi
  if ((timeouts > 0)); then
    printf '%d suite runs timed out after %ss\n' "$timeouts" "${E2E_SUITE_TIMEOUT:-300}"
    ((rc != 0)) || rc=1
  fi
  e2e_log "stage took $((SECONDS - begin))s (suites and comparison $((SECONDS - start))s)"
  return "$rc"
}

main "$@"
