#!/usr/bin/env bash
# e2e-replicas.sh checks that the sessions the era bridge mints for legacy
# clients work on every replica (docs/replicas.md): two and three sidecars
# reading one session keys file, in front of one modern-only upstream
# (test/e2e/modern-upstream.mjs --modern-only), behind nginx (Debian's
# nginx-light, installed when missing) balancing round-robin with no
# affinity, so a session's requests land on every replica in turn.
#
#   ok  the official conformance suite (active, on the 2025-11-25 wire)
#       through the replicas gives, check by check, what it gives through
#       one sidecar (go run ./test/transparency), but for the one
#       difference test/e2e/replicas-allow.txt allows with its reason (a
#       DELETE revokes on the replica that got it only)
#   ok  the MCP Inspector CLI in legacy mode (--protocol-era legacy) gets,
#       through the replicas, what it gets through one sidecar
#       (tools/list, resources/list, prompts/list, a tools/call)
#   ok  nginx's log shows every replica serving requests of minted sessions
#   ok  two replicas with a key each (no shared file) fail the suite
#       comparison and the Inspector's: the checks can fail
#
# Usage: scripts/e2e-replicas.sh [--replicas "2 3"]. Prints a row per
# check and "replicas: N passed, N failed"; exits 1 when a check failed, 2
# on a setup error. E2E_KEEP=1 keeps the work folder. Loopback only; every
# process it starts is stopped by pid.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/e2e-lib.sh
source scripts/e2e-lib.sh
E2E_NAME=e2e-replicas

counts=(2 3)
while (($#)); do
  case $1 in
    --replicas) read -r -a counts <<<"${2:?--replicas needs a list}"; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) e2e_die "unknown argument $1 (try --help)" ;;
  esac
  shift
done

e2e_require_tools
e2e_require_nginx
work=$(mktemp -d -t e2e-replicas.XXXXXX)
trap 'e2e_cleanup; if [[ ${E2E_KEEP:-} == 1 ]]; then e2e_log "kept $work"; else rm -rf "$work"; fi' EXIT
trap 'exit 130' INT TERM
go build -o "$work/skills-sidecar" ./cmd/skills-sidecar || e2e_die "cannot build skills-sidecar"
go build -o "$work/transparency" ./test/transparency || e2e_die "cannot build transparency"
export HOME=$work/home
mkdir -p "$HOME"

e2e_start_modern_upstream "$work/upstream.log" --modern-only
"$work/skills-sidecar" session-keys new >"$work/keys" || e2e_die "session-keys new failed"

# replicas N KEYS NAME starts N sidecars reading the keys file KEYS (a
# missing file: a key each) and nginx in front of them; sets URL.
replicas() {
  local n=$1 keys=$2 name=$3 i servers='' port
  mkdir -p "$work/$name"
  for ((i = 0; i < n; i++)); do
    E2E_SIDECAR_EXTRA=(--session-keys-file "$keys")
    e2e_start_sidecar "$work/skills-sidecar" "$E2E_MODERN_URL" "$work/$name/sidecar-$i.log" "$E2E_ROOT/examples/plugin"
    port=${E2E_SIDECAR_URL#http://127.0.0.1:}
    servers+="    server 127.0.0.1:${port%%/*};"$'\n'
  done
  unset E2E_SIDECAR_EXTRA
  free_port port
  URL=http://127.0.0.1:$port/mcp
  # Round-robin, no affinity: each request goes to the next replica.
  e2e_start_nginx "$work/$name/nginx" "$URL" "  log_format replica '\$upstream_addr \$request_method \$http_mcp_session_id';
  access_log $work/$name/access.log replica;
  upstream replicas {
$servers  }
  server {
    listen 127.0.0.1:$port;
    location / {
      proxy_pass http://replicas;
      proxy_set_header Host \$http_host;
      proxy_http_version 1.1;
      proxy_set_header Connection \"\";
      proxy_buffering off;
      proxy_read_timeout 300s;
    }
  }"
}

# suite URL OUT runs the conformance suite active on the legacy wire.
suite() {
  mkdir -p "$2"
  timeout -k 5 "${E2E_SUITE_TIMEOUT:-300}" "$E2E_NODE" "$E2E_CONFORMANCE_JS" server --url "$1" \
    --suite active --spec-version 2025-11-25 -o "$2" >"$2.log" 2>&1 </dev/null || true
}

# inspect URL OUT makes the Inspector CLI calls in legacy mode, one JSON
# file each.
inspect() {
  local url=$1 out=$2
  mkdir -p "$out"
  e2e_inspector "$url" --format json --protocol-era legacy --method tools/list >"$out/tools-list.json" 2>&1 || echo "exit $?" >>"$out/tools-list.json"
  e2e_inspector "$url" --format json --protocol-era legacy --method resources/list >"$out/resources-list.json" 2>&1 || echo "exit $?" >>"$out/resources-list.json"
  e2e_inspector "$url" --format json --protocol-era legacy --method prompts/list >"$out/prompts-list.json" 2>&1 || echo "exit $?" >>"$out/prompts-list.json"
  e2e_inspector "$url" --format json --protocol-era legacy --method tools/call --tool-name get-sum --tool-arg a=2 --tool-arg b=3 >"$out/tools-call.json" 2>&1 || echo "exit $?" >>"$out/tools-call.json"
}

# inspector_diffs NAME sets diffs to the Inspector calls through the
# replicas NAME whose output differs from the reference's.
inspector_diffs() {
  local f
  diffs=()
  for f in "$work/reference-inspector"/*.json; do
    cmp -s "$f" "$work/$1/inspector/${f##*/}" || diffs+=("${f##*/}")
  done
}

# The reference: one sidecar. Its Inspector calls must have succeeded, or
# equal outputs would mean nothing.
e2e_start_sidecar "$work/skills-sidecar" "$E2E_MODERN_URL" "$work/one.log" "$E2E_ROOT/examples/plugin"
one=$E2E_SIDECAR_URL
suite "$one" "$work/reference/modern-only/legacy-active/direct"
inspect "$one" "$work/reference-inspector"
for f in "$work/reference-inspector"/*.json; do
  jq -e 'has("error") | not' "$f" >/dev/null 2>&1 || e2e_die "the Inspector's ${f##*/} through one sidecar failed: $(head -c 300 "$f")"
