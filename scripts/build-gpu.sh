#!/usr/bin/env bash
# Builds, on the development machine, everything scripts/gpu.sh runs on the
# H200: the iket binary and the test binaries of the packages with GPU tests,
# into bin/ (git-ignored; carry it to the GPU machine).
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=1 CGO_CFLAGS="${CGO_CFLAGS:--Wno-deprecated-declarations}"
mkdir -p bin
go build -trimpath -ldflags "-X main.version=$(git describe --always --dirty 2>/dev/null || echo dev)" -o bin/iket ./cmd/iket
: > bin/tests.txt
for dir in $(go list -f '{{if .TestGoFiles}}{{.Dir}}{{end}}' ./iket/... ./cmd/...); do
  rel=${dir#$PWD/}
  name=$(echo "$rel" | tr / _)
  go test -c -o "bin/${name}.test" "./$rel"
  echo "$name $rel" >> bin/tests.txt
done
ls -la bin
