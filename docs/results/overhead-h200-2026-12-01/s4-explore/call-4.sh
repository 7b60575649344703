#!/bin/bash
# session 4, call 4: the exit record before the last bulk wait (finish)
export PATH=$PATH:/usr/local/cuda/bin
T0=$SECONDS
R=$OUT/c4; mkdir -p $R
ARCH="-gencode=arch=compute_90a,code=sm_90a"
M=/tmp/m; mkdir -p $M
nvcc -O2 -std=c++17 $ARCH -Ikernels/include -o $M/bench kernels/bench/bench.cu -lcuda > $R/bench.build.txt 2>&1 &
nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -o $M/gemm_off.cubin kernels/hopper/gemm.cu &
nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -DHOPPER_RELAXED -o $M/gemm_off_rlx.cubin kernels/hopper/gemm.cu > $R/rlx.build.txt 2>&1 &
nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -DHOPPER_SPIN_LIMIT=4000000 -o $M/gemm_dbg.cubin kernels/hopper/gemm.cu 2>/dev/null &
variant() { local v=$1; shift; local D=/tmp/v/$v; mkdir -p $D
  nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -Xptxas -v -DIKET_ENABLE=1 "$@" -o $D/gemm_on.cubin kernels/hopper/gemm.cu > $D/build.log 2>&1 || { echo "$v build failed"; cat $D/build.log; }
  grep -E "C75" $D/build.log | sed "s/^/$v: /"; }
V=(base "t0 -DGEMM_TRACE=0" "fin -DGEMM_FIN" "t0fin -DGEMM_TRACE=0 -DGEMM_FIN" "t0pdfin -DGEMM_TRACE=0 -DGEMM_FIN -DIKET_EXP_PLAINDTOR"
   "pfin -DGEMM_PPAIR -DGEMM_CPAIR -DGEMM_FIN" "allfin -DGEMM_PPAIR -DGEMM_CPAIR -DIKET_EXP_LANE0 -DGEMM_FIN" "l0fin -DIKET_EXP_LANE0 -DGEMM_FIN")
for v in "${V[@]}"; do variant $v & done
wait
echo "built at $((SECONDS-T0)) s"; cat $R/rlx.build.txt
for v in "${V[@]}"; do set -- $v; cp $M/gemm_off.cubin $M/gemm_dbg.cubin /tmp/v/$1/; case "$*" in *RELAXED*) cp $M/gemm_off_rlx.cubin /tmp/v/$1/gemm_off.cubin;; esac; done
run() { local l=$1 v=$2; shift 2
  env "$@" timeout 120 $M/bench time --kernels gemm --rounds 21 --modules /tmp/v/$v --out /tmp/v/$v --work /tmp/v/$v > $R/time-$l-$pass.txt 2>&1
  echo "$l pass $pass rc=$? t=$((SECONDS-T0)) $(grep -E '^gemm ' /tmp/v/$v/table-time.txt | awk '{print $2, $4, $5, $6, $7}' | tr '\n' ' ')"
  cp /tmp/v/$v/bench-time.json $R/time-$l-$pass.json 2>/dev/null
  rm -f /tmp/v/$v/table-time.txt /tmp/v/$v/*.bf16; }
P=IKET_BENCH_PARTIAL=1
for pass in 1 2 3 4; do
  for x in "base base" "t0 t0 $P" "fin fin" "t0fin t0fin $P" "t0pdfin t0pdfin $P" "pfin pfin" "allfin allfin" "l0fin l0fin"; do
    [ $((SECONDS-T0)) -gt 500 ] && { echo "stopping: time"; break 2; }
    run $x
  done
done
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