done

# compare NAME expects the suite through the replicas NAME to match the
# reference; prints the comparison's exit code.
compare() {
  local name=$1 root=$work/compare-$1
  mkdir -p "$root/modern-only/legacy-active"
  ln -s "$work/reference/modern-only/legacy-active/direct" "$root/modern-only/legacy-active/direct"
  ln -s "$work/$name/suite" "$root/modern-only/legacy-active/sidecar"
  local rc=0
  "$work/transparency" -allow test/e2e/replicas-allow.txt "$root" >"$work/$name/compare.txt" 2>&1 || rc=$?
  echo "$rc"
}

for n in "${counts[@]}"; do
  name=shared-$n
  replicas "$n" "$work/keys" "$name"
  e2e_log "$n replicas behind $URL"
  suite "$URL" "$work/$name/suite"
  rc=$(compare "$name")
  if [[ $rc == 0 ]]; then
    e2e_row ok "$n replicas, one keys file: the conformance suite (active, 2025-11-25) as through one sidecar ($(tail -n 1 "$work/$name/compare.txt"))"
  else
    e2e_row FAIL "$n replicas, one keys file: the conformance suite differs from one sidecar's:"
    head -n 40 "$work/$name/compare.txt" | sed 's/^/      /'
  fi
  inspect "$URL" "$work/$name/inspector"
  inspector_diffs "$name"
  if ((${#diffs[@]} == 0)); then
    e2e_row ok "$n replicas: the Inspector CLI in legacy mode gets what it gets through one sidecar (4 calls)"
  else
    e2e_row FAIL "$n replicas: the Inspector CLI in legacy mode differs in ${diffs[*]}: $(head -c 300 "$work/$name/inspector/${diffs[0]}")"
  fi
  # Every replica served requests that carried a minted session id.
  spread=$(awk '$3 != "-" && $3 != "" { print $1 }' "$work/$name/access.log" | sort -u | wc -l)
  if ((spread == n)); then
    e2e_row ok "$n replicas: each served requests of minted sessions (nginx's log)"
  else
    e2e_row FAIL "$n replicas: only $spread served requests of minted sessions"
  fi
done

# The checks can fail: two replicas with a key each.
replicas 2 "$work/absent" keyless
suite "$URL" "$work/keyless/suite"
rc=$(compare keyless)
if [[ $rc == 1 ]]; then
  e2e_row ok "2 replicas with a key each: the suite comparison fails, as it must ($(tail -n 1 "$work/keyless/compare.txt"))"
else
  e2e_row FAIL "2 replicas with a key each: the suite comparison exited $rc, want 1 (the check cannot fail)"
fi
inspect "$URL" "$work/keyless/inspector"
inspector_diffs keyless
if ((${#diffs[@]} > 0)); then
  e2e_row ok "2 replicas with a key each: the Inspector CLI's calls differ (${diffs[*]}), as they must"
else
  e2e_row FAIL "2 replicas with a key each: the Inspector CLI's calls match one sidecar's (the check cannot fail)"
fi
e2e_tally replicas
