#!/bin/bash
# session 4, call 1: where the gemm's fixed and per-k tracing cost goes (variants of the working tree)
export PATH=$PATH:/usr/local/cuda/bin
T0=$SECONDS
R=$OUT/c1; mkdir -p $R
ARCH="-gencode=arch=compute_90a,code=sm_90a"
M=/tmp/m; mkdir -p $M
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $R/smi.txt
nvcc -O2 -std=c++17 $ARCH -Ikernels/include -o $M/bench kernels/bench/bench.cu -lcuda > $R/bench.build.txt 2>&1 &
nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -o $M/gemm_off.cubin kernels/hopper/gemm.cu &
nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -DHOPPER_SPIN_LIMIT=4000000 -o $M/gemm_dbg.cubin kernels/hopper/gemm.cu 2>/dev/null &
variant() { local v=$1; shift; local D=/tmp/v/$v; mkdir -p $D
  nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -Xptxas -v -DIKET_ENABLE=1 "$@" -o $D/gemm_on.cubin kernels/hopper/gemm.cu > $D/build.log 2>&1 || { echo "$v build failed"; cat $D/build.log; }
  grep -E "C75" $D/build.log | sed "s/^/$v: /"; }
V=(base "t0 -DGEMM_TRACE=0" "t0na -DGEMM_TRACE=0 -DIKET_EXP_NOANCHOR" "t0late -DGEMM_TRACE=0 -DGEMM_TR_LATE" "pst -DGEMM_PSTAMP" "cst -DGEMM_CSTAMP" "l0 -DIKET_EXP_LANE0" "combo -DGEMM_PSTAMP -DGEMM_CSTAMP -DIKET_EXP_LANE0")
for v in "${V[@]}"; do variant $v & done
wait
echo "built at $((SECONDS-T0)) s"
for v in "${V[@]}"; do set -- $v; cp $M/gemm_off.cubin $M/gemm_dbg.cubin /tmp/v/$1/; done
cuobjdump -sass /tmp/v/base/gemm_on.cubin > $R/base_on.sass; cuobjdump -sass $M/gemm_off.cubin > $R/off.sass
cuobjdump -sass /tmp/v/combo/gemm_on.cubin > $R/combo_on.sass
run() { local l=$1 v=$2; shift 2
  env "$@" timeout 120 $M/bench time --kernels gemm --rounds 21 --modules /tmp/v/$v --out /tmp/v/$v --work /tmp/v/$v > $R/time-$l-$pass.txt 2>&1
  echo "$l pass $pass rc=$? t=$((SECONDS-T0)) $(grep -E '^gemm ' /tmp/v/$v/table-time.txt | awk '{print $2, $4, $5, $6, $7}' | tr '\n' ' ')"
  cp /tmp/v/$v/bench-time.json $R/time-$l-$pass.json 2>/dev/null
  rm -f /tmp/v/$v/table-time.txt /tmp/v/$v/*.bf16; }
for pass in 1 2; do
  for l in base t0 t0na t0late pst cst l0 combo; do
    [ $((SECONDS-T0)) -gt 470 ] && { echo "stopping: time"; break 2; }
    case $l in t0*) run $l $l IKET_BENCH_PARTIAL=1;; *) run $l $l;; esac
  done
done
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
cd $OUT && tar czf c1.tgz c1 && rm -rf c1
