#!/usr/bin/env bash
# Header variants on the suite: dormant and traced cost, event cost.
set -u
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/cuda/bin
W=/tmp/var; rm -rf $W; mkdir -p $W/m
ARCH=-gencode=arch=compute_90a,code=sm_90a
VARS=${VARS:-old v3b v3n v3a v3z}
IKET=$PWD/bin/iket
b() { nvcc -O3 -std=c++17 $ARCH "$@" -Ikernels/include -Iexamples/app > $W/build-$RANDOM.log 2>&1 || echo "build fail $*"; }
t0=$SECONDS
b -o $W/ring examples/suite/ring.cu &
b -o $W/tg examples/suite/tiled_gemm.cu &
b -o $W/app examples/app/main.cu examples/app/scale.cu &
nvcc -O2 -std=c++17 $ARCH -o $W/bench kernels/bench/bench.cu -lcuda &
nvcc -cubin $ARCH -O3 -Ikernels/include -o $W/m/eventcost_off.cubin kernels/bench/eventcost.cu &
for v in $VARS; do
  I=-I.exp/$v
  b $I -DIKET_ENABLE=1 -o $W/ring_$v examples/suite/ring.cu &
  b $I -DIKET_ENABLE=1 -o $W/tg_$v examples/suite/tiled_gemm.cu &
  b $I -DIKET_ENABLE=1 -o $W/app_$v examples/app/main.cu examples/app/scale.cu &
  mkdir -p $W/m_$v; nvcc -cubin $ARCH -O3 $I -Ikernels/include -DIKET_ENABLE=1 -o $W/m_$v/eventcost_on.cubin kernels/bench/eventcost.cu &
done
wait
echo "built in $((SECONDS-t0))s"
for v in $VARS; do cp $W/m/eventcost_off.cubin $W/m_$v/; done
us() { "$@" | sed -n 's/.*: \([0-9.]*\) us per launch.*/\1/p'; }
med() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
declare -A args=([ring]="" [ring0]="--lane0-wait" [tg]="--size 2048" [app]="")
declare -A bin=([ring]=ring [ring0]=ring [tg]=tg [app]=app)
declare -A re=([ring]='^ring' [ring0]='^ring' [tg]=tiled_gemm [app]=pipeline)
for a in ring ring0 tg app; do
  B=${bin[$a]}; A=${args[$a]}
  for r in 1 2 3 4 5; do
    us $W/$B $A --launches 100 >> $W/$a.plain
    us $W/$B $A --launches 100 >> $W/$a.control
    for v in $VARS; do us $W/${B}_$v $A --launches 100 >> $W/$a.$v; done
  done
  p=$(med < $W/$a.plain)
  line=$(printf '%-6s plain %8.2f control %.4f' $a $p $(awk -v a=$(med < $W/$a.control) -v p=$p 'BEGIN{print a/p}'))
  for v in $VARS; do
    d=$(med < $W/$a.$v)
    $IKET run -o $W/run-$a-$v --kernel "${re[$a]}" --launch 1-10 --baseline "$W/$B $A --launches 11" -- $W/${B}_$v $A --launches 11 > $W/run-$a-$v.log 2>&1
    tr=$(python3 -c 'import json,sys; k=json.load(open(sys.argv[1]))["kernels"][0]; print("%.4f/%.4f" % (k.get("ratio",0), k.get("paired_ratio",0)))' $W/run-$a-$v/latency.json 2>/dev/null || echo -)
    $IKET validate $W/run-$a-$v/trace.iket > $W/val-$a-$v.log 2>&1 && val=ok || val=viol
    line+=$(printf ' | %s dormant %.4f traced %s %s' $v $(awk -v a=$d -v p=$p 'BEGIN{print a/p}') "$tr" $val)
  done
  echo "$line" | tee -a $W/table.txt
done
for v in $VARS; do
  mkdir -p $W/evout-$v
  for c in latency:4096 throughput:1024; do
    $IKET run -o $W/ev-$v-${c%%:*} --kernel '^ev_loop$' --launch all --capacity $((${c#*:} + 8)) -- $W/bench eventcost --case ${c%%:*} --modules $W/m_$v --out $W/evout-$v > $W/ev-$v-${c%%:*}.log 2>&1
  done
  echo "$v: $(cat $W/evout-$v/eventcost-latency.txt $W/evout-$v/eventcost-throughput.txt 2>/dev/null | tr '\n' ' ')" | tee -a $W/table.txt
done
echo "total $((SECONDS-t0))s"
