#!/bin/bash
# session 4, final call: scripts/overhead.sh twice, scripts/gpu.sh, and an A/B of the gemm before and after range_next_pair
export PATH=$PATH:/usr/local/cuda/bin
T=/tmp/final; mkdir -p $T/ab
FO=$OUT
OUT=$T/ov1 bash scripts/overhead.sh > $T/ov1.console 2>&1; echo "overhead 1 rc=$?"; sed -n '/overhead summary/,$p' $T/ov1/overhead.txt | head -40
OUT=$T/ov2 WORK=/tmp/iket-ov2 bash scripts/overhead.sh > $T/ov2.console 2>&1; echo "overhead 2 rc=$?"; grep -E "^(gemm|pipeline) " $T/ov2/overhead.txt
OUT=$T/gpu bash scripts/gpu.sh > $T/gpu.console 2>&1; echo "gpu.sh rc=$?"; cat $T/gpu/summary.txt
M=/tmp/iket-overhead/modules
mkdir -p /tmp/ab/prev /tmp/ab/pair
nvcc -cubin -O3 -lineinfo -gencode=arch=compute_90a,code=sm_90a -Ikernels/include -Ikernels/hopper -Xptxas -v -DIKET_ENABLE=1 -o /tmp/ab/prev/gemm_on.cubin probe/gemm_prev.cu > $T/ab/prev.build.txt 2>&1 || cat $T/ab/prev.build.txt
cp $M/gemm_on.cubin /tmp/ab/pair/; for d in prev pair; do cp $M/gemm_off.cubin $M/gemm_dbg.cubin /tmp/ab/$d/; done
for pass in 1 2 3 4; do for d in prev pair; do
  timeout 120 $M/bench time --kernels gemm --rounds 21 --modules /tmp/ab/$d --out /tmp/ab/$d --work /tmp/ab/$d > $T/ab/time-$d-$pass.txt 2>&1
  echo "$d pass $pass rc=$? $(grep -E '^gemm ' /tmp/ab/$d/table-time.txt | awk '{print $2, $4, $5, $6, $7}' | tr '\n' ' ')"
  cp /tmp/ab/$d/bench-time.json $T/ab/time-$d-$pass.json; rm -f /tmp/ab/$d/table-time.txt /tmp/ab/$d/*.bf16
done; done
cp $T/ov1/trace-gemm.iket $FO/ 2>/dev/null
tar czf $FO/s4-final.tgz -C $T .
ls -la $FO
