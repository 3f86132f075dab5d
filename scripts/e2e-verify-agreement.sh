#!/usr/bin/env bash
# e2e-verify-agreement.sh runs TestAgreesWithInspector (internal/verify): the
# MCP Inspector's `--verify` (@modelcontextprotocol/inspector 2.12.0) and our
# `skills-sidecar verify` judge the same good and broken servers (the
# list) and the sidecar, in both eras, and must agree on pass or fail, except
# where the test's table says the inspector does not look by design.
#
# The Go test skips unless VERIFY_E2E_TOOLS names the e2e tools, so that
# `go test ./...` works without Node. Here a skip is a failure: the step
# passes only when go test exits 0, its output says the test passed, and
# nothing was skipped.
#
# Usage: scripts/e2e-verify-agreement.sh
#   installs the tools first when they are missing (scripts/install-e2e-tools.sh
#   is idempotent). Environment: E2E_TOOLS_DIR (default .tools), GOFLAGS.
set -euo pipefail

E2E_NAME=e2e-verify-agreement
# shellcheck source=scripts/e2e-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/e2e-lib.sh"
cd "$E2E_ROOT"

[[ ${1:-} == "" ]] || { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 2; }

scripts/install-e2e-tools.sh
log=$(mktemp -t e2e-verify-agreement.XXXXXX)
trap 'rm -f "$log"' EXIT

rc=0
VERIFY_E2E_TOOLS=$E2E_TOOLS_DIR go test -race -count=1 -timeout 20m -v \
  -run '^TestAgreesWithInspector$' ./internal/verify 2>&1 | tee "$log" || rc=$?

if ((rc != 0)); then
  e2e_log "go test failed (exit $rc)"
  exit 1
fi
if grep -q -- '--- SKIP' "$log"; then
  e2e_log "TestAgreesWithInspector skipped; a skip is not a pass here:"
  grep -B 2 -e '--- SKIP' "$log" >&2 || true
  exit 1
fi
if ! grep -q -- '^--- PASS: TestAgreesWithInspector ' "$log"; then
  e2e_log "TestAgreesWithInspector did not run (no '--- PASS: TestAgreesWithInspector' line)"
  exit 1
fi
e2e_log "TestAgreesWithInspector passed: $(grep -c -e "^    --- PASS: " "$log") cases (server and era)"
