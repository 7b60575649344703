#!/bin/bash
# session 6, call 8 (on the final code): scripts/gpu.sh after the GPU tests'
# helper refactor.
T=/tmp/gpu; mkdir -p $T
OUT=$T/gpu bash scripts/gpu.sh > $T/gpu.console 2>&1; echo "gpu.sh rc=$?"; tail -18 $T/gpu/summary.txt
mkdir -p $T/g && tar xzf $T/gpu/gpu-results.tgz -C $T/g && grep -cE "^--- PASS" $T/g/test-iket.log; grep -E "^--- (PASS|FAIL): TestGPU(Batch|Pairs|Lanes|Timing|RunAndCapture)" $T/g/test-iket.log
mkdir -p $OUT/c8; cp $T/g/summary.txt $T/g/test-iket.log $OUT/c8/
