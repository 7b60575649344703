#!/bin/bash
# throwaway device probe (not committed)
set -x
export PATH=$PATH:/usr/local/cuda/bin
ARCH="-gencode=arch=compute_90a,code=sm_90a"
nvcc --version | tail -1
( cd probe && nvcc -cubin -O3 $ARCH -o $OUT/clk13.cubin clk.cu && cuobjdump -sass $OUT/clk13.cubin > $OUT/clk13.sass && python3 count.py $OUT/clk13.sass > $OUT/clk13.txt )
for v in off on; do F=""; [ $v = on ] && F="-DIKET_ENABLE=1"; nvcc -cubin -O3 $ARCH -Ikernels/include $F -Xptxas -v -o /tmp/gemm_$v.cubin kernels/hopper/gemm.cu > $OUT/gemm_$v.build13.txt 2>&1; cuobjdump -sass /tmp/gemm_$v.cubin > $OUT/gemm_$v.13.sass; done
OUT=$OUT/oh1 bash scripts/overhead.sh > /dev/null 2>&1; echo rc=$?
tail -12 $OUT/oh1/overhead.txt
IKET_EXTRA_FLAGS=-DGEMM_TRACE=16 OUT=$OUT/oh2 bash scripts/overhead.sh > /dev/null 2>&1; echo rc=$?
tail -8 $OUT/oh2/overhead.txt
grep -h "event =" $OUT/clk13.txt
