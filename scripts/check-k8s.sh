#!/usr/bin/env bash
# check-k8s.sh checks the Kubernetes packaging without a cluster or a
# Docker engine:
#   - helm lint of the chart with values.schema.json, over the default values
#     and every charts/skills-sidecar/ci/*-values.yaml; a values file that
#     violates the schema (ci-invalid/) must be rejected;
#   - helm template over the same matrix and kustomize build of the base and
#     of the static-injection example, every rendered object decoded
#     strictly into its k8s.io/api type (internal/inject/manifestcheck);
#     no probe or lifecycle handler names a host (the kubelet dials it
#     from the node, and Pod Security baseline refuses it);
#     each rendered twice, byte for byte the same (nothing random is
#     rendered: the injector makes its certificate in the cluster); no RBAC
#     rule grants ConfigMaps (the injector reads none);
#   - promtool test rules on the chart's alerts (test/prometheus);
#   - the static example mounts its ConfigMap whole (configmaps layout); a
#     kustomize overlay's images: pin reaches SKILLS_SIDECAR_IMAGE, the image
#     the injector injects; nothing rendered runs latest;
#   - docs/examples/*.yaml decoded strictly as written and after inject -f,
#     which must not warn (and must, once port takeover is removed);
#   - the Dockerfile's go build command, and a check that the binaries are
#     statically linked (no PT_INTERP).
# Helm and kustomize run from their Go modules (the first run compiles them).
# Exit status 0 when everything passes; each failure is printed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2

HELM_MOD=helm.sh/helm/v3/cmd/helm@v3.22.0
KUSTOMIZE_MOD=sigs.k8s.io/kustomize/kustomize/v5@v5.8.2
KUBE_VERSION=1.36.0
chart=charts/skills-sidecar
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0

fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

echo "## building helm, kustomize and the checkers"
# go install of path@version ignores this module's go.mod, as go run does.
GOBIN="$work" go install "$HELM_MOD" || fail "build helm"
GOBIN="$work" go install "$KUSTOMIZE_MOD" || fail "build kustomize"
go build -o "$work/checkmanifests" ./internal/inject/manifestcheck/checkmanifests || fail "build checkmanifests"
go build -o "$work/skills-sidecar" ./cmd/skills-sidecar || fail "build skills-sidecar"
if ! command -v promtool >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus >/dev/null; } ||
    fail "install promtool (Debian package prometheus)"
fi
go build -o "$work/checkstatic" ./internal/inject/staticbin/checkstatic || fail "build checkstatic"
((failed == 0)) || exit 1

check_rendered() { # name file
  if "$work/checkmanifests" -rules "$work/rules.yaml" <"$2" >"$work/objects.txt"; then
    echo "ok   $1: $(wc -l <"$work/objects.txt") objects decode strictly"
  else
    fail "$1: rendered objects do not decode strictly"
  fi
  # The injector reads no ConfigMaps (they are mounted whole and decoded by
  # the sidecar): no rule may grant them. Its only rights are its own
  # Secret and webhook configuration, by name, when it manages its
  # certificate.
  if grep -qE 'resources: \[[^]]*\bconfigmaps\b|^[[:space:]]*- configmaps[[:space:]]*$' "$2"; then
    fail "$1: an RBAC rule grants ConfigMaps; the injector reads none"
  fi
  # The alerting rules the chart renders must be valid PromQL.
  if grep -q "PrometheusRule" "$work/objects.txt"; then
    if promtool check rules "$work/rules.yaml" >"$work/promtool.txt" 2>&1; then
      echo "ok   $1: promtool check rules ($(grep -c 'alert:' "$work/rules.yaml") alerts)"
    else
      cat "$work/promtool.txt"; fail "$1: promtool check rules"
    fi
  fi
}

