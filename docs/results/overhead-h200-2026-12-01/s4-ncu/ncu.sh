#!/bin/bash
# session 4, Nsight Compute: the uninstrumented gemm, the instrumented one (base) and the instrumented one without the exit record (bne), 4096^3, one launch each
export PATH=$PATH:/usr/local/cuda/bin
R=$OUT/n4; mkdir -p $R
ncu --version 2>&1 | tail -1
ARCH="-gencode=arch=compute_90a,code=sm_90a"
M=/tmp/m; mkdir -p $M/base $M/bne
nvcc -O2 -std=c++17 $ARCH -Ikernels/include -o $M/bench kernels/bench/bench.cu -lcuda > $R/bench.build.txt 2>&1 &
cub() { local out=$1; shift; nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper "$@" -o $out kernels/hopper/gemm.cu; }
cub $M/base/gemm_off.cubin & cub $M/base/gemm_on.cubin -DIKET_ENABLE=1 & cub $M/bne/gemm_on.cubin -DIKET_ENABLE=1 -DIKET_EXP_NOEXIT &
cub $M/base/gemm_dbg.cubin -DHOPPER_SPIN_LIMIT=4000000 &
wait
cp $M/base/gemm_off.cubin $M/base/gemm_dbg.cubin $M/bne/
# gemm launches at 4096^3 in bench time: 0 = the uninstrumented correctness run, 1 = the instrumented one.
prof() { local name=$1 dir=$2 skip=$3; shift 3
  mkdir -p /tmp/o; env "$@" timeout 200 ncu --kernel-name gemm --launch-skip $skip --launch-count 1 --warp-sampling-interval 0 --section SourceCounters --section WarpStateStats --section SpeedOfLight -f --export $R/$name $M/bench time --kernels gemm --rounds 5 --warmup 1 --modules $M/$dir --out /tmp/o --work /tmp/o > $R/$name.log 2>&1; echo "$name ncu rc=$?"
  ncu --import $R/$name.ncu-rep --page details --csv > $R/$name-details.csv 2>&1
  ncu --import $R/$name.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $R/$name-source.csv.gz
  rm -f $R/$name.ncu-rep; }
prof off base 0
prof base base 1
prof bne bne 1 IKET_BENCH_NOCHECK=1
grep -h -E '"Duration"|"Elapsed Cycles"|Warp Cycles Per Issued|Issued Warp Per Scheduler' $R/*-details.csv | head -20
ls -la $R
cd $OUT && tar czf n4.tgz n4 && rm -rf n4
