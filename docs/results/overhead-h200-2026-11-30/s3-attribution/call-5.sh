#!/bin/bash
export PATH=$PATH:/usr/local/cuda/bin
R=$OUT/r5; mkdir -p $R
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
for v in "base" "sel -DGEMM_SEL=1" "seln -DGEMM_SEL=1 -DIKET_EXP_NEXT1=1" "sel1 -DGEMM_SEL=1 -DIKET_EXP_ONELANE=1" "seln1 -DGEMM_SEL=1 -DIKET_EXP_NEXT1=1 -DIKET_EXP_ONELANE=1"; do variant $v & done
wait
cuobjdump -sass $M/gemm_off.cubin > $R/gemm_off.sass
for v in base sel seln sel1 seln1; do cp $M/gemm_off.cubin $M/gemm_dbg.cubin /tmp/v/$v/; done
timeout 120 $M/bench check --kernels gemm --modules /tmp/v/sel --out /tmp/v/sel > $R/check-sel.txt 2>&1; echo "check sel rc=$? $(grep -c correct $R/check-sel.txt) correct lines"
run() {
  local l=$1 v=$2; shift 2
  env "$@" timeout 120 $M/bench time --kernels gemm --rounds 15 --modules /tmp/v/$v --out /tmp/v/$v --work /tmp/v/$v > $R/time-$l-$pass.txt 2>&1
  echo "$l pass $pass rc=$? $(grep -E '^gemm ' /tmp/v/$v/table-time.txt | awk '{print $2, $4, $5, $6}' | tr '\n' ' ')"
  rm -f /tmp/v/$v/table-time.txt /tmp/v/$v/*.bf16
}
for pass in 1 2 3; do
  run base base
  run sel sel
  run seln seln
  run sel1 sel1
  run seln1 seln1
  run seln1cap0 seln1 IKET_BENCH_CAP=0
done
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
cd $OUT && tar czf r5.tgz r5 && rm -rf r5
