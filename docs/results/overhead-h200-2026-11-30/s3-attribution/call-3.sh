#!/bin/bash
# throwaway device script (not committed): gemm attribution variants
export PATH=$PATH:/usr/local/cuda/bin
R=$OUT/r3; mkdir -p $R
ARCH="-gencode=arch=compute_90a,code=sm_90a"
M=/tmp/m; mkdir -p $M
nvcc -O2 -std=c++17 $ARCH -Ikernels/include -o $M/bench kernels/bench/bench.cu -lcuda > $R/bench.build.txt 2>&1 &
nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -o $M/gemm_off.cubin kernels/hopper/gemm.cu &
nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -DHOPPER_SPIN_LIMIT=4000000 -o $M/gemm_dbg.cubin kernels/hopper/gemm.cu &
nvcc -cubin -O3 $ARCH -Ikernels/include -DIKET_ENABLE=1 -DIKET_WRAP=1 -o /tmp/ecw.cubin kernels/bench/eventcost.cu &
nvcc -cubin -O3 $ARCH -Ikernels/include -o /tmp/ecoff.cubin kernels/bench/eventcost.cu &
variant() { # name flags...
  local v=$1; shift
  local D=/tmp/v/$v; mkdir -p $D
  nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -Xptxas -v -DIKET_ENABLE=1 "$@" -o $D/gemm_on.cubin kernels/hopper/gemm.cu > $D/build.log 2>&1 || { echo "$v build failed"; cat $D/build.log; return; }
  grep -E "C75" $D/build.log | sed "s/^/$v: /"
}
for v in "base" "t1 -DGEMM_TRACE=1" "t6 -DGEMM_TRACE=6" "t30 -DGEMM_TRACE=30" "pp1 -DGEMM_PPLACE=1" "pp1p1 -DGEMM_PPLACE=1 -DGEMM_PLACE=1"; do variant $v & done
wait
for v in base t1 t6 t30 pp1 pp1p1; do cp $M/gemm_off.cubin $M/gemm_dbg.cubin /tmp/v/$v/; done
cuobjdump -sass /tmp/ecw.cubin > $R/eventcost_wrap.sass; cuobjdump -sass /tmp/ecoff.cubin > $R/eventcost_off.sass
python3 kernels/bench/sass_count.py $R/eventcost_wrap.sass $R/eventcost_off.sass > $R/sass-wrap.txt 2>&1; head -2 $R/sass-wrap.txt; grep "ev_loop body" $R/sass-wrap.txt
timeout 120 $M/bench check --kernels gemm --modules /tmp/v/pp1p1 --out /tmp/v/pp1p1 > $R/check-pp1p1.txt 2>&1; echo "check pp1p1 rc=$? $(grep -c correct $R/check-pp1p1.txt) correct lines"
for pass in 1 2 3; do
for v in base t1 t6 t30 pp1 pp1p1; do
  timeout 120 $M/bench time --kernels gemm --rounds 15 --modules /tmp/v/$v --out /tmp/v/$v --work /tmp/v/$v > $R/time-$v-$pass.txt 2>&1
  echo "$v pass $pass rc=$? $(grep -E '^gemm ' /tmp/v/$v/table-time.txt | awk '{print $2, $4, $5, $6}' | tr '\n' ' ')"
  rm -f /tmp/v/$v/table-time.txt /tmp/v/$v/*.bf16
done
done
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
cd $OUT && tar czf r3.tgz r3 && rm -rf r3
