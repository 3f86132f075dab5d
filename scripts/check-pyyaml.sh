#!/usr/bin/env bash
# check-pyyaml.sh judges the sidecar's frontmatter with PyYAML, the YAML 1.1
# library Python hosts verify installs with (Debian's python3-yaml).
#
#   ok  TestAgreesWithPyYAML (internal/catalog) ran and passed: over twenty
#       thousand documents read by PyYAML and by the sidecar, and the
#       sidecar's YAML 1.1 classifier flags exactly those that differ. The
#       Go test skips where no Python has PyYAML; here a skip is a failure.
#   ok  default settings: every skill skills/list serves from
#       test/e2e/testdata/portability-plugin has the frontmatter PyYAML reads
#       from its served SKILL.md (test/e2e/pyyaml-host.py), and the seven
#       ambiguous skills are not served
#   ok  --frontmatter-portability warn: all eleven are served, the same seven
#       differ under PyYAML (the host's check can fail), and the sidecar
#       logged a warning for each; both times
#       skills_sidecar_catalog_frontmatter_ambiguous counts the seven
#
# PyYAML comes from Debian's python3-yaml: installed with apt-get when
# PYYAML_PYTHON (default /usr/bin/python3) cannot import yaml.
#
# Usage: scripts/check-pyyaml.sh. E2E_SIDECAR_BIN=PATH judges another build
# (an older one, to watch the default row fail). Exits 1 when a check failed,
# 2 on a setup error. Loopback only; the sidecars it starts are stopped by pid.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/e2e-lib.sh
source scripts/e2e-lib.sh
E2E_NAME=check-pyyaml

py=${PYYAML_PYTHON:-/usr/bin/python3}
if ! "$py" -c 'import yaml' 2>/dev/null; then
  e2e_log "$py cannot import yaml: installing Debian's python3-yaml"
  sudo=()
  ((EUID == 0)) || sudo=(sudo)
  "${sudo[@]}" apt-get install -y python3-yaml >/dev/null ||
    { "${sudo[@]}" apt-get update >/dev/null && "${sudo[@]}" apt-get install -y python3-yaml >/dev/null; } ||
    e2e_die "cannot install python3-yaml"
  "$py" -c 'import yaml' || e2e_die "$py still cannot import yaml"
fi
e2e_log "PyYAML $("$py" -c 'import yaml; print(yaml.__version__)') ($py)"

work=$(mktemp -d -t check-pyyaml.XXXXXX)
trap 'e2e_cleanup; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

# The differential test: a skip is not a pass.
if PYYAML_PYTHON=$py go test -race -count=1 -v -run '^TestAgreesWithPyYAML$' ./internal/catalog >"$work/go-test.log" 2>&1 &&
  ! grep -q -- '--- SKIP' "$work/go-test.log" && grep -q -- '^--- PASS: TestAgreesWithPyYAML ' "$work/go-test.log"; then
  e2e_row ok "TestAgreesWithPyYAML: $(grep -o '[0-9]* documents.*flagged' "$work/go-test.log")"
else
  cat "$work/go-test.log" >&2
  e2e_row FAIL "TestAgreesWithPyYAML failed, skipped or did not run"
fi

bin=${E2E_SIDECAR_BIN:-$work/skills-sidecar}
[[ -n ${E2E_SIDECAR_BIN:-} ]] || go build -o "$bin" ./cmd/skills-sidecar || e2e_die "cannot build skills-sidecar"
plugin=test/e2e/testdata/portability-plugin
ambiguous="ambiguous-base60 ambiguous-exponent ambiguous-octal ambiguous-on-key ambiguous-timestamp ambiguous-underscore ambiguous-yes"
portable="crlf-file plain-strings quoted-values shared-spellings"

# judge MODE: start a sidecar (its embedded demo upstream) serving the
# plugin with --frontmatter-portability MODE (default: no flag) and let the
# PyYAML host judge what it serves, into $work/host-MODE.txt, sorted.
judge() {
  local mode=$1
  E2E_SIDECAR_EXTRA=()
  [[ $mode == default ]] || E2E_SIDECAR_EXTRA=(--frontmatter-portability "$mode")
  e2e_start_sidecar "$bin" "" "$work/sidecar-$mode.log" "$plugin"
  "$py" test/e2e/pyyaml-host.py "$E2E_SIDECAR_URL" | sort >"$work/host-$mode.txt" ||
    e2e_die "pyyaml-host.py could not ask the sidecar ($mode)"
  curl -sS -m 10 "$E2E_SIDECAR_METRICS" | grep '^skills_sidecar_catalog_frontmatter_ambiguous{' >"$work/metric-$mode.txt" || true
  e2e_stop "$E2E_SIDECAR_PID"
}

# lines VERDICT NAMES: the host lines expected for the skills NAMES.
lines() {
  local verdict=$1 n
  for n in $2; do echo "$verdict skill://$n/SKILL.md"; done
}

# metric MODE SKIP WARN: the ambiguity gauge's two series as scraped.
metric() {
  printf 'skills_sidecar_catalog_frontmatter_ambiguous{severity="skip"} %s\nskills_sidecar_catalog_frontmatter_ambiguous{severity="warn"} %s\n' "$2" "$3" |
    diff - "$work/metric-$1.txt" >&2
}

judge default
if diff <(lines agree "$portable" | sort) "$work/host-default.txt" >"$work/diff" 2>&1 && metric default 7 0; then
  e2e_row ok "default: the $(wc -w <<<"$portable") skills served read the same under PyYAML; the ambiguous ones are not served (metric: 7 skipped)"
else
  cat "$work/diff" >&2
  e2e_row FAIL "default: served skills and PyYAML's readings (-want +got above)"
fi

judge warn
got=$(sed 's/\(SKILL\.md\).*/\1/' "$work/host-warn.txt")
want=$( (lines agree "$portable"; lines differ "$ambiguous") | sort)
warned=$(grep -c 'plugin item warn.*frontmatter that YAML 1.1 hosts read differently' "$work/sidecar-warn.log" || true)
if [[ $got == "$want" && $warned == "$(wc -w <<<"$ambiguous")" ]] && metric warn 0 7; then
  e2e_row ok "warn: all served; PyYAML differs on exactly the $warned ambiguous skills, each warned in the log and counted"
else
  diff <(echo "$want") <(echo "$got") >&2 || true
  e2e_row FAIL "warn: host verdicts (-want +got above), $warned warnings logged"
fi

e2e_tally pyyaml
