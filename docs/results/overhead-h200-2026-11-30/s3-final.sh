#!/bin/bash
export PATH=$PATH:/usr/local/cuda/bin
mkdir -p $OUT/f
OUT=$OUT/f/oh bash scripts/overhead.sh > $OUT/f/overhead-console.txt 2>&1; echo "overhead rc=$?"
tail -16 $OUT/f/oh/overhead.txt
OUT=$OUT/f/gpu STEP_TIMEOUT=150 bash scripts/gpu.sh > $OUT/f/gpu-console.txt 2>&1; echo "gpu rc=$?"
grep -A40 "===== summary" $OUT/f/gpu-console.txt | head -45
cd $OUT && tar czf final.tgz f && rm -rf f && ls -la
