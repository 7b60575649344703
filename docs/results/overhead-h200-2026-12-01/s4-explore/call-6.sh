#!/bin/bash
# session 4, call 6: ptxas perturbation: uninstrumented + one never-run store at the producer's end; producer loop forms (hoisted addresses, elect, vote)
export PATH=$PATH:/usr/local/cuda/bin
T0=$SECONDS
R=$OUT/c6; mkdir -p $R
ARCH="-gencode=arch=compute_90a,code=sm_90a"
M=/tmp/m; mkdir -p $M
nvcc -O2 -std=c++17 $ARCH -Ikernels/include -o $M/bench kernels/bench/bench.cu -lcuda > $R/bench.build.txt 2>&1 &
cub() { local out=$1; shift; nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -Xptxas -v "$@" -o $out kernels/hopper/gemm.cu > $out.log 2>&1 || { echo "$out build failed"; cat $out.log; }; }
cub $M/gemm_off.cubin &
cub $M/gemm_dbg.cubin -DHOPPER_SPIN_LIMIT=4000000 &
cub $M/dp.cubin -DGEMM_DUMMY_PROD &
cub $M/dc.cubin -DGEMM_DUMMY_CONS &
variant() { local v=$1; shift; local D=/tmp/v/$v; mkdir -p $D
  cub $D/gemm_on.cubin -DIKET_ENABLE=1 "$@" & cub $D/gemm_off.cubin $(echo "$@" | tr ' ' '\n' | grep -v -e IKET -e GEMM_TRACE | tr '\n' ' '); wait; }
V=(base "t0 -DGEMM_TRACE=0" "e -DGEMM_PELECT" "et0 -DGEMM_PELECT -DGEMM_TRACE=0" "v -DGEMM_PELECT -DGEMM_PVOTE" "vt0 -DGEMM_PELECT -DGEMM_PVOTE -DGEMM_TRACE=0" "h -DGEMM_PHOIST")
for v in "${V[@]}"; do variant $v & done
wait
echo "built at $((SECONDS-T0)) s"
for v in "${V[@]}"; do set -- $v; cp $M/gemm_dbg.cubin /tmp/v/$1/; done
cuobjdump -sass /tmp/v/v/gemm_off.cubin > $R/v_off.sass; cuobjdump -sass /tmp/v/v/gemm_on.cubin > $R/v_on.sass; cuobjdump -sass $M/dp.cubin > $R/dp.sass
run() { local l=$1 v=$2; shift 2
  env "$@" timeout 120 $M/bench time --kernels gemm --rounds 21 --modules /tmp/v/$v --out /tmp/v/$v --work /tmp/v/$v > $R/time-$l-$pass.txt 2>&1
  echo "$l pass $pass rc=$? t=$((SECONDS-T0)) $(grep -E '^gemm ' /tmp/v/$v/table-time.txt | awk '{print $2, $4, $5, $6, $7}' | tr '\n' ' ')"
  cp /tmp/v/$v/bench-time.json $R/time-$l-$pass.json 2>/dev/null
  rm -f /tmp/v/$v/table-time.txt /tmp/v/$v/*.bf16; }
P=IKET_BENCH_PARTIAL=1; C=IKET_BENCH_CONTROL
for pass in 1 2 3; do
  for x in "base base" "base_dp base $C=$M/dp.cubin" "base_dc base $C=$M/dc.cubin" "t0 t0 $P" "e e $C=$M/gemm_off.cubin" "et0 et0 $P" "v v $C=$M/gemm_off.cubin" "vt0 vt0 $P" "h h $C=$M/gemm_off.cubin"; do
    [ $((SECONDS-T0)) -gt 500 ] && { echo "stopping: time"; break 2; }
    run $x
  done
done
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
cd $OUT && tar czf c6.tgz c6 && rm -rf c6
