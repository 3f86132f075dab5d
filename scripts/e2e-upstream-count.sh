#!/usr/bin/env bash
# e2e-upstream-count.sh counts, at an upstream the project did not write,
# what the sidecar asks of it on a new caller's behalf: nginx
# (Debian's nginx-light, installed when missing) logs every request body
# between the sidecar and server-everything, which lists its resources and
# resource templates and serves no skill:// URI.
#
#   ok  the listings, read directly, have P resources/list pages and T
#       resources/templates/list pages (counted here, not by the sidecar)
#   ok  a new caller's first skills/list page costs exactly P + T listing
#       requests, no gate probe (the first listing's result admits the
#       caller), and no resources/read
#   ok  the same caller's next page, and another session of the same
#       authorization context, cost no listing
#   ok  five callers with junk cookies, and one with a bearer token, cost
#       one discovery each, never more
#   ok  with --upstream-files-ttl 1ms the warm caller costs a discovery
#       again: the warm check can fail
#
# Usage: scripts/e2e-upstream-count.sh. Prints a row per check and
# "upstream-count: N passed, N failed"; exits 1 when a check failed, 2 on a
# setup error. Loopback only; every process it starts is stopped by pid.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/e2e-lib.sh
source scripts/e2e-lib.sh
E2E_NAME=e2e-upstream-count
e2e_require_tools
e2e_require_nginx
work=$(mktemp -d -t e2e-upstream-count.XXXXXX)
trap 'e2e_cleanup; if [[ ${E2E_KEEP:-} == 1 ]]; then e2e_log "kept $work"; else rm -rf "$work"; fi' EXIT
trap 'exit 130' INT TERM
go build -o "$work/skills-sidecar" ./cmd/skills-sidecar || e2e_die "cannot build skills-sidecar"
export SKILLS_SIDECAR_DROP_UNKNOWN_TOOLS=true # the example agents name the demo's tools


