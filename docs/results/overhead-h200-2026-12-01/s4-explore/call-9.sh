#!/bin/bash
# session 4, call 9: does the exit record cost in the full build (every event)?
export PATH=$PATH:/usr/local/cuda/bin
T0=$SECONDS
R=$OUT/c9; mkdir -p $R
ARCH="-gencode=arch=compute_90a,code=sm_90a"
M=/tmp/m; mkdir -p $M
nvcc -O2 -std=c++17 $ARCH -Ikernels/include -o $M/bench kernels/bench/bench.cu -lcuda > $R/bench.build.txt 2>&1 &
cub() { local out=$1; shift; nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -Xptxas -v "$@" -o $out kernels/hopper/gemm.cu > $out.log 2>&1 || { echo "$out build failed"; cat $out.log; }; }
cub $M/gemm_off.cubin &
cub $M/gemm_dbg.cubin -DHOPPER_SPIN_LIMIT=4000000 &
variant() { local v=$1; shift; local D=/tmp/v/$v; mkdir -p $D; cub $D/gemm_on.cubin -DIKET_ENABLE=1 "$@"; }
V=(base "bne -DIKET_EXP_NOEXIT" "t0 -DGEMM_TRACE=0" "ne -DGEMM_TRACE=0 -DIKET_EXP_NOEXIT")
for v in "${V[@]}"; do variant $v & done
wait
echo "built at $((SECONDS-T0)) s"
for v in "${V[@]}"; do set -- $v; cp $M/gemm_off.cubin $M/gemm_dbg.cubin /tmp/v/$1/; done
for n in base bne; do cuobjdump -sass /tmp/v/$n/gemm_on.cubin > $R/$n.sass; done
run() { local l=$1 v=$2; shift 2
  env "$@" timeout 120 $M/bench time --kernels gemm --rounds 21 --modules /tmp/v/$v --out /tmp/v/$v --work /tmp/v/$v > $R/time-$l-$pass.txt 2>&1
  echo "$l pass $pass rc=$? t=$((SECONDS-T0)) $(grep -E '^gemm ' /tmp/v/$v/table-time.txt | awk '{print $2, $4, $5, $6, $7}' | tr '\n' ' ')"
  cp /tmp/v/$v/bench-time.json $R/time-$l-$pass.json 2>/dev/null
  rm -f /tmp/v/$v/table-time.txt /tmp/v/$v/*.bf16; }
P=IKET_BENCH_PARTIAL=1; N=IKET_BENCH_NOCHECK=1
for pass in 1 2 3 4; do
  for x in "base base" "bne bne $N" "t0 t0 $P" "ne ne $P $N"; do
    run $x
  done
done
cd $OUT && tar czf c9.tgz c9 && rm -rf c9
