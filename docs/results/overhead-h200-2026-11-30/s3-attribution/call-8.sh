#!/bin/bash
export PATH=$PATH:/usr/local/cuda/bin
R=$OUT/r8; mkdir -p $R
ARCH="-gencode=arch=compute_90a,code=sm_90a"
M=/tmp/m; mkdir -p $M
nvcc -O2 -std=c++17 $ARCH -Ikernels/include -o $M/bench kernels/bench/bench.cu -lcuda > $R/bench.build.txt 2>&1 &
build() { # dir name flags...
  local D=/tmp/v/$1 n=$2; shift 2; mkdir -p $D
  nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -Xptxas -v "$@" -o $D/$n.cubin kernels/hopper/gemm.cu > $D/$n.log 2>&1 || { echo "$D/$n build failed"; cat $D/$n.log; }
  grep -E "C75" $D/$n.log | grep -v "function call" | sed "s@^@$D/$n: @"
}
build base gemm_off &
build base gemm_dbg -DHOPPER_SPIN_LIMIT=4000000 &
for v in n1 n1sts n1nowd n0t18 n0t20 t17n1; do mkdir -p /tmp/v/$v; done
build n1 gemm_on -DIKET_ENABLE=1 -DIKET_EXP_NEXT1=1 &
build n1sts gemm_on -DIKET_ENABLE=1 -DIKET_EXP_NEXT1=1 -DIKET_EXP_STS=1 &
build n1nowd gemm_on -DIKET_ENABLE=1 -DIKET_EXP_NEXT1=1 -DGEMM_EXP_NOWD=1 &
build n0t18 gemm_on -DIKET_ENABLE=1 -DGEMM_NEXT=0 -DGEMM_TRACE=18 &
build n0t20 gemm_on -DIKET_ENABLE=1 -DGEMM_NEXT=0 -DGEMM_TRACE=20 &
build t17n1 gemm_on -DIKET_ENABLE=1 -DIKET_EXP_NEXT1=1 -DGEMM_TRACE=17 &
wait
for v in n1 n1sts n1nowd n0t18 n0t20 t17n1; do cp /tmp/v/base/gemm_off.cubin /tmp/v/base/gemm_dbg.cubin /tmp/v/$v/; done
run() {
  local l=$1 v=$2; shift 2
  env "$@" timeout 120 $M/bench time --kernels gemm --rounds 15 --modules /tmp/v/$v --out /tmp/v/$v --work /tmp/v/$v > $R/time-$l-$pass.txt 2>&1
  echo "$l pass $pass rc=$? $(grep -E '^gemm ' /tmp/v/$v/table-time.txt | awk '{print $2, $4, $5, $6}' | tr '\n' ' ')"
  rm -f /tmp/v/$v/table-time.txt /tmp/v/$v/*.bf16
}
for pass in 1 2 3; do
  run n1 n1
  run n1sts n1sts
  run n1nowd n1nowd
  run n0t18 n0t18
  run n0t20 n0t20
  run t17n1 t17n1
done
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
cd $OUT && tar czf r8.tgz r8 && rm -rf r8
