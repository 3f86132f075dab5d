#!/usr/bin/env bash
# build-kube.sh builds the control plane scripts/check-kube.sh runs:
# kube-apiserver and kube-controller-manager (and kubectl, for the commands
# docs/kubernetes.md shows) from the k8s.io/kubernetes Go module, and etcd
# from go.etcd.io/etcd/server/v3, all through the Go module proxy, into
# $TOOLS_DIR/kube-$KUBE_VERSION/ (default .tools/). A second run finds the
# binaries there and builds nothing.
#
# k8s.io/kubernetes is not made to be required by another module: its go.mod
# requires every staging module (k8s.io/api, k8s.io/client-go, ...) at
# v0.0.0 and replaces them by directories of its own tree, which a module
# that requires it does not see. So this script writes a throwaway module
# that requires k8s.io/kubernetes and replaces each of those v0.0.0 staging
# modules by its published release (v0.X.Y for v1.X.Y), the list taken from
# k8s.io/kubernetes's own go.mod, then builds the two commands from it. No
# source of anyone's is copied into this repository: the module is generated
# in a temporary directory and removed.
#
# Environment: TOOLS_DIR (default .tools), KUBE_VERSION (default v1.36.3),
# ETCD_VERSION (default v3.6.6).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

kube_version=${KUBE_VERSION:-v1.36.3}
etcd_version=${ETCD_VERSION:-v3.6.6}
tools=${TOOLS_DIR:-.tools}
out=$tools/kube-$kube_version
staging_version=v0.${kube_version#v1.}

if [[ -x $out/kube-apiserver && -x $out/kube-controller-manager && -x $out/kubectl && -x $out/etcd ]]; then
  echo "control plane $kube_version, etcd $etcd_version: cached in $out"
  exit 0
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# CGO off and -trimpath: static binaries that do not depend on the machine.
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOWORK=off

# etcd's server module carries replace directives (to its sibling modules in
# its own repository), so `go install module@version` refuses it; required by
# a throwaway module of its own, its replaces are ignored and its published
# sibling modules are used instead.
if [[ ! -x $out/etcd ]]; then
  echo "## building etcd $etcd_version"
  mkdir -p "$work/etcd"
  printf 'module kubebuild.invalid/etcd\n\ngo 1.24\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$etcd_version" >"$work/etcd/go.mod"
  printf '//go:build tools\n\npackage etcd\n\nimport _ "go.etcd.io/etcd/server/v3"\n' >"$work/etcd/tools.go"
  (
    cd "$work/etcd"
    go mod tidy >/dev/null
    go build -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3
  )
fi

if [[ ! -x $out/kube-apiserver || ! -x $out/kube-controller-manager || ! -x $out/kubectl ]]; then
  echo "## building kube-apiserver, kube-controller-manager and kubectl $kube_version"
  gomod=$(go mod download -json "k8s.io/kubernetes@$kube_version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
  [[ -f $gomod ]] || { echo "build-kube: no go.mod for k8s.io/kubernetes@$kube_version" >&2; exit 1; }
  # The staging modules: the k8s.io/* modules its go.mod replaces by a path
  # of its own tree ("k8s.io/api => ./staging/src/k8s.io/api").
  mapfile -t staging < <(sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\) => \./staging/.*#\1#p' "$gomod" | sort -u)
  ((${#staging[@]} > 10)) || { echo "build-kube: found only ${#staging[@]} staging modules in $gomod" >&2; exit 1; }
  goversion=$(sed -n 's/^go \([0-9.]*\).*/\1/p' "$gomod")
  {
    echo "module kubebuild.invalid/controlplane"
    echo
    echo "go $goversion"
    echo
    echo "require k8s.io/kubernetes $kube_version"
    echo
    echo "replace ("
    for m in "${staging[@]}"; do echo "	$m => $m $staging_version"; done
    echo ")"
  } >"$work/go.mod"
  printf '//go:build tools\n\npackage controlplane\n\nimport (\n\t_ "k8s.io/kubernetes/cmd/kube-apiserver"\n\t_ "k8s.io/kubernetes/cmd/kube-controller-manager"\n\t_ "k8s.io/kubernetes/cmd/kubectl"\n)\n' >"$work/tools.go"
  (
    cd "$work"
    go mod tidy >/dev/null
    # The version the binaries report (helm checks a chart's kubeVersion
    # against it); a module build has no git stamp of its own.
    minor=${kube_version#v1.}
    minor=${minor%%.*}
    ver=k8s.io/component-base/version
    ldflags="-s -w -X $ver.gitVersion=$kube_version -X $ver.gitMajor=1 -X $ver.gitMinor=$minor -X $ver.gitTreeState=clean"
    go build -trimpath -ldflags "$ldflags" -o "$out/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
    go build -trimpath -ldflags "$ldflags" -o "$out/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager
    go build -trimpath -ldflags "$ldflags" -o "$out/kubectl" k8s.io/kubernetes/cmd/kubectl
  )
fi
echo "control plane $kube_version, etcd $etcd_version: built into $out"
