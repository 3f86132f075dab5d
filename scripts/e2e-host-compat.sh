#!/usr/bin/env bash
# shellcheck disable=SC2016 # single-quoted jq programs use jq's own $variables
# e2e-host-compat.sh: skills as prompts and tools (--host-compat
# prompts,tools), judged by the MCP Inspector CLI, whose TypeScript SDK client
# validates a tool's structuredContent against the outputSchema it listed.
# server-everything (its own tools and prompts, legacy era only) runs behind
# the sidecar with a copy of examples/plugin plus a skill "prompt", and
# --host-compat-prefix simple-: the sidecar's prompt for that skill would be
# "simple-prompt", a name server-everything uses, so it must stay the
# upstream's. On each era (legacy, and modern through the era bridge):
#   1. tools/list and prompts/list: the upstream's entries as it lists them
#      directly (the modern wire's own fields aside), then the sidecar's
#      (the example's two skills and two agents as prompts);
#   2. prompts/get simple-prompt is the upstream's answer;
#   3. prompts/get of a skill embeds the text resources/read serves;
#   4. tools/call simple-load and simple-read return that text, and the
#      Inspector accepts their structured output (exit 0); an unknown skill
#      is a tool error (exit 5).
# And without --host-compat, both listings are the upstream's exactly.
# Prints one row per check and "N passed, N failed"; exits 1 when a check
# failed, 2 on a setup error.
#
# Usage: scripts/e2e-host-compat.sh
# Environment: E2E_TOOLS_DIR (see install-e2e-tools.sh); E2E_SIDECAR_BIN, a
# skills-sidecar binary to judge instead of building bin/skills-sidecar (for
# example one whose output schema its results break, to see it fail).
set -euo pipefail

E2E_NAME=e2e-host-compat
# shellcheck source=scripts/e2e-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/e2e-lib.sh"

BIN=${E2E_SIDECAR_BIN:-$E2E_ROOT/bin/skills-sidecar}
PREFIX=simple-
SKILL_URI=skill://incident-summary/SKILL.md
FILE_URI=skill://acme/billing/refunds/SKILL.md

e2e_require_tools
if [[ -z ${E2E_SIDECAR_BIN:-} ]]; then
  (cd "$E2E_ROOT" && go build -o bin/skills-sidecar ./cmd/skills-sidecar) || e2e_die "cannot build the sidecar"
fi
WORK=$(mktemp -d)
trap 'e2e_cleanup; [[ -n ${E2E_KEEP:-} ]] || rm -rf "$WORK"' EXIT
export HOME=$WORK/home
mkdir -p "$HOME"

# The plugin: the example, and a skill whose derived prompt name collides.
PLUGIN=$WORK/plugin
cp -r "$E2E_ROOT/examples/plugin" "$PLUGIN"
mkdir -p "$PLUGIN/skills/prompt"
printf -- '---\nname: prompt\ndescription: A skill whose prompt name the upstream uses.\n---\n# prompt\n' >"$PLUGIN/skills/prompt/SKILL.md"

e2e_start_everything "$WORK/everything.log"
E2E_SIDECAR_EXTRA=(--auth-gate none --host-compat prompts,tools --host-compat-prefix "$PREFIX")
e2e_start_sidecar "$BIN" "$E2E_EVERYTHING_URL" "$WORK/sidecar.log" "$PLUGIN"
COMPAT=$E2E_SIDECAR_URL
E2E_SIDECAR_EXTRA=(--auth-gate none)
e2e_start_sidecar "$BIN" "$E2E_EVERYTHING_URL" "$WORK/plain.log" "$PLUGIN"
PLAIN=$E2E_SIDECAR_URL

# call FILE URL ERA ARGS... runs one Inspector call, its JSON output in FILE,
# and echoes its exit code.
call() {
  local out=$1 url=$2 era=$3
  shift 3
  local rc=0
  e2e_inspector "$url" --protocol-era "$era" --format json "$@" >"$out" 2>"$out.err" || rc=$?
  echo "$rc"
}

# The fields only the modern wire has, removed before comparing with the
# direct (legacy) call: as e2e-inspector.sh's JQ_ERA_BRIDGED.
JQ_ERA='if (.result? | type) == "object" then
    .result |= (del(.resultType, .ttlMs, .cacheScope, .nextCursor)
      | del(._meta["io.modelcontextprotocol/serverInfo"])
      | if ._meta == {} then del(._meta) else . end
      | if (.tools? | type) == "array" then .tools |= map(del(.execution)) else . end)
  else . end'

