#!/bin/bash
export PATH=$PATH:/usr/local/cuda/bin
R=$OUT/n; mkdir -p $R
which ncu nsys; ncu --version 2>&1 | tail -1
ARCH="-gencode=arch=compute_90a,code=sm_90a"
M=/tmp/m; mkdir -p $M
nvcc -O2 -std=c++17 $ARCH -Ikernels/include -o $M/bench kernels/bench/bench.cu -lcuda > $R/bench.build.txt 2>&1 &
nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -o $M/gemm_off.cubin kernels/hopper/gemm.cu &
nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -DIKET_ENABLE=1 -o $M/gemm_on.cubin kernels/hopper/gemm.cu &
nvcc -cubin -O3 -lineinfo $ARCH -Ikernels/include -Ikernels/hopper -DHOPPER_SPIN_LIMIT=4000000 -o $M/gemm_dbg.cubin kernels/hopper/gemm.cu 2>/dev/null &
wait
# bench time --quick: 2048^3, warm-up 3 calls per build then 5 rounds, alternating.
mkdir -p /tmp/o; timeout 400 ncu --kernel-name gemm --launch-skip 6 --launch-count 2 --warp-sampling-interval 0 --section SourceCounters --section WarpStateStats --section SpeedOfLight -f --export $R/prof $M/bench time --kernels gemm --rounds 5 --modules $M --out /tmp/o --work /tmp/o > $R/ncu.log 2>&1; echo "ncu rc=$?"
tail -5 $R/ncu.log
ncu --import $R/prof.ncu-rep --page details --csv > $R/details.csv 2>&1; echo "details rc=$?"
ncu --import $R/prof.ncu-rep --page source --csv --print-source sass > $R/source.csv 2>&1; echo "source rc=$?"
ls -la $R
cd $OUT && tar czf n.tgz n && rm -rf n
