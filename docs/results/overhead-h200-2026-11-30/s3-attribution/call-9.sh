#!/bin/bash
# attribution on the TMA-store epilogue kernel (commit after 4143ce6)
export PATH=$PATH:/usr/local/cuda/bin
R=$OUT/r9; mkdir -p $R
ARCH="-gencode=arch=compute_90a,code=sm_90a"
M=/tmp/m; mkdir -p $M
nvcc -O2 -std=c++17 $ARCH -Ikernels/include -o $M/bench kernels/bench/bench.cu -lcuda > $R/bench.build.txt 2>&1 &
nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -o $M/gemm_off.cubin kernels/hopper/gemm.cu &
nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -DHOPPER_SPIN_LIMIT=4000000 -o $M/gemm_dbg.cubin kernels/hopper/gemm.cu 2>/dev/null &
variant() { local v=$1; shift; local D=/tmp/v/$v; mkdir -p $D
  nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -Xptxas -v -DIKET_ENABLE=1 "$@" -o $D/gemm_on.cubin kernels/hopper/gemm.cu > $D/build.log 2>&1 || { echo "$v build failed"; cat $D/build.log; }
  grep -E "C75" $D/build.log | sed "s/^/$v: /"; }
for v in "base" "t16 -DGEMM_TRACE=16" "t1 -DGEMM_TRACE=1" "t6 -DGEMM_TRACE=6" "t24 -DGEMM_TRACE=24"; do variant $v & done
wait
for v in base t16 t1 t6 t24; do cp $M/gemm_off.cubin $M/gemm_dbg.cubin /tmp/v/$v/; done
run() { local l=$1 v=$2; shift 2
  env "$@" timeout 120 $M/bench time --kernels gemm --rounds 15 --modules /tmp/v/$v --out /tmp/v/$v --work /tmp/v/$v > $R/time-$l-$pass.txt 2>&1
  echo "$l pass $pass rc=$? $(grep -E '^gemm ' /tmp/v/$v/table-time.txt | awk '{print $2, $4, $5, $6}' | tr '\n' ' ')"
  rm -f /tmp/v/$v/table-time.txt /tmp/v/$v/*.bf16; }
for pass in 1 2 3; do
  run base base
  run t16 t16
  run t1 t1 IKET_BENCH_PARTIAL=1
  run t6 t6 IKET_BENCH_PARTIAL=1
  run t24 t24
  run cap0 base IKET_BENCH_CAP=0
done
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
cd $OUT && tar czf r9.tgz r9 && rm -rf r9
