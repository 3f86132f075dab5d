#!/usr/bin/env bash
# relock.sh rewrites test/e2e/package-lock.json from test/e2e/package.json.
# Run it after changing a pinned version, then commit both files; the install
# script (scripts/install-e2e-tools.sh) installs from the lock with `npm ci`.
#
# - .npmrc beside this script sets omit-lockfile-registry-resolved=true, so
#   the lock has no `resolved` fields (no registry host names), only versions
#   and integrity hashes; npm ci fetches name@version from the configured
#   registry and checks the hash.
# - vite (pulled in by the inspector's web client) lists the Windows-only
#   optional dependency napi-windows-process-start-time, which the registry
#   this project reaches answers with 404. `npm install` skips it, but leaves
#   it out of the lock, and `npm ci` then refuses the lock as out of sync
#   ("Missing: napi-windows-process-start-time@ from lock file"). A stub entry
#   marked optional and os [win32] satisfies the check, and npm skips it on
#   Linux without fetching anything.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

timeout 600 npm install --package-lock-only --ignore-scripts --no-audit --no-fund --loglevel=error
jq '.packages["node_modules/napi-windows-process-start-time"] //= {"version": "0.1.0", "optional": true, "os": ["win32"]}' \
  package-lock.json >package-lock.json.new
mv package-lock.json.new package-lock.json
if grep -q '"resolved"' package-lock.json; then
  echo "relock: package-lock.json has resolved fields; is .npmrc being read?" >&2
  exit 1
fi
echo "relock: wrote package-lock.json ($(jq '.packages | length' package-lock.json) entries)" >&2