# check NAME JQ_EXPR FILE...: a row, ok when jq -e EXPR over the files
# (slurped) is true.
check() {
  local name=$1 expr=$2
  shift 2
  if jq -e -s --arg p "$PREFIX" "$expr" "$@" >/dev/null 2>"$WORK/jq.err"; then
    e2e_row ok "$name"
  else
    e2e_row FAIL "$name: $(head -c 300 "$WORK/jq.err")"
  fi
}

for kind in tools prompts; do
  call "$WORK/direct-$kind.json" "$E2E_EVERYTHING_URL" legacy --method "$kind/list" >/dev/null
  call "$WORK/plain-$kind.json" "$PLAIN" legacy --method "$kind/list" >/dev/null
  check "off: $kind/list is the upstream's" '.[0] == .[1]' "$WORK/direct-$kind.json" "$WORK/plain-$kind.json"
done
call "$WORK/direct-prompt.json" "$E2E_EVERYTHING_URL" legacy --method prompts/get --prompt-name simple-prompt >/dev/null

for era in legacy modern; do
  d=$WORK/$era
  mkdir -p "$d"
  call "$d/tools.json" "$COMPAT" "$era" --method tools/list >/dev/null
  check "$era: tools/list = the upstream's, then ${PREFIX}load and ${PREFIX}read" \
    "(.[0].result.tools | map(select(.name | startswith(\$p) | not))) == .[1].result.tools
     and (.[0].result.tools | map(.name) | .[-2:]) == [\$p + \"load\", \$p + \"read\"]
     and (.[0].result.tools[-2:] | all(.outputSchema.type == \"object\"))" \
    <(jq "$JQ_ERA" "$d/tools.json") <(jq "$JQ_ERA" "$WORK/direct-tools.json")
  call "$d/prompts.json" "$COMPAT" "$era" --method prompts/list >/dev/null
  check "$era: prompts/list = the upstream's (simple-prompt its own), then the skills' and agents'" \
    "(.[0].result.prompts | map(select(.name | startswith(\$p) and . != \$p + \"prompt\" | not))) == .[1].result.prompts
     and (.[0].result.prompts | map(.name) | .[-4:]) == [\$p + \"acme__billing__refunds\", \$p + \"agent__billing-triage\", \$p + \"agent__incident-scribe\", \$p + \"incident-summary\"]" \
    <(jq "$JQ_ERA" "$d/prompts.json") <(jq "$JQ_ERA" "$WORK/direct-prompts.json")
  call "$d/prompt-up.json" "$COMPAT" "$era" --method prompts/get --prompt-name simple-prompt >/dev/null
  check "$era: prompts/get simple-prompt is the upstream's" '.[0] == .[1]' \
    <(jq "$JQ_ERA" "$d/prompt-up.json") <(jq "$JQ_ERA" "$WORK/direct-prompt.json")

  call "$d/read.json" "$COMPAT" "$era" --method resources/read --uri "$SKILL_URI" >/dev/null
  call "$d/prompt.json" "$COMPAT" "$era" --method prompts/get --prompt-name "${PREFIX}incident-summary" >/dev/null
  check "$era: prompts/get embeds SKILL.md as resources/read serves it" \
    '.[0].result.messages[0].content == {type: "resource", resource: .[1].result.contents[0]}
     and (.[0].result.messages[1:] | all(.content.type == "resource_link"))' "$d/prompt.json" "$d/read.json"

  call "$d/read2.json" "$COMPAT" "$era" --method resources/read --uri "$FILE_URI" >/dev/null
  rc=$(call "$d/load.json" "$COMPAT" "$era" --method tools/call --tool-name "${PREFIX}load" --tool-arg skill=acme/billing/refunds)
  check "$era: ${PREFIX}load (exit $rc, structured output valid) returns SKILL.md as served" \
    "$rc == 0 and .[0].result.structuredContent.text == .[1].result.contents[0].text
     and .[0].result.content[0].text == .[1].result.contents[0].text" "$d/load.json" "$d/read2.json"
  rc=$(call "$d/readtool.json" "$COMPAT" "$era" --method tools/call --tool-name "${PREFIX}read" --tool-arg "uri=$SKILL_URI")
  check "$era: ${PREFIX}read (exit $rc, structured output valid) returns the file as served" \
    "$rc == 0 and .[0].result.structuredContent.text == .[1].result.contents[0].text" "$d/readtool.json" "$d/read.json"
  rc=$(call "$d/nope.json" "$COMPAT" "$era" --method tools/call --tool-name "${PREFIX}load" --tool-arg skill=nope)
  check "$era: an unknown skill is a tool error (exit $rc, want 5)" "$rc == 5 and .[0].result.isError == true" "$d/nope.json"
done

e2e_tally "$E2E_NAME"
