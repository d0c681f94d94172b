#!/usr/bin/env bash
# Build benchmarks/clientgo-order (client-go v0.36.3) unless a binary of the same sources is
# cached, then print its path. Cached in $KUBE_INFORMERS_CACHE/clientgo-order/<hash>/ (default
# ~/.cache/kube-informers), like tools/control-plane/build.sh and benchmarks/clientgo. A cached
# binary costs one sha256sum of three files. Exit 4 when Go is missing.
set -euo pipefail
cd "$(dirname "$0")"
CACHE_ROOT=${KUBE_INFORMERS_CACHE:-$HOME/.cache/kube-informers}
digest=$(cat go.mod go.sum main.go | sha256sum | cut -c1-16)
out=$CACHE_ROOT/clientgo-order/$digest
binary=$out/clientgo-order
if [[ -x $binary ]]; then
    echo "$binary"
    exit 0
fi
command -v go >/dev/null || { echo "go is not on PATH: cannot build clientgo-order" >&2; exit 4; }
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9
if [[ ! -x $binary ]]; then
    GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -buildvcs=false" \
        go build -o "$binary.$$" . >&2
    mv "$binary.$$" "$binary"
fi
echo "$binary"
