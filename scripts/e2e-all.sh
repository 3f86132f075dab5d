#!/usr/bin/env bash
# e2e-all.sh runs the whole end-to-end suite in order, goes on after a failed
# step, prints one row per step and "N passed, N failed" counting steps.
# Exits 1 when any step failed.
#
# Usage: scripts/e2e-all.sh [--forwarding-only]
#   --forwarding-only  skip the steps that need the sidecar's skills support
#                      (inspector --verify, the verify/inspector agreement
#                      and the conformance scenarios)
#
# Steps: install the pinned npm peers; the three self-tests (the checkers must
# refuse broken inputs); build bin/skills-sidecar; e2e-inspector.sh (the
# sidecar with examples/plugin is invisible to the inspector CLI in front of
# server-everything and of the dual-era test/e2e/modern-upstream.mjs);
# e2e-inspector-verify.sh and e2e-conformance.sh against a sidecar they start
# with examples/plugin, in front of the dual-era upstream (both eras) and of
# server-everything (inspector --verify in both eras, the modern one through
# the era bridge; conformance on the legacy wire);
# e2e-stdio.sh (stdio servers run by the sidecar: server-everything's stdio
# mode and server-filesystem, through the Inspector CLI in both eras);
# e2e-verify-agreement.sh (TestAgreesWithInspector: `skills-sidecar verify` and
# the inspector's --verify on the same good and broken servers; a skip fails);
# e2e-draft-agents.sh (verify passes test/e2e/draft-agents-server.mjs, an
# agents server written from the agents draft, fails each of its faults, and
# the sidecar in front of it answers agents/* as it does);
# e2e-host-compat.sh (--host-compat prompts,tools in front of
# server-everything, judged by the Inspector CLI on both eras: merged lists,
# a colliding name left to the upstream, served bytes, structured output the
# TypeScript SDK validates);
# e2e-transparency.sh (the conformance suites active, pending, draft and
# active at 2025-06-18 and 2025-03-26, directly and through the sidecar, in
# front of server-everything (and of its stdio mode, run by the sidecar,
# against its own HTTP mode), both go-sdk demo upstreams and the modern
# upstream, compared check by check against test/e2e/transparency-allow.txt).
# e2e-transparency.sh --bridged (each scenario passing on the
# legacy wire in front of server-everything and the stateful go-sdk demo
# passes through the era bridge on the 2026-07-28 wire).
# e2e-tap-judge.sh (the digest published from a forwarded read of a crafted
# reply is what the TypeScript SDK client took, or nothing).
# e2e-replicas.sh (the conformance suite and the Inspector in
# legacy mode through two and three sidecars behind nginx, round-robin, in
# front of a modern-only upstream, as through one sidecar).
# e2e-conformance.sh --rebinding (dns-rebinding-protection through the sidecar
# gives what the go-sdk upstream alone gives, on both wires).
# Every server runs on a free loopback port and is stopped by pid.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
skills=yes
case ${1:-} in
  --forwarding-only) skills=no ;;
  '') ;;
  *) echo "usage: scripts/e2e-all.sh [--forwarding-only]" >&2; exit 2 ;;
esac

names=()
results=()
passed=0
failed=0

# step NAME CMD... runs one step and records its exit code.
step() {
  local name=$1 rc=0 start=$SECONDS
  shift
  printf '\n=== %s: %s\n' "$name" "$*"
  "$@" || rc=$?
  names+=("$name")
  if ((rc == 0)); then
    passed=$((passed + 1))
    results+=("ok    $((SECONDS - start))s")
  else
    failed=$((failed + 1))
    results+=("FAIL  exit $rc, $((SECONDS - start))s")
  fi
  return 0
}

