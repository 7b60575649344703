#!/bin/bash
# session 6, call 9 (on the final code, with the table's paired column):
# scripts/overhead.sh once more.
export PATH=$PATH:/usr/local/cuda/bin
R=$OUT/c9; mkdir -p $R
OUT=$R/ov bash scripts/overhead.sh > $R/ov.console 2>&1; echo "overhead rc=$?"; tail -6 $R/ov/overhead.txt
rm -f $R/ov/trace-pipeline.iket
cd $OUT && tar czf c9.tgz c9 && rm -rf c9
