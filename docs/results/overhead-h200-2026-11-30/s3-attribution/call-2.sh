#!/bin/bash
# throwaway device script (not committed): overhead run + gemm attribution variants
export PATH=$PATH:/usr/local/cuda/bin
R=$OUT/r2; mkdir -p $R
OUT=$R/oh bash scripts/overhead.sh > /dev/null 2>&1; echo "overhead rc=$?"
tail -14 $R/oh/overhead.txt
W=/tmp/iket-overhead; M=$W/modules
cp $W/gemm_on.sass $W/gemm_off.sass $W/eventcost_on.sass $R/ 2>/dev/null
ARCH="-gencode=arch=compute_90a,code=sm_90a"
nvcc -cubin -O3 $ARCH -Ikernels/include -DIKET_ENABLE=1 -DIKET_WRAP=1 -o /tmp/ecw.cubin kernels/bench/eventcost.cu && cuobjdump -sass /tmp/ecw.cubin > $R/eventcost_wrap.sass && python3 kernels/bench/sass_count.py $R/eventcost_wrap.sass $W/eventcost_off.sass > $R/sass-wrap.txt 2>&1
head -3 $R/sass-wrap.txt
variant() { # name flags...
  local v=$1; shift
  local D=/tmp/v/$v; mkdir -p $D
  cp $M/gemm_off.cubin $M/gemm_dbg.cubin $D/
  nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -Xptxas -v -DIKET_ENABLE=1 "$@" -o $D/gemm_on.cubin kernels/hopper/gemm.cu > $D/build.log 2>&1 || { echo "$v build failed"; cat $D/build.log; return; }
  grep -E "C75" $D/build.log
}
variant base
variant t1 -DGEMM_TRACE=1
variant t6 -DGEMM_TRACE=6
variant t24 -DGEMM_TRACE=24
variant p1 -DGEMM_PLACE=1
variant p2 -DGEMM_PLACE=2
variant n0 -DGEMM_NEXT=0
timeout 120 $M/bench check --kernels gemm --modules /tmp/v/p2 --out /tmp/v/p2 > $R/check-p2.txt 2>&1; echo "check p2 rc=$? $(grep -c correct $R/check-p2.txt) correct lines"
for pass in 1 2; do
for v in base t1 t6 t24 p1 p2 n0; do
  timeout 120 $M/bench time --kernels gemm --rounds 15 --modules /tmp/v/$v --out /tmp/v/$v --work /tmp/v/$v > $R/time-$v-$pass.txt 2>&1
  echo "$v pass $pass rc=$? $(grep -E '^gemm ' /tmp/v/$v/table-time.txt | awk '{print $2, $3, $4, $5}' | tr '\n' ' ')"
done
done
cd $OUT && tar czf r2.tgz r2 && rm -rf r2 && ls -la $OUT