step install scripts/install-e2e-tools.sh
step inspector-self-test scripts/e2e-inspector.sh --self-test
step conformance-self-test scripts/e2e-conformance.sh --self-test
step verify-self-test scripts/e2e-inspector-verify.sh --self-test
step build go build -o bin/skills-sidecar ./cmd/skills-sidecar
step build-upstream go build -o bin/demo-upstream ./cmd/demo-upstream
step inspector scripts/e2e-inspector.sh --plugin-dir examples/plugin
if [[ $skills == yes ]]; then
  # Both eras in front of the dual-era upstream, and in front of the
  # legacy-only server-everything, where the modern era is the era bridge's
  # (Inspector --protocol-era modern --verify through it).
  step verify-modern-up scripts/e2e-inspector-verify.sh --start-sidecar --upstream modern --plugin-dir examples/plugin
  step verify-everything scripts/e2e-inspector-verify.sh --start-sidecar --upstream everything --plugin-dir examples/plugin --era both
  # The same in front of a modern-only upstream, where the
  # legacy era is the bridge's (Inspector --protocol-era legacy --verify).
  step verify-modern-only scripts/e2e-inspector-verify.sh --start-sidecar --upstream modern-only --plugin-dir examples/plugin --era both
  # Stdio servers (server-everything's stdio mode, server-filesystem) run by
  # the sidecar itself: the Inspector in both eras, nothing left after SIGTERM.
  step stdio scripts/e2e-stdio.sh
  # Our verify and the inspector's agree on the broken servers.
  step verify-agreement scripts/e2e-verify-agreement.sh
  step conform-modern-up scripts/e2e-conformance.sh --start-sidecar --upstream modern --plugin-dir examples/plugin
  # A stateless go-sdk upstream on the default 2026-07-28
  # wire, and server-everything on the legacy wire (below).
  step verify-go-up scripts/e2e-inspector-verify.sh --start-sidecar --upstream go --plugin-dir examples/plugin
  step conform-go-up scripts/e2e-conformance.sh --start-sidecar --upstream go --plugin-dir examples/plugin --wire modern
  step conform-everything scripts/e2e-conformance.sh --start-sidecar --upstream everything --plugin-dir examples/plugin --wire legacy
  # Verify and the sidecar against an agents peer written from the
  # draft (clean, each fault, the sidecar in front of it).
  step draft-agents scripts/e2e-draft-agents.sh
  # Skills as prompts and tools for hosts without the extension.
  step host-compat scripts/e2e-host-compat.sh
  # The whole official server suite, directly and through the
  # sidecar, against every upstream kind; a changed check fails.
  step transparency scripts/e2e-transparency.sh
  # Every scenario that passes on the legacy wire in front of a
  # legacy-only upstream passes bridged on the 2026-07-28 wire.
  step legacy-vs-bridged scripts/e2e-transparency.sh --bridged
  # Digests of the bytes an upstream serving catalog files
  # (listed and templated, rewritten to CRLF) sends, judged by the
  # Inspector's --verify; a drifting upstream must fail it.
  step upstream-files scripts/e2e-upstream-files.sh
  # What the tap publishes from a crafted forwarded read is what the
  # TypeScript SDK client took from it, or nothing.
  step tap-judge scripts/e2e-tap-judge.sh
  # What new callers (none, junk cookies, a bearer token) cost
  # server-everything, counted by nginx in between.
  step upstream-count scripts/e2e-upstream-count.sh
  # The reverse: every scenario that passes on the
  # 2026-07-28 wire in front of a modern-only upstream passes bridged on
  # the legacy wire.
  step modern-vs-bridged scripts/e2e-transparency.sh --reverse
  # Legacy sessions minted in front of a modern-only upstream
  # work through two and three sidecars behind nginx with no affinity.
  step replicas scripts/e2e-replicas.sh
fi
# DNS rebinding refused through the sidecar exactly as by the
# go-sdk upstream alone, on both wires.
step dns-rebinding scripts/e2e-conformance.sh --rebinding --wire both

printf '\n%-22s  %s\n' step result
for i in "${!names[@]}"; do
  printf '%-22s  %s\n' "${names[$i]}" "${results[$i]}"
done
printf 'e2e: %d passed, %d failed\n' "$passed" "$failed"
((failed == 0))
