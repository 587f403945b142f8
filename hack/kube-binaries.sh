#!/usr/bin/env bash
# Builds the Kubernetes control-plane binaries that nodewright's tests and
# `nodewright dev` run: etcd, kube-apiserver, kube-scheduler,
# kube-controller-manager, kubectl, kwok and kwokctl. Everything comes from the
# Go module proxy, at the pinned versions below, and lands in a cache outside the
# work tree keyed by version, so a second call returns at once.
#
# Usage: hack/kube-binaries.sh        prints the directory that holds the binaries
#
# Environment:
#   NODEWRIGHT_CACHE   cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/nodewright)
set -euo pipefail

KUBERNETES_VERSION=v1.34.4   # k8s.io/kubernetes; staging modules use v0.34.4
ETCD_VERSION=v3.6.16         # go.etcd.io/etcd/server/v3
KWOK_VERSION=v0.7.0          # sigs.k8s.io/kwok

staging_version="v0${KUBERNETES_VERSION#v1}"
cache_root="${NODEWRIGHT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodewright}"
dir="$cache_root/kube-binaries/k8s-$KUBERNETES_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION"
binaries=(etcd kube-apiserver kube-scheduler kube-controller-manager kubectl kwok kwokctl)

complete() {
  for b in "${binaries[@]}"; do [ -x "$dir/$b" ] || return 1; done
}

if complete; then echo "$dir"; exit 0; fi

log() { echo "kube-binaries: $*" >&2; }

mkdir -p "$cache_root"
# Several test packages may ask at once; only one builds, the others wait.
# Each says why it is slow, and only then: callers (nodewright dev up) print
# nothing of their own, as most calls find the binaries built.
exec 9>"$cache_root/kube-binaries.lock"
if ! flock -n 9; then
  log "another process is building the Kubernetes binaries into $dir; waiting for it"
  flock 9
fi
if complete; then echo "$dir"; exit 0; fi
log "building the Kubernetes binaries into $dir from the Go module proxy, once: about 13 minutes on 2 cores"

mkdir -p "$dir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GOFLAGS="-mod=mod -trimpath" CGO_ENABLED=0 GOWORK=off

# quiet CMD...: runs CMD, showing its output only if it fails.
quiet() {
  local out
  if ! out=$("$@" 2>&1); then echo "$out" >&2; return 1; fi
}

# build MODULE_DIR OUTPUT PACKAGE: go build inside a throw-away module.
build() {
  local mod=$1 out=$2 pkg=$3
  if [ -x "$dir/$out" ]; then return; fi
  log "building $out from $pkg"
  (cd "$mod" && go build -ldflags "-s -w $4" -o "$dir/$out.tmp" "$pkg")
  mv "$dir/$out.tmp" "$dir/$out"
}

# throwaway NAME REQUIRE...: a module that requires the given modules and
# imports the given packages, so that `go mod tidy` resolves them.
throwaway() {
  local name=$1; shift
  local m="$work/$name"
  mkdir -p "$m"
  (cd "$m" && go mod init "nodewright.local/$name" >/dev/null 2>&1)
  echo "$m"
}

# Kubernetes: k8s.io/kubernetes points its staging modules at ./staging, which a
# module from the proxy does not have; replace each with its published version.
if ! { [ -x "$dir/kube-apiserver" ] && [ -x "$dir/kube-scheduler" ] && [ -x "$dir/kube-controller-manager" ] && [ -x "$dir/kubectl" ]; }; then
  k=$(throwaway kubernetes)
  gomod=$(cd "$k" && go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" | sed -n 's/^\s*"GoMod": "\(.*\)",$/\1/p')
  {
    echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
    sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$gomod" |
      while read -r s; do echo "replace $s => $s $staging_version"; done
  } >>"$k/go.mod"
  cat >"$k/tools.go" <<GO
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
  log "resolving k8s.io/kubernetes $KUBERNETES_VERSION"
  (cd "$k" && quiet go mod tidy)
  ver="-X k8s.io/component-base/version.gitVersion=$KUBERNETES_VERSION -X k8s.io/client-go/pkg/version.gitVersion=$KUBERNETES_VERSION"
  for b in kube-apiserver kube-scheduler kube-controller-manager kubectl; do
    build "$k" "$b" "k8s.io/kubernetes/cmd/$b" "$ver"
  done
fi

if [ ! -x "$dir/etcd" ]; then
  e=$(throwaway etcd)
  echo "require go.etcd.io/etcd/server/v3 $ETCD_VERSION" >>"$e/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' >"$e/tools.go"
  log "resolving etcd $ETCD_VERSION"
  (cd "$e" && quiet go mod tidy)
  build "$e" etcd go.etcd.io/etcd/server/v3 ""
fi

if [ ! -x "$dir/kwok" ] || [ ! -x "$dir/kwokctl" ]; then
  w=$(throwaway kwok)
  echo "require sigs.k8s.io/kwok $KWOK_VERSION" >>"$w/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "sigs.k8s.io/kwok/cmd/kwok"\n\t_ "sigs.k8s.io/kwok/cmd/kwokctl"\n)\n' >"$w/tools.go"
  log "resolving kwok $KWOK_VERSION"
  (cd "$w" && quiet go mod tidy)
  kv="-X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION"
  build "$w" kwok sigs.k8s.io/kwok/cmd/kwok "$kv"
  build "$w" kwokctl sigs.k8s.io/kwok/cmd/kwokctl "$kv"
fi

complete
echo "$dir"
