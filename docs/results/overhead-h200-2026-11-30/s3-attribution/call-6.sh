#!/bin/bash
export PATH=$PATH:/usr/local/cuda/bin
R=$OUT/r6; mkdir -p $R
ARCH="-gencode=arch=compute_90a,code=sm_90a"
M=/tmp/m; mkdir -p $M
nvcc -O2 -std=c++17 $ARCH -Ikernels/include -o $M/bench kernels/bench/bench.cu -lcuda > $R/bench.build.txt 2>&1 &
nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -o $M/gemm_off.cubin kernels/hopper/gemm.cu &
nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -DHOPPER_SPIN_LIMIT=4000000 -o $M/gemm_dbg.cubin kernels/hopper/gemm.cu 2>/dev/null &
variant() {
  local v=$1; shift
  local D=/tmp/v/$v; mkdir -p $D
  nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -Xptxas -v -DIKET_ENABLE=1 "$@" -o $D/gemm_on.cubin kernels/hopper/gemm.cu > $D/build.log 2>&1 || { echo "$v build failed"; cat $D/build.log; return; }
  grep -E "C75" $D/build.log | sed "s/^/$v: /"
  cuobjdump -sass $D/gemm_on.cubin > $R/gemm_on-$v.sass
}
for v in "base" "n1 -DIKET_EXP_NEXT1=1" "n1noclk -DIKET_EXP_NEXT1=1 -DIKET_EXP_NOCLOCK=1" "n1nost -DIKET_EXP_NEXT1=1 -DIKET_EXP_NOSTORE=1" "t16 -DGEMM_TRACE=16"; do variant $v & done
wait
cuobjdump -sass $M/gemm_off.cubin > $R/gemm_off.sass
for v in base n1 n1noclk n1nost t16; do cp $M/gemm_off.cubin $M/gemm_dbg.cubin /tmp/v/$v/; done

run() {
  local l=$1 v=$2; shift 2
  env "$@" timeout 120 $M/bench time --kernels gemm --rounds 15 --modules /tmp/v/$v --out /tmp/v/$v --work /tmp/v/$v > $R/time-$l-$pass.txt 2>&1
  echo "$l pass $pass rc=$? $(grep -E '^gemm ' /tmp/v/$v/table-time.txt | awk '{print $2, $4, $5, $6}' | tr '\n' ' ')"
  rm -f /tmp/v/$v/table-time.txt /tmp/v/$v/*.bf16
}
for pass in 1 2 3; do
  run base base
  run n1 n1
  run n1noclk n1noclk
  run n1nost n1nost
  run n1cap0 n1 IKET_BENCH_CAP=0
  run t16 t16
done
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
cd $OUT && tar czf r6.tgz r6 && rm -rf r6
