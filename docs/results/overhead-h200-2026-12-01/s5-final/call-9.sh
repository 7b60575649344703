#!/bin/bash
# session 5, call 9 (after the review): scripts/gpu.sh (TestGPUExitRecord's
# new modes, watch mode), an A/B of 826d8bd's header (probe/s5/base) against
# the working tree's (a __syncwarp before the plain exit stores), then
# scripts/overhead.sh.
export PATH=$PATH:/usr/local/cuda/bin
T0=$SECONDS
T=/tmp/c9; R=$T/ab; mkdir -p $R
FO=$OUT
OUT=$T/gpu bash scripts/gpu.sh > $T/gpu.console 2>&1; echo "gpu.sh rc=$? t=$((SECONDS-T0))"; cat $T/gpu/summary.txt
mkdir -p $T/g && tar xzf $T/gpu/gpu-results.tgz -C $T/g && grep -E "^(--- |    --- ).*ExitRecord" $T/g/test-iket.log; grep -E "^--- FAIL|^    --- FAIL" -A6 $T/g/test-iket.log | head -30
ARCH="-gencode=arch=compute_90a,code=sm_90a"
B=/tmp/b; mkdir -p $B
nvcc -O2 -std=c++17 $ARCH -Ikernels/include -o $B/bench kernels/bench/bench.cu -lcuda > $R/bench.build.txt 2>&1 &
cub() { local out=$1 inc=$2; shift 2; nvcc -cubin -O3 -lineinfo $ARCH -I$inc -Ikernels/hopper -Xptxas -v "$@" -o $out kernels/hopper/gemm.cu > $out.log 2>&1 || { echo "$out build failed"; cat $out.log; }; }
mkdir -p /tmp/v/base /tmp/v/sw
cub /tmp/v/base/gemm_off.cubin kernels/include &
cub /tmp/v/base/gemm_dbg.cubin kernels/include -DHOPPER_SPIN_LIMIT=4000000 &
cub /tmp/v/base/gemm_on.cubin probe/s5/base -DIKET_ENABLE=1 &
cub /tmp/v/sw/gemm_on.cubin kernels/include -DIKET_ENABLE=1 &
wait
cp /tmp/v/base/gemm_off.cubin /tmp/v/base/gemm_dbg.cubin /tmp/v/sw/
run() { local l=$1; shift
  mkdir -p /tmp/o/$l /tmp/w
  env "$@" timeout 120 $B/bench time --kernels gemm --rounds 21 --modules /tmp/v/$l --out /tmp/o/$l --work /tmp/w > $R/time-$l-$pass.txt 2>&1
  echo "$l pass $pass rc=$? t=$((SECONDS-T0)) $(grep -E "^gemm " /tmp/o/$l/table-time.txt | awk '{print $2, $4, $5, $6, $7}' | tr '\n' ' ')"
  cp /tmp/o/$l/bench-time.json $R/time-$l-$pass.json 2>/dev/null; rm -f /tmp/o/$l/table-time.txt /tmp/w/*.bf16; }
for pass in 1 2 3 4; do run base; run sw; done
$B/bench check --control /tmp/v/sw --modules /tmp/v/sw --out /tmp/o/x; echo "bench check --control rc=$? (want 64)"
OUT=$T/ov bash scripts/overhead.sh > $T/ov.console 2>&1; echo "overhead rc=$? t=$((SECONDS-T0))"; grep -E "^(gemm|pipeline) " $T/ov/overhead.txt
tar czf $FO/c9.tgz -C $T ab ov gpu/summary.txt g/test-iket.log g/run.log g/summary.txt 2>/dev/null; ls -la $FO
