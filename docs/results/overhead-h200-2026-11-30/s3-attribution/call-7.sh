#!/bin/bash
export PATH=$PATH:/usr/local/cuda/bin
R=$OUT/r7; mkdir -p $R
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
build base gemm_on -DIKET_ENABLE=1 &
for v in rlx rlxn1 rlxt16; do build $v gemm_off -DHOPPER_RELAXED=1 & build $v gemm_dbg -DHOPPER_RELAXED=1 -DHOPPER_SPIN_LIMIT=4000000 & done
build rlx gemm_on -DIKET_ENABLE=1 -DHOPPER_RELAXED=1 &
build rlxn1 gemm_on -DIKET_ENABLE=1 -DHOPPER_RELAXED=1 -DIKET_EXP_NEXT1=1 &
build rlxt16 gemm_on -DIKET_ENABLE=1 -DHOPPER_RELAXED=1 -DGEMM_TRACE=16 &
wait
cuobjdump -sass /tmp/v/rlx/gemm_on.cubin > $R/gemm_on-rlx.sass
timeout 150 $M/bench check --kernels gemm --modules /tmp/v/rlx --out /tmp/v/rlx > $R/check-rlx.txt 2>&1; echo "check rlx rc=$? $(grep -c correct $R/check-rlx.txt) correct lines"
run() {
  local l=$1 v=$2; shift 2
  env "$@" timeout 120 $M/bench time --kernels gemm --rounds 15 --modules /tmp/v/$v --out /tmp/v/$v --work /tmp/v/$v > $R/time-$l-$pass.txt 2>&1
  echo "$l pass $pass rc=$? $(grep -E '^gemm ' /tmp/v/$v/table-time.txt | awk '{print $2, $4, $5, $6}' | tr '\n' ' ')"
  rm -f /tmp/v/$v/table-time.txt /tmp/v/$v/*.bf16
}
for pass in 1 2 3; do
  run base base
  run rlx rlx
  run rlxn1 rlxn1
  run rlxcap0 rlx IKET_BENCH_CAP=0
  run rlxt16 rlxt16
done
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
cd $OUT && tar czf r7.tgz r7 && rm -rf r7
