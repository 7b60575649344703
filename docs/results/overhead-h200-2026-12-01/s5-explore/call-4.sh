#!/bin/bash
# session 5, call 4: which part of the exit record costs: its timer anchor
# (IKET_EXP_EXIT=1: one clock read instead), its atomics (=2: plain stores),
# or all of it but one store (=3: the count alone).
export PATH=$PATH:/usr/local/cuda/bin
T0=$SECONDS
R=$OUT/c4; mkdir -p $R
ARCH="-gencode=arch=compute_90a,code=sm_90a"
B=/tmp/b; mkdir -p $B
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $R/smi.txt 2>&1
nvcc -O2 -std=c++17 $ARCH -Ikernels/include -o $B/bench kernels/bench/bench.cu -lcuda > $R/bench.build.txt 2>&1 &
cub() { local out=$1; shift; nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -Xptxas -v "$@" -o $out kernels/hopper/gemm.cu > $out.log 2>&1 || { echo "$out build failed"; cat $out.log; }; }
V="t0 t0ne t0x1 t0x2 t0x3 base x1 x2"
for v in $V; do mkdir -p /tmp/v/$v; done
cub /tmp/v/base/gemm_off.cubin &
cub /tmp/v/base/gemm_dbg.cubin -DHOPPER_SPIN_LIMIT=4000000 &
E=-DIKET_ENABLE=1
cub /tmp/v/base/gemm_on.cubin $E &
cub /tmp/v/x1/gemm_on.cubin $E -DIKET_EXP_EXIT=1 &
cub /tmp/v/x2/gemm_on.cubin $E -DIKET_EXP_EXIT=2 &
cub /tmp/v/t0/gemm_on.cubin $E -DGEMM_TRACE=0 &
cub /tmp/v/t0ne/gemm_on.cubin $E -DGEMM_TRACE=0 -DIKET_EXP_NOEXIT &
for e in 1 2 3; do cub /tmp/v/t0x$e/gemm_on.cubin $E -DGEMM_TRACE=0 -DIKET_EXP_EXIT=$e & done
wait
echo "built at $((SECONDS-T0)) s"
for v in $V; do [ $v = base ] || cp /tmp/v/base/gemm_off.cubin /tmp/v/base/gemm_dbg.cubin /tmp/v/$v/; done
for v in $V; do cuobjdump -sass /tmp/v/$v/gemm_on.cubin | gzip > $R/$v.sass.gz; done
run() { local l=$1; shift
  mkdir -p /tmp/o/$l /tmp/w
  env "$@" timeout 120 $B/bench time --kernels gemm --rounds 21 $X --modules /tmp/v/$l --out /tmp/o/$l --work /tmp/w > $R/time-$l-$pass.txt 2>&1
  echo "$l pass $pass rc=$? t=$((SECONDS-T0)) $(grep -E "^gemm " /tmp/o/$l/table-time.txt | awk '{print $2, $4, $5, $6, $7}' | tr '\n' ' ')"
  cp /tmp/o/$l/bench-time.json $R/time-$l-$pass.json 2>/dev/null; rm -f /tmp/o/$l/table-time.txt /tmp/w/*.bf16; }
P=IKET_BENCH_PARTIAL=1; N=IKET_BENCH_NOCHECK=1
for pass in 1 2 3 4 5; do
  [ $((SECONDS-T0)) -gt 480 ] && { echo "stopping: time"; break; }
  X=; run t0 $P; run t0ne $P $N; run t0x1 $P; run t0x2 $P; run t0x3 $P $N; run base; run x1; run x2
done
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
