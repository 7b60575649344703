#!/bin/bash
# session 5, call 2 (on the uniform-warp kernel): where the exit record's
# cost goes now, and whether relaxed mbarrier arrives change the events' cost.
export PATH=$PATH:/usr/local/cuda/bin
T0=$SECONDS
R=$OUT/c2; mkdir -p $R
ARCH="-gencode=arch=compute_90a,code=sm_90a"
B=/tmp/b; mkdir -p $B
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $R/smi.txt 2>&1
nvcc -O2 -std=c++17 $ARCH -Ikernels/include -o $B/bench kernels/bench/bench.cu -lcuda > $R/bench.build.txt 2>&1 &
cub() { local out=$1; shift; nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -Xptxas -v "$@" -o $out kernels/hopper/gemm.cu > $out.log 2>&1 || { echo "$out build failed"; cat $out.log; }; }
V="base nx fin t0 t0fin t0ne rel relfin"
for v in $V; do mkdir -p /tmp/v/$v; done
cub /tmp/v/base/gemm_off.cubin &
cub /tmp/v/base/gemm_dbg.cubin -DHOPPER_SPIN_LIMIT=4000000 &
cub /tmp/v/rel/gemm_off.cubin -DHOPPER_RELAXED &
E=-DIKET_ENABLE=1
cub /tmp/v/base/gemm_on.cubin $E &
cub /tmp/v/nx/gemm_on.cubin $E -DIKET_EXP_NOEXIT &
cub /tmp/v/fin/gemm_on.cubin $E -DIKET_EXP_FINISH &
cub /tmp/v/t0/gemm_on.cubin $E -DGEMM_TRACE=0 &
cub /tmp/v/t0fin/gemm_on.cubin $E -DGEMM_TRACE=0 -DIKET_EXP_FINISH &
cub /tmp/v/t0ne/gemm_on.cubin $E -DGEMM_TRACE=0 -DIKET_EXP_NOEXIT &
cub /tmp/v/rel/gemm_on.cubin $E -DHOPPER_RELAXED &
cub /tmp/v/relfin/gemm_on.cubin $E -DHOPPER_RELAXED -DIKET_EXP_FINISH &
wait
echo "built at $((SECONDS-T0)) s"
for v in nx fin t0 t0fin t0ne; do cp /tmp/v/base/gemm_off.cubin /tmp/v/base/gemm_dbg.cubin /tmp/v/$v/; done
cp /tmp/v/rel/gemm_off.cubin /tmp/v/relfin/; for v in rel relfin; do cp /tmp/v/base/gemm_dbg.cubin /tmp/v/$v/; done
for v in $V; do cuobjdump -sass /tmp/v/$v/gemm_on.cubin | gzip > $R/$v.sass.gz; done
cuobjdump -sass /tmp/v/base/gemm_off.cubin | gzip > $R/base_off.sass.gz; cuobjdump -sass /tmp/v/rel/gemm_off.cubin | gzip > $R/rel_off.sass.gz
run() { local l=$1; shift
  mkdir -p /tmp/o/$l /tmp/w
  env "$@" timeout 120 $B/bench time --kernels gemm --rounds 21 $X --modules /tmp/v/$l --out /tmp/o/$l --work /tmp/w > $R/time-$l-$pass.txt 2>&1
  echo "$l pass $pass rc=$? t=$((SECONDS-T0)) $(grep -E "^gemm " /tmp/o/$l/table-time.txt | awk '{print $2, $4, $5, $6, $7}' | tr '\n' ' ')"
  cp /tmp/o/$l/bench-time.json $R/time-$l-$pass.json 2>/dev/null; rm -f /tmp/o/$l/table-time.txt /tmp/w/*.bf16; }
P=IKET_BENCH_PARTIAL=1; N=IKET_BENCH_NOCHECK=1
for pass in 1 2 3 4 5; do
  [ $((SECONDS-T0)) -gt 480 ] && { echo "stopping: time"; break; }
  X=; run base; run nx $N; run fin; run t0 $P; run t0fin $P; run t0ne $P $N
  X="--control /tmp/v/base"; run rel; run relfin; X=
done
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
