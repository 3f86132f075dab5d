#!/usr/bin/env bash
# shellcheck disable=SC2016 # single-quoted jq programs use jq's own $variables
# e2e-conformance.sh runs the official SEP-2640 server scenarios of
# @modelcontextprotocol/conformance against a skills server (normally the
# sidecar) on both protocol eras, and fails unless every sep-2640-* check is
# SUCCESS. Prints a table (one row per era and scenario), the checks that were
# not good enough, and "N passed, N failed" counting rows; exits 1 when a row
# failed, 2 on a setup error.
#
# Usage:
#   scripts/e2e-conformance.sh URL [--wire modern|legacy|both] [--out DIR]
#   scripts/e2e-conformance.sh --start-sidecar [--upstream modern|everything|go]
#           [--plugin-dir DIR | --demo] [--sidecar-bin PATH] [--wire ...] [--out DIR]
#       start an upstream (default modern: test/e2e/modern-upstream.mjs, which
#       speaks both eras; everything: server-everything, legacy only) and
#       bin/skills-sidecar in front of it with the plugin folder (default
#       examples/plugin) on free loopback ports (with --demo: the sidecar
#       alone, with its embedded demo upstream and example plugin),
#       run against that, and stop both at the end
#   scripts/e2e-conformance.sh --rebinding [--sidecar-bin PATH] [--wire ...] [--out DIR]
#       start the stateless go-sdk demo-upstream and the sidecar in
#       front of it (both on loopback), run the dns-rebinding-protection
#       scenario against each on each wire, and fail unless the sidecar's
#       checks (id and status) equal the go-sdk upstream's own and none of
#       them failed; prints one row per target and wire
#   scripts/e2e-conformance.sh --check WIRE SCENARIO CHECKS_JSON
#       apply the verdict rules to one checks.json file
#   scripts/e2e-conformance.sh --self-test
#       apply them to the fixtures in test/e2e/testdata/conformance/, several of
#       them deliberately broken, and show that each broken one is refused
# Environment: E2E_TOOLS_DIR (see install-e2e-tools.sh), E2E_SCENARIO_TIMEOUT
# (seconds per scenario run, default 180), E2E_KEEP=1 keeps the results when
# --out is not given.
#
# Conformance CLI findings (0.2.0-alpha.12; needs Node >= 22):
#   conformance server --url URL --scenario NAME -o DIR
#       [--spec-version 2025-11-25 --force] [--timeout MS]
#   - The sep-2640 scenarios are in the "pending" suite ([extension] in
#     `conformance list --server`); naming one with --scenario runs it whatever
#     the suite. --suite pending would run every pending scenario.
#   - Default wire: 2026-07-28 (modern: server/discover, per-request _meta).
#     --spec-version 2025-11-25 --force runs the same scenario on the legacy
#     wire (initialize handshake). --force is needed because extension
#     scenarios are not on the spec timeline: without it the CLI prints
#     "SKIPPED: scenario ... is not applicable at spec version 2025-11-25",
#     exits 0 and writes no checks.json.
#   - Results: DIR/server-NAME-<ISO timestamp>/checks.json, a JSON array of
#     {id, name, description, status, timestamp, specReferences,
#     errorMessage?, details?}; status is SUCCESS, FAILURE, WARNING or SKIPPED.
#     Besides the sep-2640-* checks it adds wire-schema-valid (every message
#     the server sent is valid for the negotiated spec version).
#   - Exit code: 0 when no check is FAILURE, even when every check is SKIPPED
#     (which is what an undeclared extension gives: "Server did not declare the
#     io.modelcontextprotocol/skills extension; ... not applicable"), so the
#     exit code alone proves nothing and checks.json is read. 1 when a check
#     failed, or when the scenario threw ("Server test error: ...", e.g. a
#     -32022 unsupported protocol version): then no checks.json is written.
#   - Check ids per scenario are listed in EXPECTED_* below. Only two checks
#     may be SKIPPED, and only on the legacy wire:
#     sep-2640-skills-list-cache-attributes and
#     sep-2640-skills-get-cache-attributes ("not applicable on negotiated
#     protocol 2025-11-25: ttlMs and cacheScope are defined from 2026-07-28").
#
# Verdict for one (era, scenario) row: checks.json exists and is a non-empty
# array; every expected sep-2640 id is present; every sep-2640-* check is
# SUCCESS except the cache-attribute checks SKIPPED on the legacy wire; no
# other check is FAILURE or WARNING; the CLI exited 0. WARNING (a SHOULD) and
# SKIPPED (not exercised) are failures on purpose: the sidecar controls its
# whole skills surface and should meet every check.
set -euo pipefail

