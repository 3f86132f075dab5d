#!/usr/bin/env bash
# test.sh is the whole test suite: the one command the README gives and
# .ci/run calls. It installs what it needs (Go modules, the pinned npm peers),
# starts every server its tests use on loopback, and stops them by pid.
#
# Stages: vet and gofmt; go test -race ./...; frontmatter judged by PyYAML
# (scripts/check-pyyaml.sh: installs Debian's python3-yaml when missing, and
# TestAgreesWithPyYAML, which skips in the unit stage where no Python has
# PyYAML, must run and pass there); every fuzz target for
# FUZZTIME each (default 5000x: a count, not a duration, so a loaded
# machine cannot turn the fuzz deadline into a false failure); the Kubernetes packaging (scripts/check-k8s.sh);
# promtool on a real scrape (scripts/check-metrics.sh); TestSoakShort, a
# 20-second soak run (test/soak) and the era bridge's attacks against a
# sidecar process (test/attack, about 100 s); the end-to-end suite
# (scripts/e2e-all.sh; TestAgreesWithInspector skips in the unit stage, where
# VERIFY_E2E_TOOLS is unset, and runs in e2e: scripts/e2e-verify-agreement.sh);
# the benchmark harness in its short mode and scripts/bench-wrk.sh once (so
# they cannot rot; their numbers are printed, never asserted). The last line
# counts the stages: "stages: N passed, N failed".
#
# Environment: FUZZTIME (default 5000x), STAGES (the stages to run, e.g.
# "fuzz" or "static unit"; default all), SKIP_E2E=1, SKIP_BENCH=1,
# SKIP_K8S=1, SKIP_SOAK=1, E2E_FLAGS (passed to scripts/e2e-all.sh, e.g.
# --forwarding-only).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2

fuzztime=${FUZZTIME:-5000x}
passed=0
failed=0
report=()
failures=()

stages=" ${STAGES:-static unit pyyaml fuzz k8s kube metrics soak e2e bench} "

# stage runs one stage, its output copied to a log; a failed stage's first
# failure lines (a Go test's "--- FAIL", a panic, a data race, a FAIL line)
# are printed again beside the count at the end, where a reader of only the
# end of the output sees which test failed.
stage() {
  local name=$1 rc=0 start=$SECONDS log
  shift
  [[ $stages == *" $name "* ]] || return 0
  printf '\n##### %s\n' "$name"
  log=$(mktemp)
  "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  if ((rc == 0)); then
    passed=$((passed + 1)); report+=("$(printf '%-10s ok    %4ss' "$name" $((SECONDS - start)))")
  else
    failed=$((failed + 1)); report+=("$(printf '%-10s FAIL  %4ss (exit %s)' "$name" $((SECONDS - start)) "$rc")")
    mapfile -t -O "${#failures[@]}" failures < <(failure_lines "$name" <"$log")
  fi
  rm -f "$log"
}

# failure_lines prints, for stage $1, the first eight lines of its output
# (standard input) that name a failure, each cut to 200 characters.
failure_lines() {
  grep -E -- '^[[:space:]]*--- FAIL|^FAIL|^panic:|DATA RACE|\[FAIL\]|^not ok| FAIL  exit' | head -n 8 | cut -c1-200 | sed "s/^/$1: /"
}

static_checks() {
  go mod download || return 1
  go vet ./... || return 1
  go vet -tags soak ./test/soak || return 1
  local unformatted files
  mapfile -t files < <(git ls-files '*.go')
  unformatted=$(gofmt -l "${files[@]}")
  if [[ -n $unformatted ]]; then
    echo "gofmt would change: $unformatted"
    return 1
  fi
}

