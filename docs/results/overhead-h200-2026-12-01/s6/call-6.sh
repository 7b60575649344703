#!/bin/bash
# session 6, call 6 (on fe18f74): does a branch-free consumer step help?
# src-exp4 = exp6e.patch (range_next_step, and the automatic flush without
# the per-lane test); uf: with Batch's active-mask check (one BSSY region
# left in the step), lean: without it (IKET_EXP_NOCHECK, no BSSY; unsafe,
# a measure only); against the committed kernel (cur); seven passes.
export PATH=$PATH:/usr/local/cuda/bin
T0=$SECONDS
R=$OUT/c6; mkdir -p $R
ARCH="-gencode=arch=compute_90a,code=sm_90a"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $R/smi.txt 2>&1
B=/tmp/b; mkdir -p $B
X=probe/s6/src-exp4
nvcc -O2 -std=c++17 $ARCH -Ikernels/include -o $B/bench kernels/bench/bench.cu -lcuda > $R/bench.build.txt 2>&1 &
cub() { local src=$1 out=$2; shift 2; nvcc -cubin -O3 -lineinfo $ARCH -I$src/include -I$src/hopper -Xptxas -v "$@" -o $out $src/hopper/gemm.cu > $out.log 2>&1 || { echo "$out build failed"; cat $out.log; }; }
V="cur uf lean"
for v in $V; do mkdir -p /tmp/v/$v; done
E=-DIKET_ENABLE=1
cub kernels /tmp/v/cur/gemm_off.cubin &
cub kernels /tmp/v/cur/gemm_dbg.cubin -DHOPPER_SPIN_LIMIT=4000000 &
cub kernels /tmp/v/cur/gemm_on.cubin $E &
cub $X /tmp/v/uf/gemm_on.cubin $E &
cub $X /tmp/v/lean/gemm_on.cubin $E -DIKET_EXP_NOCHECK &
wait
echo "built at $((SECONDS-T0)) s"
for v in uf lean; do cp /tmp/v/cur/gemm_off.cubin /tmp/v/cur/gemm_dbg.cubin /tmp/v/$v/; done
for v in $V; do cuobjdump -sass /tmp/v/$v/gemm_on.cubin | gzip > $R/${v}_on.sass.gz; echo "$v BSSY $(cuobjdump -sass /tmp/v/$v/gemm_on.cubin | grep -c BSSY) instrs $(cuobjdump -sass /tmp/v/$v/gemm_on.cubin | grep -cE '^\s+/\*[0-9a-f]{4}\*/')"; done
run() { local l=$1; shift
  mkdir -p /tmp/o/$l /tmp/w
  env "$@" timeout 120 $B/bench time --kernels gemm --rounds 21 $X2 --modules /tmp/v/$l --out /tmp/o/$l --work /tmp/w > $R/time-$l-$pass.txt 2>&1
  echo "$l pass $pass rc=$? t=$((SECONDS-T0)) $(grep -E "^gemm " /tmp/o/$l/table-time.txt | awk '{print $2, $4, $5, $6, $7}' | tr '\n' ' ')"
  cp /tmp/o/$l/bench-time.json $R/time-$l-$pass.json 2>/dev/null; rm -f /tmp/o/$l/table-time.txt /tmp/w/*.bf16; }
for pass in 1 2 3 4 5 6 7; do
  [ $((SECONDS-T0)) -gt 150 ] && { echo "stopping: time"; break; }
  run cur; run uf; run lean
done
cd $OUT && tar czf c6.tgz c6 && rm -rf c6
