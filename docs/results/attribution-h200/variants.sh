#!/bin/bash
# Where the gemm's tracing cost is, at 4096^3 (8192^3 read by paired
# ratio), on f295e2b: five passes of bench time --rounds 21 of the kernel
# as committed (base), its consumer loop with the last k step peeled
# (peel: probe/src-peel = peel.patch, both builds, --control base),
# pairs stored every 32nd k step only (probe/src-exp = variants.patch:
# GEMM_EXP_SPARSE=1 for the consumers, 2 for the producer too; timing
# only), no per-k event (nok: GEMM_TRACE=24, roles and epilogues), no
# event (t0: GEMM_TRACE=0), the start record alone (t0nx) and every event
# without the exit record (nx); then scripts/gpu.sh.
export PATH=$PATH:/usr/local/cuda/bin
T0=$SECONDS
R=$OUT/c1; mkdir -p $R
ARCH="-gencode=arch=compute_90a,code=sm_90a"
B=/tmp/b; mkdir -p $B
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $R/smi.txt 2>&1
X6=probe/src-exp; P6=probe/src-peel
nvcc -O2 -std=c++17 $ARCH -I$X6/include -o $B/bench $X6/bench/bench.cu -lcuda > $R/bench.build.txt 2>&1 &
cub() { local src=$1 out=$2; shift 2; nvcc -cubin -O3 -lineinfo $ARCH -I$src/include -I$src/hopper -Xptxas -v "$@" -o $out $src/hopper/gemm.cu > $out.log 2>&1 || { echo "$out build failed"; cat $out.log; }; }
V="base peel nok sp1 sp2 t0 t0nx nx"
for v in $V; do mkdir -p /tmp/v/$v; done
E=-DIKET_ENABLE=1
cub kernels /tmp/v/base/gemm_off.cubin &
cub kernels /tmp/v/base/gemm_dbg.cubin -DHOPPER_SPIN_LIMIT=4000000 &
cub kernels /tmp/v/base/gemm_on.cubin $E &
cub $P6 /tmp/v/peel/gemm_off.cubin &
cub $P6 /tmp/v/peel/gemm_dbg.cubin -DHOPPER_SPIN_LIMIT=4000000 &
cub $P6 /tmp/v/peel/gemm_on.cubin $E &
cub kernels /tmp/v/nok/gemm_on.cubin $E -DGEMM_TRACE=24 &
cub $X6 /tmp/v/sp1/gemm_on.cubin $E -DGEMM_EXP_SPARSE=1 &
cub $X6 /tmp/v/sp2/gemm_on.cubin $E -DGEMM_EXP_SPARSE=2 &
cub kernels /tmp/v/t0/gemm_on.cubin $E -DGEMM_TRACE=0 &
cub $X6 /tmp/v/t0nx/gemm_on.cubin $E -DGEMM_TRACE=0 -DIKET_EXP_NOEXIT &
cub $X6 /tmp/v/nx/gemm_on.cubin $E -DIKET_EXP_NOEXIT &
wait
echo "built at $((SECONDS-T0)) s"
for v in nok sp1 sp2 t0 t0nx nx; do cp /tmp/v/base/gemm_off.cubin /tmp/v/base/gemm_dbg.cubin /tmp/v/$v/; done
for v in $V; do cuobjdump -sass /tmp/v/$v/gemm_on.cubin | gzip > $R/${v}_on.sass.gz; done
cuobjdump -sass /tmp/v/base/gemm_off.cubin | gzip > $R/base_off.sass.gz; cuobjdump -sass /tmp/v/peel/gemm_off.cubin | gzip > $R/peel_off.sass.gz
run() { local l=$1; shift
  mkdir -p /tmp/o/$l /tmp/w
  env "$@" timeout 120 $B/bench time --kernels gemm --rounds 21 $X --modules /tmp/v/$l --out /tmp/o/$l --work /tmp/w > $R/time-$l-$pass.txt 2>&1
  echo "$l pass $pass rc=$? t=$((SECONDS-T0)) $(grep -E "^gemm " /tmp/o/$l/table-time.txt | awk '{print $2, $4, $5, $6, $7}' | tr '\n' ' ')"
  cp /tmp/o/$l/bench-time.json $R/time-$l-$pass.json 2>/dev/null; rm -f /tmp/o/$l/table-time.txt /tmp/w/*.bf16; }
P=IKET_BENCH_PARTIAL=1; N=IKET_BENCH_NOCHECK=1
for pass in 1 2 3 4 5; do
  [ $((SECONDS-T0)) -gt 330 ] && { echo "stopping: time"; break; }
  X=; run base; X="--control /tmp/v/base"; run peel; X=; run sp1; run nok $P; run sp2; run t0 $P; run t0nx $P $N; run nx $N
done
T=/tmp/gpu; OUT2=$T; mkdir -p $T
OUT=$T/gpu bash scripts/gpu.sh > $T/gpu.console 2>&1; echo "gpu.sh rc=$? t=$((SECONDS-T0))"; cat $T/gpu/summary.txt
mkdir -p $T/g && tar xzf $T/gpu/gpu-results.tgz -C $T/g && grep -cE "^--- PASS" $T/g/test-iket.log; grep -E "^--- (FAIL|SKIP)|SKIP" $T/g/*.log | head -20
mkdir -p $R/gpu; cp $T/g/summary.txt $T/g/test-iket.log $R/gpu/ 2>/dev/null
cd $OUT && tar czf c1.tgz c1 && rm -rf c1
