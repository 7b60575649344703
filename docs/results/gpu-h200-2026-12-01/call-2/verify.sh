#!/bin/bash
# session 4, verification call after the review: scripts/gpu.sh (TestGPUPairs in stop, safe-lanes and wrap builds)
T=/tmp/ver; mkdir -p $T
OUT=$T/gpu bash scripts/gpu.sh > $T/gpu.console 2>&1; echo "gpu.sh rc=$?"; cat $T/gpu/summary.txt
mkdir -p $T/r && tar xzf $T/gpu/gpu-results.tgz -C $T/r && grep -E "^(=== RUN|--- |    --- ).*Pairs" $T/r/test-iket.log
grep -E "^--- FAIL|^    --- FAIL" -A8 $T/r/test-iket.log | head -40
cp $T/r/test-iket.log $T/r/summary.txt $T/r/run.log $T/r/calibrate-spread.log $OUT/ 2>/dev/null
