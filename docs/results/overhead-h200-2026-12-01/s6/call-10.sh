#!/bin/bash
# session 6, call 10 (on fc3939c, the final code: Batch's second-review
# hardening): scripts/gpu.sh, scripts/overhead.sh, and five passes of the
# final gemm against fe18f74's (prev).
export PATH=$PATH:/usr/local/cuda/bin
T0=$SECONDS
R=$OUT/c10; mkdir -p $R
ARCH="-gencode=arch=compute_90a,code=sm_90a"
T=/tmp/gpu; mkdir -p $T
OUT=$T/gpu bash scripts/gpu.sh > $T/gpu.console 2>&1; echo "gpu.sh rc=$? t=$((SECONDS-T0))"; tail -18 $T/gpu/summary.txt
mkdir -p $T/g && tar xzf $T/gpu/gpu-results.tgz -C $T/g && grep -cE "^--- PASS" $T/g/test-iket.log; grep -E "^--- (PASS|FAIL): TestGPU(Batch|Pairs|Lanes|Timing|RunAndCapture|ExitRecord)" $T/g/test-iket.log
mkdir -p $R/gpu; cp $T/g/summary.txt $T/g/test-iket.log $R/gpu/
IKET_COMMIT=fc3939c OUT=$R/ov bash scripts/overhead.sh > $R/ov.console 2>&1; echo "overhead rc=$? t=$((SECONDS-T0))"; head -1 $R/ov/overhead.log; tail -5 $R/ov/overhead.txt
rm -f $R/ov/trace-pipeline.iket $R/ov/trace-gemm.iket
B=/tmp/b; mkdir -p $B
P=probe/s6/src-head3
nvcc -O2 -std=c++17 $ARCH -Ikernels/include -o $B/bench kernels/bench/bench.cu -lcuda > $R/bench.build.txt 2>&1 &
cub() { local src=$1 out=$2; shift 2; nvcc -cubin -O3 -lineinfo $ARCH -I$src/include -I$src/hopper -Xptxas -v "$@" -o $out $src/hopper/gemm.cu > $out.log 2>&1 || { echo "$out build failed"; cat $out.log; }; }
for v in prev final; do mkdir -p /tmp/v/$v; done
E=-DIKET_ENABLE=1
cub $P /tmp/v/prev/gemm_off.cubin &
cub $P /tmp/v/prev/gemm_dbg.cubin -DHOPPER_SPIN_LIMIT=4000000 &
cub $P /tmp/v/prev/gemm_on.cubin $E &
cub kernels /tmp/v/final/gemm_off.cubin &
cub kernels /tmp/v/final/gemm_dbg.cubin -DHOPPER_SPIN_LIMIT=4000000 &
cub kernels /tmp/v/final/gemm_on.cubin $E &
wait
run() { local l=$1; shift
  mkdir -p /tmp/o/$l /tmp/w
  timeout 120 $B/bench time --kernels gemm --rounds 21 --modules /tmp/v/$l --out /tmp/o/$l --work /tmp/w > $R/time-$l-$pass.txt 2>&1
  echo "$l pass $pass rc=$? t=$((SECONDS-T0)) $(grep -E "^gemm " /tmp/o/$l/table-time.txt | awk '{print $2, $4, $5, $6, $7, $8}' | tr '\n' ' ')"
  cp /tmp/o/$l/bench-time.json $R/time-$l-$pass.json 2>/dev/null; rm -f /tmp/o/$l/table-time.txt /tmp/w/*.bf16; }
for pass in 1 2 3 4 5; do
  [ $((SECONDS-T0)) -gt 300 ] && { echo "stopping: time"; break; }
  run prev; run final
done
cd $OUT && tar czf c10.tgz c10 && rm -rf c10
