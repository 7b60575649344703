#!/bin/bash
# session 5, call 8 (on 826d8bd plus call-8.patch): each consumer k-step's
# pair stored one step later, right after the next data wait, away from the
# slot's arrive (GEMM_EXP_DEFER).
export PATH=$PATH:/usr/local/cuda/bin
T0=$SECONDS
R=$OUT/c8; mkdir -p $R
ARCH="-gencode=arch=compute_90a,code=sm_90a"
B=/tmp/b; mkdir -p $B
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $R/smi.txt 2>&1
nvcc -O2 -std=c++17 $ARCH -Ikernels/include -o $B/bench kernels/bench/bench.cu -lcuda > $R/bench.build.txt 2>&1 &
cub() { local out=$1; shift; nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -Xptxas -v "$@" -o $out kernels/hopper/gemm.cu > $out.log 2>&1 || { echo "$out build failed"; cat $out.log; }; }
V="base defer"
for v in $V; do mkdir -p /tmp/v/$v; done
cub /tmp/v/base/gemm_off.cubin &
cub /tmp/v/base/gemm_dbg.cubin -DHOPPER_SPIN_LIMIT=4000000 &
E=-DIKET_ENABLE=1
cub /tmp/v/base/gemm_on.cubin $E &
cub /tmp/v/defer/gemm_on.cubin $E -DGEMM_EXP_DEFER &
wait
echo "built at $((SECONDS-T0)) s"
for v in $V; do [ $v = base ] || cp /tmp/v/base/gemm_off.cubin /tmp/v/base/gemm_dbg.cubin /tmp/v/$v/; done
for v in $V; do cuobjdump -sass /tmp/v/$v/gemm_on.cubin | gzip > $R/$v.sass.gz; done
run() { local l=$1; shift
  mkdir -p /tmp/o/$l /tmp/w
  env "$@" timeout 120 $B/bench time --kernels gemm --rounds 21 $X --modules /tmp/v/$l --out /tmp/o/$l --work /tmp/w > $R/time-$l-$pass.txt 2>&1
  echo "$l pass $pass rc=$? t=$((SECONDS-T0)) $(grep -E "^gemm " /tmp/o/$l/table-time.txt | awk '{print $2, $4, $5, $6, $7}' | tr '\n' ' ')"
  cp /tmp/o/$l/bench-time.json $R/time-$l-$pass.json 2>/dev/null; rm -f /tmp/o/$l/table-time.txt /tmp/w/*.bf16; }
P=IKET_BENCH_PARTIAL=1; N=IKET_BENCH_NOCHECK=1
for pass in 1 2 3 4 5 6 7; do
  [ $((SECONDS-T0)) -gt 480 ] && { echo "stopping: time"; break; }
  X=; run base; run defer
done
cd $OUT && tar czf c8.tgz c8 && rm -rf c8
