#!/bin/bash
# session 5, call 3 (on the uniform-warp kernel): store cache hints for the
# records, consumer leaders only, the exit record again (with NOCHECK), and
# relaxed arrives with the exit record before the final bulk wait.
export PATH=$PATH:/usr/local/cuda/bin
T0=$SECONDS
R=$OUT/c3; mkdir -p $R
ARCH="-gencode=arch=compute_90a,code=sm_90a"
B=/tmp/b; mkdir -p $B
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $R/smi.txt 2>&1
nvcc -O2 -std=c++17 $ARCH -Ikernels/include -o $B/bench kernels/bench/bench.cu -lcuda > $R/bench.build.txt 2>&1 &
cub() { local out=$1; shift; nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -Xptxas -v "$@" -o $out kernels/hopper/gemm.cu > $out.log 2>&1 || { echo "$out build failed"; cat $out.log; }; }
V="base cs na lead nx t0 t0ne relfin relfincs"
for v in $V; do mkdir -p /tmp/v/$v; done
cub /tmp/v/base/gemm_off.cubin &
cub /tmp/v/base/gemm_dbg.cubin -DHOPPER_SPIN_LIMIT=4000000 &
cub /tmp/v/relfin/gemm_off.cubin -DHOPPER_RELAXED -DIKET_EXP_FINISH &
E=-DIKET_ENABLE=1
cub /tmp/v/base/gemm_on.cubin $E &
cub /tmp/v/cs/gemm_on.cubin $E -DIKET_EXP_STCS &
cub /tmp/v/na/gemm_on.cubin $E -DIKET_EXP_STNA &
cub /tmp/v/lead/gemm_on.cubin $E -DGEMM_EXP_LEAD &
cub /tmp/v/nx/gemm_on.cubin $E -DIKET_EXP_NOEXIT &
cub /tmp/v/t0/gemm_on.cubin $E -DGEMM_TRACE=0 &
cub /tmp/v/t0ne/gemm_on.cubin $E -DGEMM_TRACE=0 -DIKET_EXP_NOEXIT &
cub /tmp/v/relfin/gemm_on.cubin $E -DHOPPER_RELAXED -DIKET_EXP_FINISH &
cub /tmp/v/relfincs/gemm_on.cubin $E -DHOPPER_RELAXED -DIKET_EXP_FINISH -DIKET_EXP_STCS &
wait
echo "built at $((SECONDS-T0)) s"
for v in cs na lead nx t0 t0ne; do cp /tmp/v/base/gemm_off.cubin /tmp/v/base/gemm_dbg.cubin /tmp/v/$v/; done
cp /tmp/v/relfin/gemm_off.cubin /tmp/v/relfincs/; for v in relfin relfincs; do cp /tmp/v/base/gemm_dbg.cubin /tmp/v/$v/; done
for v in $V; do cuobjdump -sass /tmp/v/$v/gemm_on.cubin | gzip > $R/$v.sass.gz; done
cuobjdump -sass /tmp/v/relfin/gemm_off.cubin | gzip > $R/relfin_off.sass.gz
run() { local l=$1; shift
  mkdir -p /tmp/o/$l /tmp/w
  env "$@" timeout 120 $B/bench time --kernels gemm --rounds 21 $X --modules /tmp/v/$l --out /tmp/o/$l --work /tmp/w > $R/time-$l-$pass.txt 2>&1
  echo "$l pass $pass rc=$? t=$((SECONDS-T0)) $(grep -E "^gemm " /tmp/o/$l/table-time.txt | awk '{print $2, $4, $5, $6, $7}' | tr '\n' ' ')"
  cp /tmp/o/$l/bench-time.json $R/time-$l-$pass.json 2>/dev/null; rm -f /tmp/o/$l/table-time.txt /tmp/w/*.bf16; }
P=IKET_BENCH_PARTIAL=1; N=IKET_BENCH_NOCHECK=1
for pass in 1 2 3 4 5; do
  [ $((SECONDS-T0)) -gt 480 ] && { echo "stopping: time"; break; }
  X=; run base; run cs; run na; run lead $P; run nx $P $N; run t0 $P; run t0ne $P $N
  X="--control /tmp/v/base"; run relfin; run relfincs; X=
done
cd $OUT && tar czf c3.tgz c3 && rm -rf c3
