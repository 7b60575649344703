#!/bin/bash
# session 6, call 13 (on 9448c77, after the final read's Batch simplification):
# scripts/gpu.sh and scripts/overhead.sh.
export PATH=$PATH:/usr/local/cuda/bin
R=$OUT/c13; mkdir -p $R
T=/tmp/gpu; mkdir -p $T
OUT=$T/gpu timeout 150 bash scripts/gpu.sh > $T/gpu.console 2>&1; echo "gpu.sh rc=$?"; tail -17 $T/gpu/summary.txt
mkdir -p $T/g && tar xzf $T/gpu/gpu-results.tgz -C $T/g && grep -E "^--- (PASS|FAIL): TestGPU(Batch|Pairs|Lanes|Timing|RunAndCapture|ExitRecord)" $T/g/test-iket.log
mkdir -p $R/gpu; cp $T/g/summary.txt $T/g/test-iket.log $R/gpu/
IKET_COMMIT=9448c77 OUT=$R/ov timeout 150 bash scripts/overhead.sh > $R/ov.console 2>&1; echo "overhead rc=$?"; head -1 $R/ov/overhead.log; tail -4 $R/ov/overhead.txt
rm -f $R/ov/trace-pipeline.iket $R/ov/trace-gemm.iket
cd $OUT && tar czf c13.tgz c13 && rm -rf c13
