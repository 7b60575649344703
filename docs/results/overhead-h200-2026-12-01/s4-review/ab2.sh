#!/bin/bash
# session 4: the header before (HEAD, probe/old) and after the simplification (working tree): event cost and gemm timing, alternating
export PATH=$PATH:/usr/local/cuda/bin
ARCH="-gencode=arch=compute_90a,code=sm_90a"
M=/tmp/m; mkdir -p $M/old $M/new $OUT/ab2
nvcc -O2 -std=c++17 $ARCH -Ikernels/include -o $M/bench kernels/bench/bench.cu -lcuda &
for v in old new; do inc=kernels/include; [ $v = old ] && inc=probe/old
  nvcc -cubin -O3 $ARCH -I$inc -Ikernels/hopper -o $M/$v/gemm_off.cubin kernels/hopper/gemm.cu &
  nvcc -cubin -O3 $ARCH -I$inc -Ikernels/hopper -DIKET_ENABLE=1 -o $M/$v/gemm_on.cubin kernels/hopper/gemm.cu &
  nvcc -cubin -O3 $ARCH -I$inc -Ikernels/hopper -DHOPPER_SPIN_LIMIT=4000000 -o $M/$v/gemm_dbg.cubin kernels/hopper/gemm.cu 2>/dev/null &
  nvcc -cubin -O3 $ARCH -I$inc -o $M/$v/eventcost_off.cubin kernels/bench/eventcost.cu &
  nvcc -cubin -O3 $ARCH -I$inc -DIKET_ENABLE=1 -o $M/$v/eventcost_on.cubin kernels/bench/eventcost.cu &
done; wait
for pass in 1 2 3; do for v in old new; do
  $M/bench eventcost --modules $M/$v --out /tmp/o$v > $OUT/ab2/ev-$v-$pass.txt 2>&1
  echo "$v pass $pass eventcost: $(grep -h -E 'latency|throughput' /tmp/o$v/eventcost.txt 2>/dev/null | sed 's/(.*//' | tr -s ' ' | tr '\n' ';')"
done; done
for pass in 1 2 3; do for v in old new; do
  timeout 120 $M/bench time --kernels gemm --rounds 21 --modules $M/$v --out /tmp/t$v --work /tmp/t$v > $OUT/ab2/time-$v-$pass.txt 2>&1
  echo "$v pass $pass rc=$? $(grep -E '^gemm ' /tmp/t$v/table-time.txt | awk '{print $2, $4, $5, $6, $7}' | tr '\n' ' ')"
  rm -f /tmp/t$v/table-time.txt /tmp/t$v/*.bf16
done; done