echo "## helm lint and template"
matrix=("")
for f in "$chart"/ci/*-values.yaml; do matrix+=("$f"); done
for values in "${matrix[@]}"; do
  name=${values:-default values}
  args=()
  [[ -n $values ]] && args=(-f "$values")
  if "$work/helm" lint --strict "$chart" "${args[@]}" >"$work/lint.txt" 2>&1; then
    echo "ok   helm lint ($name)"
  else
    cat "$work/lint.txt"; fail "helm lint ($name)"
  fi
  # --kube-version: Chart.yaml's kubeVersion (>=1.30) is above helm
  # template's default.
  if "$work/helm" template check "$chart" --namespace skills-sidecar --kube-version "$KUBE_VERSION" "${args[@]}" >"$work/rendered.yaml" 2>"$work/err.txt"; then
    check_rendered "helm template ($name)" "$work/rendered.yaml"
    "$work/helm" template check "$chart" --namespace skills-sidecar --kube-version "$KUBE_VERSION" "${args[@]}" >"$work/rendered2.yaml" 2>/dev/null
    if cmp -s "$work/rendered.yaml" "$work/rendered2.yaml"; then
      echo "ok   helm template ($name): two renders byte-identical"
    else
      diff "$work/rendered.yaml" "$work/rendered2.yaml" | head -10; fail "helm template ($name): two renders differ"
    fi
  else
    cat "$work/err.txt"; fail "helm template ($name)"
  fi
done
for bad in "$chart"/ci-invalid/*.yaml; do
  if "$work/helm" lint "$chart" -f "$bad" >"$work/lint.txt" 2>&1; then
    fail "helm lint accepted $bad, which violates values.schema.json"
  elif grep -q "schema" "$work/lint.txt"; then
    echo "ok   helm lint rejects $bad (schema)"
  else
    cat "$work/lint.txt"; fail "helm lint rejected $bad, but not for the schema"
  fi
done

echo "## the alerts: promtool test rules"
if "$work/helm" template check "$chart" --namespace skills-sidecar --kube-version "$KUBE_VERSION" --set prometheusRule.enabled=true 2>"$work/err.txt" |
  "$work/checkmanifests" -rules "$work/rules.yaml" >/dev/null; then
  cp test/prometheus/*.test.yaml "$work/"
  for t in "$work"/*.test.yaml; do
    if promtool test rules "$t" >"$work/promtool.txt" 2>&1; then
      echo "ok   promtool test rules $(basename "$t")"
    else
      cat "$work/promtool.txt"; fail "promtool test rules $(basename "$t")"
    fi
  done
  # The test must be able to fail: the expiry alert with a 1-day threshold
  # does not fire for a certificate 10 days from expiry.
  "$work/helm" template check "$chart" --namespace skills-sidecar --kube-version "$KUBE_VERSION" --set prometheusRule.enabled=true \
    --set prometheusRule.certificateExpiryDays=1 | "$work/checkmanifests" -rules "$work/rules.yaml" >/dev/null
  if promtool test rules "$work/injector-alerts.test.yaml" >/dev/null 2>&1; then
    fail "promtool test rules passed on rules with a broken threshold"
  else
    echo "ok   promtool test rules fails on a broken threshold"
  fi
  # And the sidecar alerts' traffic guard: without it the idle pod fires too.
  "$work/helm" template check "$chart" --namespace skills-sidecar --kube-version "$KUBE_VERSION" --set prometheusRule.enabled=true \
    --set prometheusRule.upstreamErrorMinRate=0 | "$work/checkmanifests" -rules "$work/rules.yaml" >/dev/null
  if promtool test rules "$work/sidecar-alerts.test.yaml" >/dev/null 2>&1; then
    fail "promtool test rules passed on rules without the traffic guard"
  else
    echo "ok   promtool test rules fails without the traffic guard"
  fi
else
  cat "$work/err.txt"; fail "render the PrometheusRule"
fi

echo "## kustomize build"
for dir in deploy/kustomize/base deploy/kustomize/examples/static; do
  if "$work/kustomize" build "$dir" >"$work/rendered.yaml" 2>"$work/err.txt"; then
    check_rendered "kustomize build $dir" "$work/rendered.yaml"
    "$work/kustomize" build "$dir" | cmp -s - "$work/rendered.yaml" || fail "kustomize build $dir: two builds differ"
  else
    cat "$work/err.txt"; fail "kustomize build $dir"
  fi
done
if grep -q "name: skills-sidecar$" <("$work/kustomize" build deploy/kustomize/examples/static 2>/dev/null); then
  echo "ok   the static-injection component added the sidecar"
else
  fail "the static-injection component did not add the sidecar"
fi

# The static component mounts the plugin ConfigMap whole, in the layout the
# injector produces: no items[] list, and the sidecar decodes the keys.
"$work/kustomize" build deploy/kustomize/examples/static >"$work/static.yaml" 2>/dev/null
if grep -q -- "--plugin-layout=configmaps" "$work/static.yaml" && ! sed -n '/configMap:/,/name:/p' "$work/static.yaml" | grep -qE '^[[:space:]]+items:' &&
  grep -q "mountPath: /etc/skills-sidecar/plugin/skills-sidecar-plugin-0" "$work/static.yaml"; then
  echo "ok   the static example mounts its ConfigMap whole (--plugin-layout=configmaps)"
else
  fail "the static example does not mount its ConfigMap whole with --plugin-layout=configmaps"
fi
# A kustomize images: pin in an overlay reaches the injected sidecar (the
# injector's SKILLS_SIDECAR_IMAGE), not only the injector.
mkdir -p "$work/pin"
printf 'resources: [%s]\nimages:\n  - {name: skills-sidecar/skills-sidecar, newName: registry.example/mirror/skills-sidecar, newTag: "9.9.9"}\n' \
  "$(realpath --relative-to="$work/pin" deploy/kustomize/base)" >"$work/pin/kustomization.yaml"
if "$work/kustomize" build "$work/pin" >"$work/pinned.yaml" 2>"$work/err.txt" &&
  [[ $(grep -c "registry.example/mirror/skills-sidecar:9.9.9" "$work/pinned.yaml") == 2 ]] &&
  grep -A1 "name: SKILLS_SIDECAR_IMAGE" "$work/pinned.yaml" | grep -q "value: registry.example/mirror/skills-sidecar:9.9.9"; then
  echo "ok   an overlay's images: pin reaches the injector and the sidecar it injects"
else
  cat "$work/err.txt"; grep -n "skills-sidecar:" "$work/pinned.yaml"; fail "an overlay's images: pin does not reach SKILLS_SIDECAR_IMAGE"
fi
# Nothing runs latest: not the chart, the base, nor the static example.
"$work/helm" template check "$chart" --namespace skills-sidecar --kube-version "$KUBE_VERSION" --set demo.enabled=true >"$work/chart.yaml" 2>/dev/null
"$work/kustomize" build deploy/kustomize/base >"$work/base.yaml" 2>/dev/null
if grep -nE '(image: |=|value: )[^[:space:]]+:latest\b' "$work/chart.yaml" "$work/base.yaml" "$work/static.yaml"; then
  fail "an image is tagged latest"
else
  echo "ok   no image is tagged latest (chart, kustomize base, static example)"
fi

# The injector's service account token: only where it manages its own
# certificate (the API is for that alone).
for mode in self certManager; do
  want=true set=()
  [[ $mode == certManager ]] && want=false set=(--set tls.certManager.enabled=true)
  got=$("$work/helm" template check "$chart" --namespace skills-sidecar --kube-version "$KUBE_VERSION" "${set[@]}" 2>/dev/null |
    grep -c "automountServiceAccountToken: $want")
  if [[ $got == 2 ]]; then
    echo "ok   $mode certificate: automountServiceAccountToken $want (ServiceAccount and pod)"
  else
    fail "$mode certificate: want automountServiceAccountToken $want on the ServiceAccount and the pod, found $got"
  fi
done

echo "## docs/examples, as written and through inject -f"
for f in docs/examples/*.yaml; do
  check_rendered "$f" "$f"
  if "$work/skills-sidecar" inject --image=skills-sidecar/skills-sidecar:check -f "$f" >"$work/injected.yaml" 2>"$work/inject.txt"; then
    check_rendered "inject -f $f" "$work/injected.yaml"
    if grep -q "warning:" "$work/inject.txt"; then
      cat "$work/inject.txt"; fail "inject -f $f warns"
    fi
  else
    cat "$work/inject.txt"; fail "inject -f $f"
  fi
done
# Without the takeover annotation the example's Service bypasses the
# sidecar, and inject -f must say so.
grep -v "skills-sidecar.io/port-takeover" docs/examples/takeover.yaml >"$work/no-takeover.yaml"
if "$work/skills-sidecar" inject --image=skills-sidecar/skills-sidecar:check -f "$work/no-takeover.yaml" 2>&1 >/dev/null | grep -q "warning: Service mcp-server port mcp targets the app's own port http"; then
  echo "ok   inject -f warns about the Service once takeover is off"
else
  fail "inject -f did not warn about a Service that bypasses the sidecar"
fi

echo "## the Dockerfile's build, statically linked"
# Keep in step with the RUN go build lines of the Dockerfile.
# -buildvcs=false: an image build has no .git, so the commit must come from
# the stamp alone.
if CGO_ENABLED=0 go build -buildvcs=false -trimpath -ldflags "-s -w -X main.version=check -X main.commit=c0ffee" -o "$work/out/skills-sidecar" ./cmd/skills-sidecar &&
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/out/demo-upstream" ./cmd/demo-upstream; then
  "$work/checkstatic" "$work/out/skills-sidecar" "$work/out/demo-upstream" || fail "binaries are not static"
  # shellcheck disable=SC2015,SC2016 # a literal pattern; fail runs when either grep misses
  grep -q 'CGO_ENABLED=0' Dockerfile && grep -q -- '-trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}"' Dockerfile ||
    fail "the Dockerfile's build command differs from the one checked here"
  got=$("$work/out/skills-sidecar" version)
  if [[ $got == "skills-sidecar check (commit c0ffee)" ]]; then
    echo "ok   the binary reports the stamped version and commit"
  else
    fail "skills-sidecar version printed \"$got\", want the stamped version and commit"
  fi
else
  fail "go build as in the Dockerfile"
fi

echo
if ((failed > 0)); then
  echo "check-k8s: $failed failed"
  exit 1
fi
echo "check-k8s: all passed"
