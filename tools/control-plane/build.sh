#!/usr/bin/env bash
# Build the test control plane (kube-apiserver, kube-controller-manager, etcd) from published Go
# modules pinned to one Kubernetes release, into a cache directory outside the checkout.
#
# Usage: tools/control-plane/build.sh [--check]
#
#   (no argument)  build what is missing, then print the binaries' paths
#   --check        build nothing; print the paths and exit 0 if all are cached, else exit 3
#
# Output (stdout, one "name=value" per line, for scripts and the pytest fixture):
#   k8s-version=v1.36.3  etcd-version=v3.6.8  bin-dir=...  kube-apiserver=...
#   kube-controller-manager=...  etcd=...
# Progress goes to stderr.
#
# Environment:
#   KUBE_INFORMERS_CACHE   cache root (default: $HOME/.cache/kube-informers); binaries land in
#                          $KUBE_INFORMERS_CACHE/control-plane/<k8s-version>/bin/
#   K8S_VERSION            Kubernetes release (default below); ETCD_VERSION defaults to the etcd
#                          server version that release's go.mod pins
#   BUILD_PARALLELISM      go build -p (default: 2, the cores of our CI machines)
#
# How: k8s.io/kubernetes replaces its staging modules (k8s.io/api, k8s.io/apiserver, ...) with
# ./staging/src paths, so `go install k8s.io/kubernetes/cmd/kube-apiserver@vX` is refused. The
# script writes a throwaway module in a temporary directory that requires k8s.io/kubernetes at
# the release and replaces every staging module by its published v0.<minor>.<patch> version,
# then runs `go build` on the commands. etcd's server module (whose main package is etcd) has
# the same kind of replace directives, so it gets its own throwaway module. Nothing is written
# to the checkout; the Go module and build caches are the usual ones (go env GOMODCACHE GOCACHE).
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.36.3}
ETCD_VERSION=${ETCD_VERSION:-}
PARALLELISM=${BUILD_PARALLELISM:-2}
CACHE_ROOT=${KUBE_INFORMERS_CACHE:-$HOME/.cache/kube-informers}
OUT=$CACHE_ROOT/control-plane/$K8S_VERSION
BIN=$OUT/bin
STAMP=$BIN/.complete
NAMES=(kube-apiserver kube-controller-manager etcd)

log() { printf '[control-plane %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

print_paths() {
    echo "k8s-version=$K8S_VERSION"
    echo "etcd-version=$(cat "$BIN/.etcd-version")"
    echo "bin-dir=$BIN"
    for name in "${NAMES[@]}"; do echo "$name=$BIN/$name"; done
}

cached() {
    [[ -f $STAMP ]] || return 1
    for name in "${NAMES[@]}"; do [[ -x $BIN/$name ]] || return 1; done
}

if [[ ${1:-} == --check ]]; then
    if cached; then print_paths; exit 0; fi
    log "not built: $BIN"
    exit 3
fi
if [[ $# -gt 0 ]]; then
    echo "usage: $0 [--check]" >&2
    exit 2
fi

mkdir -p "$OUT"
# One build at a time per version (a CI run and a developer's pytest may both ask).
exec 9>"$OUT/.lock"
flock 9
if cached; then
    print_paths
    exit 0
fi

command -v go >/dev/null || { log "go is not on PATH: cannot build the control plane"; exit 4; }
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=mod"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kube-informers-control-plane.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
start=$SECONDS
log "building Kubernetes $K8S_VERSION into $BIN with $(go version) (-p $PARALLELISM)"

# --- kube-apiserver and kube-controller-manager -------------------------------------------
mkdir -p "$WORK/k8s" "$WORK/out"
cd "$WORK/k8s"
if ! k8s_json=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION"); then
    log "cannot download k8s.io/kubernetes@$K8S_VERSION: $(sed -n 's/^\t"Error": //p' <<<"$k8s_json")"
    exit 1
fi
k8s_mod=$(sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p' <<<"$k8s_json")
[[ -f $k8s_mod ]] || { log "no go.mod for k8s.io/kubernetes@$K8S_VERSION"; exit 1; }
go_directive=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$k8s_mod")
minor_patch=${K8S_VERSION#v1.}             # 36.3
staging_version=v0.$minor_patch             # v0.36.3
{
    echo "module kube-informers.invalid/control-plane-build"
    echo
    echo "go $go_directive"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    sed -n 's#^\t\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/.*$#\t\1 => \1 '"$staging_version"'#p' "$k8s_mod"
    echo ")"
} >go.mod
log "throwaway module: $(grep -c '=> k8s.io/' go.mod) staging modules replaced by $staging_version"
if [[ -z $ETCD_VERSION ]]; then
    ETCD_VERSION=$(sed -n 's#^\tgo.etcd.io/etcd/server/v3 \(v[0-9.]*\).*$#\1#p' "$k8s_mod")
fi
[[ -n $ETCD_VERSION ]] || { log "cannot tell which etcd $K8S_VERSION pins; set ETCD_VERSION"; exit 1; }

pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=${minor_patch%%.*}"
ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
pkg=k8s.io/client-go/pkg/version
ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=${minor_patch%%.*}"
ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
log "go build kube-apiserver kube-controller-manager (downloads modules on first use)"
t=$SECONDS
go build -p "$PARALLELISM" -trimpath -ldflags="$ldflags" -o "$WORK/out/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
log "kube-apiserver, kube-controller-manager built in $((SECONDS - t)) s"

# --- etcd ---------------------------------------------------------------------------------
mkdir -p "$WORK/etcd"
cd "$WORK/etcd"
printf 'module kube-informers.invalid/etcd-build\n\ngo 1.24.0\n\nrequire go.etcd.io/etcd/server/v3 %s\n' \
    "$ETCD_VERSION" >go.mod
log "go build etcd $ETCD_VERSION (go.etcd.io/etcd/server/v3)"
t=$SECONDS
go build -p "$PARALLELISM" -trimpath -ldflags="-s -w" -o "$WORK/out/etcd" go.etcd.io/etcd/server/v3
log "etcd built in $((SECONDS - t)) s"

# --- install ------------------------------------------------------------------------------
mkdir -p "$BIN"
for name in "${NAMES[@]}"; do mv -f "$WORK/out/$name" "$BIN/$name"; done
echo "$ETCD_VERSION" >"$BIN/.etcd-version"
"$BIN/kube-apiserver" --version >&2
"$BIN/etcd" --version >&2
touch "$STAMP"
log "done in $((SECONDS - start)) s: $(du -sh "$BIN" | cut -f1) in $BIN"
print_paths