E2E_NAME=e2e-conformance
# shellcheck source=scripts/e2e-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/e2e-lib.sh"

SCENARIOS=(sep-2640-skills-enumeration sep-2640-skills-manifest sep-2640-skills-directory)
EXPECTED_ENUMERATION=(
  sep-2640-capability-declaration-inline sep-2640-capability-requires-resources
  sep-2640-capability-commits-to-methods sep-2640-capability-empty-object
  sep-2640-skills-list-implemented sep-2640-skills-list-pagination
  sep-2640-skills-list-entry-atomic sep-2640-skills-list-cache-attributes
  sep-2640-entry-uri-required sep-2640-entry-frontmatter-required
  sep-2640-entry-uri-matches-frontmatter-name sep-2640-skill-uri-scheme
  sep-2640-entry-resources-required sep-2640-resources-complete
  sep-2640-resources-uri-within-skill sep-2640-resources-digest-format
  sep-2640-resources-size-required sep-2640-limit-resources-per-skill
  sep-2640-limit-total-size sep-2640-metadata-reserved-prefix
  sep-2640-name-naming-rules sep-2640-authority-reg-name
  sep-2640-names-should-be-unique
  sep-2640-skills-get-implemented sep-2640-skills-get-entry-shape
  sep-2640-skills-get-cache-attributes sep-2640-skills-get-no-cursor
  sep-2640-skills-get-unknown-uri-invalid-params
  sep-2640-skillmd-required sep-2640-skillmd-frontmatter sep-2640-entry-frontmatter-identical
)
EXPECTED_MANIFEST=(
  sep-2640-skillmd-mimetype sep-2640-skillmd-metadata-name sep-2640-skillmd-metadata-description
  sep-2640-final-segment-equals-name sep-2640-meta-prefix
)
EXPECTED_DIRECTORY=(
  sep-2640-capability-directory-read-flag sep-2640-directory-read-method-registered
  sep-2640-directory-read-result-resources-shape sep-2640-directory-read-subdir-mimetype
  sep-2640-directory-read-invalid-params sep-2640-directory-read-pagination
)
LEGACY_SKIPPABLE=(sep-2640-skills-list-cache-attributes sep-2640-skills-get-cache-attributes)

