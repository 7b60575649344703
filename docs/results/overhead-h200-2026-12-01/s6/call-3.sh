#!/bin/bash
# session 6, call 3 (on 6147997): scripts/gpu.sh (the runtime's control,
# TestGPUBatch again) and scripts/overhead.sh on the committed code; then
# six passes each of the committed gemm (cur) and three variants of its
# batched consumer (src-exp2 = exp6b.patch): no active-mask check in
# Batch::add (nochk), the pair-or-pop choice by selects instead of a branch
# (tagsel), both.
export PATH=$PATH:/usr/local/cuda/bin
T0=$SECONDS
R=$OUT/c3; mkdir -p $R
ARCH="-gencode=arch=compute_90a,code=sm_90a"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $R/smi.txt 2>&1
T=/tmp/gpu; mkdir -p $T
OUT=$T/gpu bash scripts/gpu.sh > $T/gpu.console 2>&1; echo "gpu.sh rc=$? t=$((SECONDS-T0))"; tail -16 $T/gpu/summary.txt
mkdir -p $T/g && tar xzf $T/gpu/gpu-results.tgz -C $T/g && grep -cE "^--- PASS" $T/g/test-iket.log; grep -E "^(--- |    --- )(FAIL|SKIP)" $T/g/*.log | head -20; grep -E "TestGPUTiming|with a control|control" $T/g/test-iket.log | head -12
mkdir -p $R/gpu; cp $T/g/summary.txt $T/g/*.log $R/gpu/ 2>/dev/null; ls $T/g
OUT=$R/ov bash scripts/overhead.sh > $R/ov.console 2>&1; echo "overhead rc=$? t=$((SECONDS-T0))"; tail -5 $R/ov/overhead.txt
B=/tmp/b; mkdir -p $B
X7=probe/s6/src-exp2
nvcc -O2 -std=c++17 $ARCH -Ikernels/include -o $B/bench kernels/bench/bench.cu -lcuda > $R/bench.build.txt 2>&1 &
cub() { local src=$1 out=$2; shift 2; nvcc -cubin -O3 -lineinfo $ARCH -I$src/include -I$src/hopper -Xptxas -v "$@" -o $out $src/hopper/gemm.cu > $out.log 2>&1 || { echo "$out build failed"; cat $out.log; }; }
V="cur nochk tagsel both"
for v in $V; do mkdir -p /tmp/v/$v; done
E=-DIKET_ENABLE=1
cub kernels /tmp/v/cur/gemm_off.cubin &
cub kernels /tmp/v/cur/gemm_dbg.cubin -DHOPPER_SPIN_LIMIT=4000000 &
cub kernels /tmp/v/cur/gemm_on.cubin $E &
cub $X7 /tmp/v/nochk/gemm_on.cubin $E -DIKET_EXP_NOCHECK &
cub $X7 /tmp/v/tagsel/gemm_on.cubin $E -DGEMM_EXP_TAGSEL &
cub $X7 /tmp/v/both/gemm_on.cubin $E -DIKET_EXP_NOCHECK -DGEMM_EXP_TAGSEL &
wait
echo "built at $((SECONDS-T0)) s"
for v in nochk tagsel both; do cp /tmp/v/cur/gemm_off.cubin /tmp/v/cur/gemm_dbg.cubin /tmp/v/$v/; done
for v in $V; do cuobjdump -sass /tmp/v/$v/gemm_on.cubin | gzip > $R/${v}_on.sass.gz; done
run() { local l=$1; shift
  mkdir -p /tmp/o/$l /tmp/w
  env "$@" timeout 120 $B/bench time --kernels gemm --rounds 21 $X --modules /tmp/v/$l --out /tmp/o/$l --work /tmp/w > $R/time-$l-$pass.txt 2>&1
  echo "$l pass $pass rc=$? t=$((SECONDS-T0)) $(grep -E "^gemm " /tmp/o/$l/table-time.txt | awk '{print $2, $4, $5, $6, $7}' | tr '\n' ' ')"
  cp /tmp/o/$l/bench-time.json $R/time-$l-$pass.json 2>/dev/null; rm -f /tmp/o/$l/table-time.txt /tmp/w/*.bf16; }
for pass in 1 2 3 4 5 6; do
  [ $((SECONDS-T0)) -gt 330 ] && { echo "stopping: time"; break; }
  X=; run cur; run nochk; run tagsel; run both
done
cd $OUT && tar czf c3.tgz c3 && rm -rf c3
