#!/bin/bash
# session 5, call 6: the exit record's and set_role's header updates as
# red.global reductions (REDG) instead of ATOMs: A/B against db0cc59's header
# (probe/s5/base/iket.cuh) in the same call, then scripts/overhead.sh and
# scripts/gpu.sh on the working tree.
export PATH=$PATH:/usr/local/cuda/bin
T0=$SECONDS
T=/tmp/c6; R=$T/ab; mkdir -p $R
ARCH="-gencode=arch=compute_90a,code=sm_90a"
B=/tmp/b; mkdir -p $B
nvcc -O2 -std=c++17 $ARCH -Ikernels/include -o $B/bench kernels/bench/bench.cu -lcuda > $R/bench.build.txt 2>&1 &
cub() { local out=$1 inc=$2; shift 2; nvcc -cubin -O3 -lineinfo $ARCH -I$inc -Ikernels/hopper -Xptxas -v "$@" -o $out kernels/hopper/gemm.cu > $out.log 2>&1 || { echo "$out build failed"; cat $out.log; }; }
V="base red t0red"
for v in $V; do mkdir -p /tmp/v/$v; done
cub /tmp/v/base/gemm_off.cubin kernels/include &
cub /tmp/v/base/gemm_dbg.cubin kernels/include -DHOPPER_SPIN_LIMIT=4000000 &
cub /tmp/v/base/gemm_on.cubin probe/s5/base -DIKET_ENABLE=1 &
cub /tmp/v/red/gemm_on.cubin kernels/include -DIKET_ENABLE=1 &
cub /tmp/v/t0red/gemm_on.cubin kernels/include -DIKET_ENABLE=1 -DGEMM_TRACE=0 &
wait
echo "built at $((SECONDS-T0)) s"
for v in red t0red; do cp /tmp/v/base/gemm_off.cubin /tmp/v/base/gemm_dbg.cubin /tmp/v/$v/; done
for v in $V; do cuobjdump -sass /tmp/v/$v/gemm_on.cubin | grep -cE "REDG|ATOM" | sed "s/^/$v REDG+ATOM: /"; cuobjdump -sass /tmp/v/$v/gemm_on.cubin | grep -E "REDG|ATOM" > $R/$v.red.txt; done
run() { local l=$1; shift
  mkdir -p /tmp/o/$l /tmp/w
  env "$@" timeout 120 $B/bench time --kernels gemm --rounds 21 --modules /tmp/v/$l --out /tmp/o/$l --work /tmp/w > $R/time-$l-$pass.txt 2>&1
  echo "$l pass $pass rc=$? t=$((SECONDS-T0)) $(grep -E "^gemm " /tmp/o/$l/table-time.txt | awk '{print $2, $4, $5, $6, $7}' | tr '\n' ' ')"
  cp /tmp/o/$l/bench-time.json $R/time-$l-$pass.json 2>/dev/null; rm -f /tmp/o/$l/table-time.txt /tmp/w/*.bf16; }
for pass in 1 2 3 4 5; do run base; run red; run t0red IKET_BENCH_PARTIAL=1; done
FO=$OUT
OUT=$T/ov1 bash scripts/overhead.sh > $T/ov1.console 2>&1; echo "overhead rc=$? t=$((SECONDS-T0))"; sed -n '/overhead summary/,$p' $T/ov1/overhead.txt | head -30; grep -E "^(gemm|pipeline) " $T/ov1/overhead.txt
OUT=$T/gpu bash scripts/gpu.sh > $T/gpu.console 2>&1; echo "gpu.sh rc=$? t=$((SECONDS-T0))"; cat $T/gpu/summary.txt
cp $T/ov1/trace-gemm.iket $T/ov1/trace-pipeline.iket $FO/ 2>/dev/null
tar czf $FO/c6.tgz -C $T .
ls -la $FO
