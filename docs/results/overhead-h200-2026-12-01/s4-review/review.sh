#!/bin/bash
# session 4, after the final read of the change: scripts/overhead.sh and scripts/gpu.sh on the simplified header and bench
T=/tmp/rv; mkdir -p $T
OUT=$T/ov bash scripts/overhead.sh > $T/ov.console 2>&1; echo "overhead rc=$?"; sed -n '/steps:/,$p' $T/ov/overhead.txt | grep -v "correct" | head -40
OUT=$T/gpu bash scripts/gpu.sh > $T/gpu.console 2>&1; echo "gpu.sh rc=$?"; cat $T/gpu/summary.txt
mkdir -p $T/r && tar xzf $T/gpu/gpu-results.tgz -C $T/r && grep -E "^--- (PASS|FAIL)" $T/r/test-iket.log | grep -E "Pairs|Lanes|FAIL"
mkdir -p $OUT/ov && cp $T/ov/overhead.txt $T/ov/results.json $T/ov/sass-event.txt $OUT/ov/
cp $T/r/test-iket.log $T/r/summary.txt $T/r/run.log $T/r/calibrate-spread.log $OUT/
