#!/bin/bash
# session 5, call 10: scripts/gpu.sh on a865851 (the red.global helpers from one macro)
T=/tmp/c10; mkdir -p $T
OUT=$T/gpu bash scripts/gpu.sh > $T/gpu.console 2>&1; echo "gpu.sh rc=$?"; cat $T/gpu/summary.txt
mkdir -p $T/g && tar xzf $T/gpu/gpu-results.tgz -C $T/g && grep -cE "^--- PASS" $T/g/test-iket.log; grep -E "^--- (FAIL|SKIP)" $T/g/*.log | head
cp $T/g/summary.txt $T/g/test-iket.log $OUT/ 2>/dev/null
