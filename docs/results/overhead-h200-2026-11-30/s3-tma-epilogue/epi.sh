#!/bin/bash
export PATH=$PATH:/usr/local/cuda/bin
mkdir -p $OUT/e
OUT=$OUT/e/tma bash scripts/overhead.sh > $OUT/e/tma-console.txt 2>&1; echo "tma rc=$?"
grep -E "FAIL|WRONG|rc=[1-9]" $OUT/e/tma/overhead.txt | head -8
tail -4 $OUT/e/tma/overhead.txt
IKET_EXTRA_FLAGS=-DGEMM_EPI_TMA=0 OUT=$OUT/e/direct bash scripts/overhead.sh > $OUT/e/direct-console.txt 2>&1; echo "direct rc=$?"
tail -4 $OUT/e/direct/overhead.txt
cd $OUT && tar czf e.tgz e && rm -rf e
