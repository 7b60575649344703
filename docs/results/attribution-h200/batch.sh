#!/bin/bash
# The consumers' per-k pairs through iket::Batch (kernels/, 610b4a4 plus
# the gemm on Batch) against f295e2b's kernel (probe/src-head) and pairs
# stored every 32nd step (probe/src-exp, variants.patch: the bound a lower
# store frequency gives), eight passes at 4096^3 and 8192^3; then
# scripts/overhead.sh and scripts/gpu.sh on the same tree.
export PATH=$PATH:/usr/local/cuda/bin
T0=$SECONDS
R=$OUT/c2; mkdir -p $R
ARCH="-gencode=arch=compute_90a,code=sm_90a"
B=/tmp/b; mkdir -p $B
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $R/smi.txt 2>&1
X6=probe/src-exp; H6=probe/src-head
nvcc -O2 -std=c++17 $ARCH -Ikernels/include -o $B/bench kernels/bench/bench.cu -lcuda > $R/bench.build.txt 2>&1 &
cub() { local src=$1 out=$2; shift 2; nvcc -cubin -O3 -lineinfo $ARCH -I$src/include -I$src/hopper -Xptxas -v "$@" -o $out $src/hopper/gemm.cu > $out.log 2>&1 || { echo "$out build failed"; cat $out.log; }; }
V="head batch sp1"
for v in $V; do mkdir -p /tmp/v/$v; done
E=-DIKET_ENABLE=1
cub $H6 /tmp/v/head/gemm_off.cubin &
cub $H6 /tmp/v/head/gemm_dbg.cubin -DHOPPER_SPIN_LIMIT=4000000 &
cub $H6 /tmp/v/head/gemm_on.cubin $E &
cub kernels /tmp/v/batch/gemm_off.cubin &
cub kernels /tmp/v/batch/gemm_on.cubin $E &
cub $X6 /tmp/v/sp1/gemm_on.cubin $E -DGEMM_EXP_SPARSE=1 &
wait
echo "built at $((SECONDS-T0)) s"
cmp /tmp/v/head/gemm_off.cubin /tmp/v/batch/gemm_off.cubin && echo "uninstrumented cubins identical"
cp /tmp/v/head/gemm_dbg.cubin /tmp/v/batch/; cp /tmp/v/head/gemm_off.cubin /tmp/v/head/gemm_dbg.cubin /tmp/v/sp1/
for v in $V; do cuobjdump -sass /tmp/v/$v/gemm_on.cubin | gzip > $R/${v}_on.sass.gz; done
run() { local l=$1; shift
  mkdir -p /tmp/o/$l /tmp/w
  env "$@" timeout 120 $B/bench time --kernels gemm --rounds 21 $X --modules /tmp/v/$l --out /tmp/o/$l --work /tmp/w > $R/time-$l-$pass.txt 2>&1
  echo "$l pass $pass rc=$? t=$((SECONDS-T0)) $(grep -E "^gemm " /tmp/o/$l/table-time.txt | awk '{print $2, $4, $5, $6, $7}' | tr '\n' ' ')"
  cp /tmp/o/$l/bench-time.json $R/time-$l-$pass.json 2>/dev/null; rm -f /tmp/o/$l/table-time.txt /tmp/w/*.bf16; }
for pass in 1 2 3 4 5 6 7 8; do
  [ $((SECONDS-T0)) -gt 200 ] && { echo "stopping: time"; break; }
  X=; run head; run batch; run sp1
done
OUT=$R/ov bash scripts/overhead.sh > $R/ov.console 2>&1; echo "overhead rc=$? t=$((SECONDS-T0))"; tail -6 $R/ov/overhead.txt
T=/tmp/gpu; mkdir -p $T
OUT=$T/gpu bash scripts/gpu.sh > $T/gpu.console 2>&1; echo "gpu.sh rc=$? t=$((SECONDS-T0))"; cat $T/gpu/summary.txt | tail -4
mkdir -p $T/g && tar xzf $T/gpu/gpu-results.tgz -C $T/g && grep -cE "^--- PASS" $T/g/test-iket.log; grep -E "^(--- |    --- )(FAIL|SKIP)" $T/g/*.log | head -20; grep -E "Batch" $T/g/test-iket.log | head -20
mkdir -p $R/gpu; cp $T/g/summary.txt $T/g/test-iket.log $R/gpu/ 2>/dev/null
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
