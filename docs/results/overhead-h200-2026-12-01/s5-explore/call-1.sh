#!/bin/bash
# session 5, call 1: a warp index the compiler knows is warp-uniform
# (__shfl_sync of threadIdx.x/32) in gemm.cu and pipeline.cu. Old = HEAD's
# kernels (probe/s5/old), new = the working tree's.
export PATH=$PATH:/usr/local/cuda/bin
T0=$SECONDS
R=$OUT/c1; mkdir -p $R
ARCH="-gencode=arch=compute_90a,code=sm_90a"
B=/tmp/b; mkdir -p $B
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $R/smi.txt 2>&1
nvcc --version | tail -2 >> $R/smi.txt
nvcc -O2 -std=c++17 $ARCH -Ikernels/include -o $B/bench kernels/bench/bench.cu -lcuda > $R/bench.build.txt 2>&1 &
cub() { local out=$1 src=$2; shift 2; nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -Xptxas -v "$@" -o $out $src > $out.log 2>&1 || { echo "$out build failed"; cat $out.log; }; }
for v in old new t0new; do mkdir -p /tmp/v/$v; done
for k in gemm pipeline; do
  cub /tmp/v/old/${k}_off.cubin probe/s5/old/$k.cu &
  cub /tmp/v/old/${k}_on.cubin probe/s5/old/$k.cu -DIKET_ENABLE=1 &
  cub /tmp/v/old/${k}_dbg.cubin probe/s5/old/$k.cu -DHOPPER_SPIN_LIMIT=4000000 &
  cub /tmp/v/new/${k}_off.cubin kernels/hopper/$k.cu &
  cub /tmp/v/new/${k}_on.cubin kernels/hopper/$k.cu -DIKET_ENABLE=1 &
  cub /tmp/v/new/${k}_dbg.cubin kernels/hopper/$k.cu -DHOPPER_SPIN_LIMIT=4000000 &
done
cub /tmp/v/t0new/gemm_on.cubin kernels/hopper/gemm.cu -DIKET_ENABLE=1 -DGEMM_TRACE=0 &
wait
echo "built at $((SECONDS-T0)) s"
cp /tmp/v/new/gemm_off.cubin /tmp/v/new/gemm_dbg.cubin /tmp/v/t0new/
# ab: old uninstrumented as "uninstrumented", new instrumented, new uninstrumented as control
mkdir -p /tmp/v/ab; for k in gemm pipeline; do cp /tmp/v/old/${k}_off.cubin /tmp/v/old/${k}_dbg.cubin /tmp/v/ab/; cp /tmp/v/new/${k}_on.cubin /tmp/v/ab/; done
for v in old new t0new; do for k in gemm pipeline; do [ -f /tmp/v/$v/${k}_on.cubin ] && { cuobjdump -sass /tmp/v/$v/${k}_on.cubin | gzip > $R/${k}_on_$v.sass.gz; grep -h "registers\|spill" /tmp/v/$v/${k}_on.cubin.log > $R/${k}_on_$v.ptxas.txt; }; done; done
for v in old new; do for k in gemm pipeline; do cuobjdump -sass /tmp/v/$v/${k}_off.cubin | gzip > $R/${k}_off_$v.sass.gz; done; done
(cd $R && python3 $OLDPWD/docs/results/overhead-h200-2026-12-01/s4-explore/sass-call-7/shape.py gemm_off_old.sass.gz gemm_on_old.sass.gz gemm_off_new.sass.gz gemm_on_new.sass.gz gemm_on_t0new.sass.gz) | tee $R/shape.txt
for f in $R/pipeline_*.sass.gz; do echo "$(basename $f) BSSY $(zcat $f | grep -c BSSY) BRA.DIV $(zcat $f | grep -c BRA.DIV) instrs $(zcat $f | grep -cE '^ +/\*[0-9a-f]{4}\*/')"; done | tee -a $R/shape.txt
# correctness of the new builds (all checks, both kernels)
timeout 200 $B/bench check --modules /tmp/v/new --out $R/check --work /tmp/w > $R/check-new.txt 2>&1; echo "check new rc=$? t=$((SECONDS-T0))"; tail -3 $R/check-new.txt
run() { local l=$1 v=$2 k=$3; shift 3
  env "$@" timeout 120 $B/bench time --kernels $k --rounds 21 $X --modules /tmp/v/$v --out /tmp/o/$l --work /tmp/w > $R/time-$l-$pass.txt 2>&1
  echo "$l pass $pass rc=$? t=$((SECONDS-T0)) $(grep -E "^$k " /tmp/o/$l/table-time.txt | awk '{print $2, $4, $5, $6, $7}' | tr '\n' ' ')"
  cp /tmp/o/$l/bench-time.json $R/time-$l-$pass.json 2>/dev/null; rm -f /tmp/o/$l/table-time.txt /tmp/w/*.bf16; }
mkdir -p /tmp/o/{old,new,ab,t0,pold,pnew,pab}
for pass in 1 2 3 4; do
  [ $((SECONDS-T0)) -gt 480 ] && { echo "stopping: time"; break; }
  X=; run old old gemm; run new new gemm
  X="--control /tmp/v/new"; run ab ab gemm; run pab ab pipeline; X=
  run t0 t0new gemm IKET_BENCH_PARTIAL=1
  run pold old pipeline; run pnew new pipeline
done
cd $OUT && tar czf c1.tgz c1 && rm -rf c1
