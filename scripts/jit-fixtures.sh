#!/usr/bin/env bash
# jit-fixtures.sh DIR: on the GPU machine, the fatbins attach/jit_test.go
# reads (attach/testdata/jit/README.md), built from
# kernels/examples/warp_roles.cu with this checkout's iket.cuh.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"
F=${1:?usage: scripts/jit-fixtures.sh DIR}
mkdir -p "$F"
K=kernels/examples/warp_roles.cu
nvcc -fatbin -arch=sm_90a -Ikernels/include -DIKET_ENABLE=1 -o "$F/roles_dormant.fatbin" $K
nvcc -fatbin -arch=sm_90a --no-compress -Ikernels/include -DIKET_ENABLE=1 -o "$F/roles_dormant_raw.fatbin" $K
nvcc -fatbin -arch=sm_90a -Xfatbin=-compress-mode=speed -Ikernels/include -DIKET_ENABLE=1 -o "$F/roles_dormant_speed.fatbin" $K
nvcc -fatbin -gencode=arch=compute_90a,code=sm_90a -Ikernels/include -DIKET_ENABLE=1 -o "$F/roles_sass.fatbin" $K
nvcc -fatbin -arch=sm_90a -Ikernels/include -o "$F/roles_plain.fatbin" $K
echo "${IKET_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}" > "$F/COMMIT"
nvcc --version | tail -n 1 >> "$F/COMMIT"
ls -l "$F"