e2e_start_everything "$work/everything.log"
every_port=${E2E_EVERYTHING_URL#http://127.0.0.1:}
every_port=${every_port%%/*}
free_port hop
hop_url=http://127.0.0.1:$hop/mcp
e2e_start_nginx "$work/nginx" "$hop_url" "  log_format bodies escape=json '\$request_method \$request_body';
  access_log $work/access.log bodies;
  server {
    listen 127.0.0.1:$hop;
    client_body_buffer_size 1m;
    location / {
      proxy_pass http://127.0.0.1:$every_port;
      proxy_http_version 1.1;
      proxy_set_header Connection \"\";
      proxy_buffering off;
      proxy_read_timeout 300s;
    }
  }"

# post URL SESSION BODY [HEADER...] prints the JSON-RPC message of the reply
# (the first data: line of an SSE reply); with SESSION "new" it prints the
# session id the reply's Mcp-Session-Id header carries instead.
post() {
  local url=$1 session=$2 body=$3 hdr=()
  shift 3
  [[ $session != new && -n $session ]] && hdr+=(-H "Mcp-Session-Id: $session")
  for h in "$@"; do hdr+=(-H "$h"); done
  if [[ $session == new ]]; then
    curl -sS -m 30 -D - -o /dev/null -X POST "$url" -H 'Content-Type: application/json' \
      -H 'Accept: application/json, text/event-stream' "${hdr[@]}" --data "$body" |
      tr -d '\r' | sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: //p'
    return
  fi
  curl -sS -m 30 -X POST "$url" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2025-11-25' "${hdr[@]}" --data "$body" | sed -n 's/^data: //p; /^{/p' | head -n 1
}

# session URL [HEADER...] opens a legacy session and prints its id.
session() {
  local url=$1 id
  shift
  id=$(post "$url" new '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e-upstream-count","version":"1"}}}' "$@")
  [[ -n $id ]] || e2e_die "no session from $url"
  post "$url" "$id" '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$@" >/dev/null
  echo "$id"
}

# pages URL SESSION METHOD KEY prints how many pages METHOD's listing has.
pages() {
  local url=$1 sid=$2 method=$3 key=$4 cursor='' n=0 reply params
  while ((n < 50)); do
    params='{}'
    [[ -n $cursor ]] && params=$(jq -cn --arg c "$cursor" '{cursor: $c}')
    reply=$(post "$url" "$sid" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$method\",\"params\":$params}")
    jq -e ".result.$key" >/dev/null <<<"$reply" || e2e_die "$method: $reply"
    n=$((n + 1))
    cursor=$(jq -r '.result.nextCursor // empty' <<<"$reply")
    [[ -z $cursor ]] && break
  done
  echo "$n"
}

# count METHOD FROM prints how many logged requests since line FROM of the
# access log carry METHOD.
count() { tail -n +"$(($2 + 1))" "$work/access.log" | grep -cF "\\\"method\\\":\\\"$1\\\"" || true; }
lines() { wc -l <"$work/access.log"; }

# cost FROM prints "LIST TEMPLATES READS PROBES" since line FROM.
cost() { echo "$(count resources/list "$1") $(count resources/templates/list "$1") $(count resources/read "$1") $(count ping "$1")"; }

skills_list='{"jsonrpc":"2.0","id":2,"method":"skills/list","params":{}}'

# The listings as they are, read directly (nginx not in between).
direct=$(session "$E2E_EVERYTHING_URL")
P=$(pages "$E2E_EVERYTHING_URL" "$direct" resources/list resources)
T=$(pages "$E2E_EVERYTHING_URL" "$direct" resources/templates/list resourceTemplates)
if ((P >= 1 && T >= 1)); then
  e2e_row ok "server-everything lists its resources in $P pages and its templates in $T, read directly"
else
  e2e_row FAIL "server-everything's listings: $P resources/list pages, $T templates pages (want one or more of each)"
fi

# new_caller URL WHAT [HEADER...]: a first skills/list page costs one
# discovery (exactly P + T listing requests), no probe, no read.
new_caller() {
  local url=$1 what=$2 sid from c
  shift 2
  sid=$(session "$url" "$@")
  from=$(lines)
  post "$url" "$sid" "$skills_list" "$@" | jq -e '.result.skills | length > 0' >/dev/null || e2e_die "skills/list failed"
  sleep 0.3 # nginx logs a request when it completes
  read -r -a c <<<"$(cost "$from")"
  if ((c[0] == P && c[1] == T && c[2] == 0 && c[3] == 0)); then
    e2e_row ok "$what: first skills/list page cost ${c[0]} resources/list, ${c[1]} templates/list, ${c[2]} reads, ${c[3]} probes"
  else
    e2e_row FAIL "$what: first skills/list page cost ${c[0]} resources/list (want $P), ${c[1]} templates/list (want $T), ${c[2]} reads (want 0), ${c[3]} probes (want 0: the first listing admits)"
  fi
  LAST_SID=$sid
}

# warm URL SID WHAT WANT [HEADER...]: the next page costs WANT discoveries.
warm() {
  local url=$1 sid=$2 what=$3 want=$4 from c
  shift 4
  from=$(lines)
  post "$url" "$sid" "$skills_list" "$@" | jq -e '.result.skills' >/dev/null || e2e_die "skills/list failed"
  sleep 0.3
  read -r -a c <<<"$(cost "$from")"
  if ((c[0] == want * P && c[2] == 0)); then
    e2e_row ok "$what: cost ${c[0]} resources/list and ${c[2]} reads"
  else
    e2e_row FAIL "$what: cost ${c[0]} resources/list (want $((want * P))) and ${c[2]} reads (want 0)"
  fi
}

e2e_start_sidecar "$work/skills-sidecar" "$hop_url" "$work/sidecar.log" examples/plugin
sleep 1 # the era detector's first probes
new_caller "$E2E_SIDECAR_URL" "a new caller without credentials"
warm "$E2E_SIDECAR_URL" "$LAST_SID" "the same caller's next skills/list" 0
other=$(session "$E2E_SIDECAR_URL")
warm "$E2E_SIDECAR_URL" "$other" "another session of the same authorization context" 0
for i in 1 2 3 4 5; do
  new_caller "$E2E_SIDECAR_URL" "a caller with junk cookie $i" "Cookie: junk=$RANDOM$i"
done
new_caller "$E2E_SIDECAR_URL" "a caller with a bearer token" "Authorization: Bearer e2e-$RANDOM"
e2e_stop "$E2E_SIDECAR_PID"

# The warm check can fail: with a TTL shorter than the gap between two
# pages, the second page asks again.
E2E_SIDECAR_EXTRA=(--upstream-files-ttl 1ms)
e2e_start_sidecar "$work/skills-sidecar" "$hop_url" "$work/sidecar-ttl.log" examples/plugin
unset E2E_SIDECAR_EXTRA
sleep 1
# A TTL this short may expire within the first page itself, so that page
# is not judged here: only the warm page the check is about.
sid=$(session "$E2E_SIDECAR_URL")
post "$E2E_SIDECAR_URL" "$sid" "$skills_list" | jq -e '.result.skills' >/dev/null || e2e_die "skills/list failed"
sleep 0.1
if warm "$E2E_SIDECAR_URL" "$sid" "x" 0 | grep -q '^FAIL'; then
  e2e_row ok "with --upstream-files-ttl 1ms the warm page asks again, and the warm check sees it"
else
  e2e_row FAIL "with --upstream-files-ttl 1ms the warm check still passed: it cannot fail"
fi

e2e_tally upstream-count
