#!/bin/bash
# session 4, call 2: the gemm's fixed cost (start/exit), stamps, paired stores, state write per launch
export PATH=$PATH:/usr/local/cuda/bin
T0=$SECONDS
R=$OUT/c2; mkdir -p $R
ARCH="-gencode=arch=compute_90a,code=sm_90a"
M=/tmp/m; mkdir -p $M
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $R/smi.txt
nvcc -O2 -std=c++17 $ARCH -Ikernels/include -o $M/bench kernels/bench/bench.cu -lcuda > $R/bench.build.txt 2>&1 &
nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -o $M/gemm_off.cubin kernels/hopper/gemm.cu &
nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -DHOPPER_SPIN_LIMIT=4000000 -o $M/gemm_dbg.cubin kernels/hopper/gemm.cu 2>/dev/null &
variant() { local v=$1; shift; local D=/tmp/v/$v; mkdir -p $D
  nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -Xptxas -v -DIKET_ENABLE=1 "$@" -o $D/gemm_on.cubin kernels/hopper/gemm.cu > $D/build.log 2>&1 || { echo "$v build failed"; cat $D/build.log; }
  grep -E "C75" $D/build.log | sed "s/^/$v: /"; }
V=(base "t0 -DGEMM_TRACE=0" "t0late -DGEMM_TRACE=0 -DGEMM_TR_LATE" "t0na -DGEMM_TRACE=0 -DIKET_EXP_NOANCHOR" "t16 -DGEMM_TRACE=16"
   "pst -DGEMM_PSTAMP" "l0 -DIKET_EXP_LANE0" "pl -DGEMM_PSTAMP -DIKET_EXP_LANE0" "pp -DGEMM_PPAIR" "cp -DGEMM_CPAIR"
   "ppcp -DGEMM_PPAIR -DGEMM_CPAIR" "all -DGEMM_PPAIR -DGEMM_CPAIR -DIKET_EXP_LANE0")
for v in "${V[@]}"; do variant $v & done
wait
echo "built at $((SECONDS-T0)) s"
for v in "${V[@]}"; do set -- $v; cp $M/gemm_off.cubin $M/gemm_dbg.cubin /tmp/v/$1/; done
cuobjdump -sass /tmp/v/all/gemm_on.cubin > $R/all_on.sass
run() { local l=$1 v=$2; shift 2
  env "$@" timeout 120 $M/bench time --kernels gemm --rounds 21 --modules /tmp/v/$v --out /tmp/v/$v --work /tmp/v/$v > $R/time-$l-$pass.txt 2>&1
  echo "$l pass $pass rc=$? t=$((SECONDS-T0)) $(grep -E '^gemm ' /tmp/v/$v/table-time.txt | awk '{print $2, $4, $5, $6, $7}' | tr '\n' ' ')"
  cp /tmp/v/$v/bench-time.json $R/time-$l-$pass.json 2>/dev/null
  rm -f /tmp/v/$v/table-time.txt /tmp/v/$v/*.bf16; }
P=IKET_BENCH_PARTIAL=1; S=IKET_BENCH_STATE=launch
for pass in 1 2 3; do
  for x in "base base" "base_sl base $S" "t0 t0 $P" "t0_sl t0 $P $S" "t0late t0late $P" "t0na t0na $P" "t16 t16" \
           "pst pst" "l0 l0" "pl pl" "pp pp" "cp cp" "ppcp ppcp" "all all" "all_sl all $S" "cap0 base IKET_BENCH_CAP=0" "allcap0 all IKET_BENCH_CAP=0"; do
    [ $((SECONDS-T0)) -gt 500 ] && { echo "stopping: time"; break 2; }
    run $x
  done
done
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