# fuzz runs every Fuzz target of every package for $fuzztime.
fuzz() {
  local rc=0 pkg dir targets t log
  log=$(mktemp)
  while IFS=' ' read -r pkg dir; do
    targets=$(grep -h -o '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u)
    for t in $targets; do
      echo "fuzz $pkg $t ($fuzztime)"
      go test -run '^$' -fuzz "^${t}\$" -fuzztime "$fuzztime" "$pkg" >"$log" 2>&1 || {
        cat "$log"; rc=1; }
    done
  done < <(go list -f '{{.ImportPath}} {{.Dir}}' ./...)
  rm -f "$log"
  return $rc
}

# soak runs TestSoakShort (test/soak/short_test.go, behind the build tag
# soak so the unit stage's go test ./... leaves it out and it runs once), and
# fails unless the test ran and passed; then a 20-second soak; then the
# era bridge's attacks of one caller, whose descriptors must come back once
# the attacker has gone (test/attack; memory printed, not judged).
soak() {
  local log rc=0
  log=$(mktemp)
  go test -race -count=1 -tags soak -run '^TestSoakShort$' -v ./test/soak >"$log" 2>&1 || rc=1
  if ((rc != 0)) || ! grep -q '^--- PASS: TestSoakShort ' "$log"; then
    cat "$log"; rm -f "$log"
    echo "TestSoakShort did not run and pass"
    return 1
  fi
  rm -f "$log"
  go run ./test/soak -duration 20s -warmup 2s || return 1
  go run ./test/attack
}

stage static static_checks
# unit_tests runs every package under the race detector, and then the raw
# socket and pipe calls again without it: a race build orders them with
# extra zero-byte calls (internal/rawsock/race.go), the shipped build does not.
unit_tests() {
  go test -race -count=1 -timeout 15m ./... || return 1
  go test -count=1 -timeout 5m ./internal/rawsock/ ./internal/h1/ ./internal/hop/ ./internal/stdio/
}
stage unit unit_tests
stage pyyaml scripts/check-pyyaml.sh
stage fuzz fuzz
if [[ ${SKIP_K8S:-} != 1 ]]; then
  stage k8s scripts/check-k8s.sh
fi
# kube: the chart and the kustomize base in a real control plane
# (scripts/check-kube.sh; binaries built once into .tools/). SKIP_KUBE=1.
if [[ ${SKIP_KUBE:-} != 1 ]]; then
  stage kube scripts/check-kube.sh
fi
stage metrics scripts/check-metrics.sh
if [[ ${SKIP_SOAK:-} != 1 ]]; then
  stage soak soak
fi
if [[ ${SKIP_E2E:-} != 1 ]]; then
  # shellcheck disable=SC2086
  stage e2e scripts/e2e-all.sh ${E2E_FLAGS:-}
fi
# bench_short runs the harness in its CI mode, with nginx (Debian's
# nginx-light) installed first so the plain-hop baseline has its rows, then
# scripts/bench-wrk.sh in its shortest form.
bench_short() {
  # shellcheck source=scripts/e2e-lib.sh
  source scripts/e2e-lib.sh # e2e_install_nginx (defines functions only)
  e2e_install_nginx || echo "nginx-light could not be installed: the nginx rows will say unavailable"
  go run ./bench/cmd/skillsbench -short -strict -q
  # The measurement outside the harness, once through each hop, so it cannot
  # rot either: it fails if a hop cannot start or answers a call wrong.
  # ERAS=modern and STDIO=0: the harness run above has just measured legacy
  # tools/call through every hop and the stdio path (the sealed-session
  # path's calls are legacy ones); about 40 s in all.
  DURATION=1s ROUNDS=1 CONNS=1 ERAS=modern STRACE_DURATION=1s BENCHTIME=300x STDIO=0 scripts/bench-wrk.sh
}
if [[ ${SKIP_BENCH:-} != 1 ]]; then
  stage bench bench_short
fi

printf '\n'
if ((${#failures[@]} > 0)); then
  printf '%s\n' "${failures[@]}"
fi
printf '%s\n' "${report[@]}"
printf 'stages: %d passed, %d failed\n' "$passed" "$failed"
((failed == 0))