# JQ_VERDICT summarises a checks.json array for one row. Inputs: $wire,
# $expected (ids, one a line), $skippable (ids, one a line, that may be
# SKIPPED on the legacy wire).
JQ_VERDICT='
  ($expected | split("\n") | map(select(. != ""))) as $expected
  | ($skippable | split("\n") | map(select(. != ""))) as $skippable
  |
  def sep: (.id // "") | startswith("sep-2640-");
  def allowed_skip: .status == "SKIPPED" and $wire == "legacy"
    and (.id as $i | any($skippable[]; . == $i));
  if type != "array" then error("checks.json is not a JSON array") else . end
  | . as $all
  | [ $all[] | select(sep) ] as $sep
  | {
      total: ($sep | length),
      success: ([ $sep[] | select(.status == "SUCCESS") ] | length),
      skipped_ok: ([ $sep[] | select(allowed_skip) ] | length),
      bad: ([ $sep[] | select(.status != "SUCCESS" and (allowed_skip | not)) ]
            + [ $all[] | select((sep | not) and (.status == "FAILURE" or .status == "WARNING")) ]
            | map({id, status, why: (.errorMessage // .description // "" | tostring | .[0:240])})),
      missing: ($expected - [ $sep[].id ]),
      undeclared: ($sep != [] and all($sep[]; .status == "SKIPPED"
                   and ((.errorMessage // "") | test("did not declare"))))
    }'

ROWS=()
DETAILS=()
PASSED=0
FAILED=0

expected_ids() {
  case $1 in
    sep-2640-skills-enumeration) printf '%s\n' "${EXPECTED_ENUMERATION[@]}" ;;
    sep-2640-skills-manifest) printf '%s\n' "${EXPECTED_MANIFEST[@]}" ;;
    sep-2640-skills-directory) printf '%s\n' "${EXPECTED_DIRECTORY[@]}" ;;
    *) e2e_die "unknown scenario $1" ;;
  esac
}

# judge WIRE SCENARIO CHECKS_JSON CLI_EXIT NOTE adds one row to the table and
# counts it. CHECKS_JSON may be empty or missing; NOTE explains why.
judge() {
  local wire=$1 scenario=$2 file=$3 cli_exit=$4 note=$5 summary verdict=ok
  local total=- success=- skipped=- bad=- missing=- reasons=()
  if [[ -z $file || ! -f $file ]]; then
    verdict=FAIL
    reasons+=("no checks.json${note:+: $note}")
  elif ! summary=$(jq -r --arg wire "$wire" \
    --arg expected "$(expected_ids "$scenario")" \
    --arg skippable "$(printf '%s\n' "${LEGACY_SKIPPABLE[@]}")" \
    "$JQ_VERDICT"' | "\(.total) \(.success) \(.skipped_ok) \(.bad | length) \(.missing | length) \(.undeclared)",
      (.bad[] | "\(.status) \(.id): \(.why)"),
      (if .missing != [] then "missing checks: " + (.missing | join(", ")) else empty end)' \
    "$file" 2>&1); then
    verdict=FAIL
    reasons+=("unreadable checks.json: $summary")
  else
    local undeclared lines=()
    mapfile -t lines <<<"$summary"
    read -r total success skipped bad missing undeclared <<<"${lines[0]}"
    if [[ $total == 0 ]]; then
      verdict=FAIL
      reasons+=("no sep-2640 checks in checks.json")
    fi
    if [[ $undeclared == true ]]; then
      # One reason says it all; the per-check SKIPPED lines would repeat it.
      verdict=FAIL
      reasons+=("all $total sep-2640 checks SKIPPED: the server did not declare io.modelcontextprotocol/skills")
      if [[ ${lines[-1]} == "missing checks: "* ]]; then reasons+=("${lines[-1]}"); fi
    elif ((${#lines[@]} > 1)); then
      verdict=FAIL
      reasons+=("${lines[@]:1}")
    fi
  fi
  if [[ $cli_exit != 0 && $cli_exit != - ]]; then
    verdict=FAIL
    if [[ -n $file && -f $file ]]; then reasons+=("conformance exited $cli_exit"); fi
  fi
  ROWS+=("$(printf '%-6s  %-28s  %5s  %7s  %7s  %3s  %7s  %4s  %s' "$wire" "$scenario" "$total" \
    "$success" "$skipped" "$bad" "$missing" "$cli_exit" "$verdict")")
  if [[ $verdict == ok ]]; then
    PASSED=$((PASSED + 1))
  else
    FAILED=$((FAILED + 1))
    local i
    for i in "${!reasons[@]}"; do
      if ((i == 8)); then
        DETAILS+=("$wire $scenario: ... and $((${#reasons[@]} - 8)) more")
        break
      fi
      DETAILS+=("$wire $scenario: ${reasons[$i]}")
    done
  fi
}

# print_table [nocount] prints the table, the reasons, and (unless nocount)
# the closing "N passed, N failed" line.
print_table() {
  printf '%-6s  %-28s  %5s  %7s  %7s  %3s  %7s  %4s  %s\n' wire scenario total success skipped bad missing exit verdict
  printf '%s\n' "${ROWS[@]}"
  if ((${#DETAILS[@]})); then
    printf '\nWhy:\n'
    printf '  %s\n' "${DETAILS[@]}"
  fi
  if [[ ${1:-} != nocount ]]; then printf '%d passed, %d failed\n' "$PASSED" "$FAILED"; fi
}

# run_scenario URL WIRE SCENARIO OUT runs one scenario and judges it.
run_scenario() {
  local url=$1 wire=$2 scenario=$3 out=$4/$2/$3 rc=0 file note=''
  local args=(server --url "$url" --scenario "$scenario" -o "$out")
  if [[ $wire == legacy ]]; then args+=(--spec-version 2025-11-25 --force); fi
  mkdir -p "$out"
  e2e_log "$wire $scenario"
  timeout -k 5 "${E2E_SCENARIO_TIMEOUT:-180}" "$E2E_NODE" "$E2E_CONFORMANCE_JS" "${args[@]}" \
    >"$out/stdout.log" 2>&1 || rc=$?
  ((rc != 124)) || note="timed out after ${E2E_SCENARIO_TIMEOUT:-180}s"
  file=$(find "$out" -path "*/server-$scenario-*/checks.json" -print | sort | tail -n 1)
  if [[ -z $file && -z $note ]]; then
    # The CLI printed why it gave up (e.g. "Server test error: ... -32022").
    note=$(grep -m 1 -E 'error|Error' "$out/stdout.log" | sed 's/\x1b\[[0-9;]*m//g' | cut -c1-200 || true)
  fi
  judge "$wire" "$scenario" "$file" "$rc" "$note"
}

self_test() {
  local dir=$E2E_ROOT/test/e2e/testdata/conformance name wire scenario want verdict
  local -a expectations=()
  [[ -f $dir/cases.txt ]] || e2e_die "missing $dir/cases.txt"
  while read -r name wire scenario want; do
    [[ -z $name || $name == \#* ]] && continue
    expectations+=("$name $want")
    judge "$wire" "$scenario" "$dir/$name" 0 ''
  done <"$dir/cases.txt"
  print_table nocount
  # Each fixture's row must get the verdict cases.txt wants.
  local i failures=0
  printf '\nself-test:\n'
  for i in "${!expectations[@]}"; do
    read -r name want <<<"${expectations[$i]}"
    verdict=${ROWS[$i]##* }
    if [[ $verdict == "$want" ]]; then
      printf 'PASS %s: checker said %s\n' "$name" "$verdict"
    else
      printf 'FAIL %s: checker said %s, want %s\n' "$name" "$verdict" "$want"
      failures=$((failures + 1))
    fi
  done
  printf 'self-test: %d passed, %d failed\n' "$((${#expectations[@]} - failures))" "$failures"
  ((failures == 0))
}

# rebinding_checks URL WIRE OUT runs dns-rebinding-protection against URL
# and prints its checks as "id status" lines, sorted; nothing when the run
# wrote no checks.json.
rebinding_checks() {
  local url=$1 wire=$2 out=$3 file
  local args=(server --url "$url" --scenario dns-rebinding-protection -o "$out")
  if [[ $wire == legacy ]]; then args+=(--spec-version 2025-11-25 --force); fi
  mkdir -p "$out"
  timeout -k 5 "${E2E_SCENARIO_TIMEOUT:-180}" "$E2E_NODE" "$E2E_CONFORMANCE_JS" "${args[@]}" \
    >"$out/stdout.log" 2>&1 || true
  file=$(find "$out" -path "*/server-dns-rebinding-protection-*/checks.json" -print | sort | tail -n 1)
  [[ -n $file ]] || return 0
  jq -r '.[] | "\(.id) \(.status)"' "$file" | sort
}

# rebinding SIDECAR_BIN OUT WIRES... compares the sidecar with the go-sdk
# upstream it fronts on the dns-rebinding-protection scenario.
rebinding() {
  local bin=$1 out=$2 wire direct through failed=0
  shift 2
  e2e_start_go_upstream "$out/go.log"
  e2e_start_sidecar "$bin" "$E2E_GO_URL" "$out/sidecar.log"
  printf '%-6s  %-8s  %s\n' wire target checks
  for wire in "$@"; do
    e2e_log "$wire dns-rebinding-protection: go-sdk upstream, then the sidecar"
    direct=$(rebinding_checks "$E2E_GO_URL" "$wire" "$out/$wire/direct")
    through=$(rebinding_checks "$E2E_SIDECAR_URL" "$wire" "$out/$wire/sidecar")
    printf '%-6s  %-8s  %s\n' "$wire" go-sdk "$(tr '\n' ' ' <<<"$direct")" "$wire" sidecar "$(tr '\n' ' ' <<<"$through")"
    if [[ -z $direct || -z $through ]]; then
      DETAILS+=("$wire: no checks.json (direct: ${direct:+ok}${direct:-none}, sidecar: ${through:+ok}${through:-none})")
      failed=1
    elif [[ $direct != "$through" ]]; then
      DETAILS+=("$wire: the sidecar's checks differ from the go-sdk upstream's")
      failed=1
    elif grep -qv ' SUCCESS$' <<<"$through"; then
      DETAILS+=("$wire: a check is not SUCCESS, directly and through the sidecar alike")
      failed=1
    fi
  done
  if ((${#DETAILS[@]})); then printf '  %s\n' "${DETAILS[@]}"; fi
  ((failed == 0)) && printf 'dns-rebinding-protection: the sidecar answers as the go-sdk upstream does on every wire\n'
  ((failed == 0))
}

main() {
  local url='' wires=(modern legacy) out=''
  case ${1:-} in
    --self-test)
      self_test
      return
      ;;
    --check)
      (($# == 4)) || e2e_die "usage: --check WIRE SCENARIO CHECKS_JSON"
      judge "$2" "$3" "$4" - ''
      print_table
      ((FAILED == 0))
      return
      ;;
    -h | --help | '')
      sed -n '3,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
      [[ -n ${1:-} ]]
      return
      ;;
  esac
  local start=no sidecar_bin=$E2E_ROOT/bin/skills-sidecar plugin_dir=$E2E_ROOT/examples/plugin demo=no upstream=modern
  case $1 in
    --start-sidecar) start=yes ;;
    --rebinding) start=rebinding ;;
    *) url=$1 ;;
  esac
  shift
  while (($#)); do
    case $1 in
      --wire)
        case ${2:-} in
          modern | legacy) wires=("$2") ;;
          both) wires=(modern legacy) ;;
          *) e2e_die "--wire takes modern, legacy or both" ;;
        esac
        shift
        ;;
      --out) out=${2:?--out needs a directory}; shift ;;
      --sidecar-bin) sidecar_bin=${2:?--sidecar-bin needs a path}; shift ;;
      --plugin-dir) plugin_dir=${2:?--plugin-dir needs a directory}; shift ;;
      --demo) demo=yes ;;
      --upstream) upstream=$(e2e_upstream_choice "${2:-}") || exit 2; shift ;;
      *) e2e_die "unknown argument $1 (try --help)" ;;
    esac
    shift
  done
  if [[ $start == no ]]; then
    e2e_require_loopback "$url"
  fi
  e2e_require_tools

  # Globals: the EXIT trap runs after main has returned.
  OUT_KEEP=${E2E_KEEP:-}
  if [[ -z $out ]]; then
    out=$(mktemp -d -t e2e-conformance.XXXXXX)
  else
    OUT_KEEP=1
    mkdir -p "$out"
  fi
  OUT_DIR=$out
  trap 'e2e_cleanup; if [[ $OUT_KEEP == 1 ]]; then e2e_log "results in $OUT_DIR"; else rm -rf "$OUT_DIR"; fi' EXIT
  trap 'exit 130' INT TERM
  export HOME=$out/home
  mkdir -p "$HOME"

  if [[ $start == rebinding ]]; then
    rebinding "$sidecar_bin" "$out" "${wires[@]}"
    return
  fi
  if [[ $start == yes ]]; then
    local kind=$upstream
    [[ $demo == yes ]] && kind=demo
    e2e_start_stack "$kind" "$sidecar_bin" "$out" "$plugin_dir"
    url=$E2E_SIDECAR_URL
  fi

  local wire scenario
  for wire in "${wires[@]}"; do
    for scenario in "${SCENARIOS[@]}"; do
      run_scenario "$url" "$wire" "$scenario" "$out"
    done
  done
  print_table
  ((FAILED == 0))
}

main "$@"
