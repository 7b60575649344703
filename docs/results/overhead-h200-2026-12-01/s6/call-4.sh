#!/bin/bash
# session 6, call 4 (on 6147997): the compute stamp taken after the MMAs'
# issue instead of before (late: src-exp3 = exp6c.patch, GEMM_EXP_LATE), six
# passes against the committed kernel (cur); then Nsight Compute warp-state
# samples of one 4096^3 launch each: uninstrumented (off), committed (cur),
# no per-k event (nok, GEMM_TRACE=24).
export PATH=$PATH:/usr/local/cuda/bin
T0=$SECONDS
R=$OUT/c4; mkdir -p $R
ARCH="-gencode=arch=compute_90a,code=sm_90a"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $R/smi.txt 2>&1
B=/tmp/b; mkdir -p $B
X8=probe/s6/src-exp3
nvcc -O2 -std=c++17 $ARCH -Ikernels/include -o $B/bench kernels/bench/bench.cu -lcuda > $R/bench.build.txt 2>&1 &
cub() { local src=$1 out=$2; shift 2; nvcc -cubin -O3 -lineinfo $ARCH -I$src/include -I$src/hopper -Xptxas -v "$@" -o $out $src/hopper/gemm.cu > $out.log 2>&1 || { echo "$out build failed"; cat $out.log; }; }
V="cur late nok"
for v in $V; do mkdir -p /tmp/v/$v; done
E=-DIKET_ENABLE=1
cub kernels /tmp/v/cur/gemm_off.cubin &
cub kernels /tmp/v/cur/gemm_dbg.cubin -DHOPPER_SPIN_LIMIT=4000000 &
cub kernels /tmp/v/cur/gemm_on.cubin $E &
cub $X8 /tmp/v/late/gemm_on.cubin $E -DGEMM_EXP_LATE &
cub kernels /tmp/v/nok/gemm_on.cubin $E -DGEMM_TRACE=24 &
wait
echo "built at $((SECONDS-T0)) s"
for v in late nok; do cp /tmp/v/cur/gemm_off.cubin /tmp/v/cur/gemm_dbg.cubin /tmp/v/$v/; done
cuobjdump -sass /tmp/v/late/gemm_on.cubin | gzip > $R/late_on.sass.gz
run() { local l=$1; shift
  mkdir -p /tmp/o/$l /tmp/w
  env "$@" timeout 120 $B/bench time --kernels gemm --rounds 21 $X --modules /tmp/v/$l --out /tmp/o/$l --work /tmp/w > $R/time-$l-$pass.txt 2>&1
  echo "$l pass $pass rc=$? t=$((SECONDS-T0)) $(grep -E "^gemm " /tmp/o/$l/table-time.txt | awk '{print $2, $4, $5, $6, $7}' | tr '\n' ' ')"
  cp /tmp/o/$l/bench-time.json $R/time-$l-$pass.json 2>/dev/null; rm -f /tmp/o/$l/table-time.txt /tmp/w/*.bf16; }
for pass in 1 2 3 4 5 6; do
  [ $((SECONDS-T0)) -gt 150 ] && { echo "stopping: time"; break; }
  X=; run cur; run late
done
ncu --version 2>&1 | tail -1
prof() { local name=$1 dir=$2 skip=$3; shift 3
  mkdir -p /tmp/o; env "$@" timeout 150 ncu --kernel-name gemm --launch-skip $skip --launch-count 1 --warp-sampling-interval 0 --section SourceCounters --section WarpStateStats --section SpeedOfLight -f --export $R/$name /tmp/b/bench time --kernels gemm --rounds 5 --warmup 1 --modules /tmp/v/$dir --out /tmp/o --work /tmp/o > $R/$name.ncu.log 2>&1; echo "$name ncu rc=$? t=$((SECONDS-T0))"
  ncu --import $R/$name.ncu-rep --page details --csv > $R/$name-details.csv 2>&1
  ncu --import $R/$name.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $R/$name-source.csv.gz
  rm -f $R/$name.ncu-rep; }
prof off cur 0
prof cur cur 1
prof nok nok 1 IKET_BENCH_PARTIAL=1
grep -h -E '"Duration"|"Elapsed Cycles"' $R/*-details.csv | head -10
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
