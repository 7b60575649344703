#!/usr/bin/env bash
# header-compare.sh: what each of several builds of iket.cuh costs the
# suite's applications, on the GPU machine, in one interleaved run:
#
#   scripts/header-compare.sh LABEL=DIR ...    DIR holds an iket.cuh, or is
#                                              "." for kernels/include
#
# e.g. `git show 9d53333:kernels/include/iket.cuh > /tmp/f2/iket.cuh;
# scripts/header-compare.sh f2=/tmp/f2 f3=.`. For examples/suite/ring.cu (as
# written, and with --lane0-wait), examples/suite/tiled_gemm.cu (2048^3) and
# examples/app: ROUNDS rounds (default 5), each running the plain build
# twice (the second is the control) and every header's instrumented build
# without iket (dormant), LAUNCHES back-to-back launches each (default 100),
# medians of the programs' own times; then per header `iket run --launch
# 1-10 --baseline plain` (ratio of medians / paired ratio) and whether the
# capture validates strictly; then per header the event's cost from
# kernels/bench/eventcost.cu (latency on one warp, throughput at 64 warps per
# SM). Expects bin/iket. Writes $WORK/table.txt and, when OUT is set,
# $OUT/header-compare.txt.
set -u -o pipefail
cd "$(dirname "$0")/.."
[ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"
W=${WORK:-/tmp/iket-headers}
rm -rf "$W"; mkdir -p "$W/m"
ARCH=${ARCH:--gencode=arch=compute_90a,code=sm_90a}
IKET=$PWD/bin/iket
ROUNDS=${ROUNDS:-5} LAUNCHES=${LAUNCHES:-100}
labels=()
declare -A dir
for spec in "$@"; do
  l=${spec%%=*} d=${spec#*=}
  [ "$d" = . ] && d=kernels/include
  [ -f "$d/iket.cuh" ] || { echo "$d/iket.cuh: no such file"; exit 2; }
  labels+=("$l"); dir[$l]=$d
done
[ ${#labels[@]} -gt 0 ] || { echo "usage: scripts/header-compare.sh LABEL=DIR ..."; exit 2; }
b() { nvcc -O3 -std=c++17 $ARCH "$@" -Ikernels/include -Iexamples/app > "$W/build.$BASHPID.log" 2>&1 || echo "!!! build failed: $*"; }
echo "iket header-compare: $(date -u +%Y-%m-%dT%H:%M:%SZ), commit ${IKET_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo '?')}, headers: $*" | tee "$W/table.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv,noheader 2>&1 | tee -a "$W/table.txt"
b -o "$W/ring" examples/suite/ring.cu &
b -o "$W/tg" examples/suite/tiled_gemm.cu &
b -o "$W/app" examples/app/main.cu examples/app/scale.cu &
nvcc -O2 -std=c++17 $ARCH -o "$W/bench" kernels/bench/bench.cu -lcuda > "$W/bench.log" 2>&1 &
nvcc -cubin $ARCH -O3 -Ikernels/include -o "$W/m/eventcost_off.cubin" kernels/bench/eventcost.cu &
for l in "${labels[@]}"; do
  I=-I${dir[$l]}
  b "$I" -DIKET_ENABLE=1 -o "$W/ring_$l" examples/suite/ring.cu &
  b "$I" -DIKET_ENABLE=1 -o "$W/tg_$l" examples/suite/tiled_gemm.cu &
  b "$I" -DIKET_ENABLE=1 -o "$W/app_$l" examples/app/main.cu examples/app/scale.cu &
  mkdir -p "$W/m_$l"
  nvcc -cubin $ARCH -O3 "$I" -Ikernels/include -DIKET_ENABLE=1 -o "$W/m_$l/eventcost_on.cubin" kernels/bench/eventcost.cu &
done
wait
us() { "$@" | sed -n 's/.*: \([0-9.]*\) us per launch.*/\1/p'; }
med() { sort -n | awk '{v[NR]=$1} END {if (NR == 0) print 0; else print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.4f", a / b; else print "-" }'; }
declare -A args=([ring]="" [ring_lane0]="--lane0-wait" [tiled_gemm]="--size 2048" [app]="")
declare -A bin=([ring]=ring [ring_lane0]=ring [tiled_gemm]=tg [app]=app)
declare -A re=([ring]='^ring' [ring_lane0]='^ring' [tiled_gemm]=tiled_gemm [app]=pipeline)
printf '\n%-11s %9s %8s' kernel plain_us control | tee -a "$W/table.txt"
for l in "${labels[@]}"; do printf ' | %-8s %8s %15s %6s' "$l" dormant traced/paired valid; done | tee -a "$W/table.txt"
echo | tee -a "$W/table.txt"
for a in ring ring_lane0 tiled_gemm app; do
  B=${bin[$a]} A=${args[$a]}
  for ((r = 0; r < ROUNDS; r++)); do
    us "$W/$B" $A --launches "$LAUNCHES" >> "$W/$a.plain"
    us "$W/$B" $A --launches "$LAUNCHES" >> "$W/$a.control"
    for l in "${labels[@]}"; do us "$W/${B}_$l" $A --launches "$LAUNCHES" >> "$W/$a.$l"; done
  done
  p=$(med < "$W/$a.plain")
  line=$(printf '%-11s %9.2f %8s' "$a" "$p" "$(ratio "$(med < "$W/$a.control")" "$p")")
  for l in "${labels[@]}"; do
    rm -rf "$W/run-$a-$l"
    "$IKET" run -o "$W/run-$a-$l" --kernel "${re[$a]}" --launch 1-10 --baseline "$W/$B $A --launches 11" \
      -- "$W/${B}_$l" $A --launches 11 > "$W/run-$a-$l.log" 2>&1
    tr=$(python3 -c 'import json,sys; k=json.load(open(sys.argv[1]))["kernels"][0]; print("%.4f/%.4f" % (k.get("ratio",0), k.get("paired_ratio",0)))' \
      "$W/run-$a-$l/latency.json" 2>/dev/null || echo -)
    "$IKET" validate "$W/run-$a-$l/trace.iket" > "$W/validate-$a-$l.log" 2>&1 && v=strict || v=viol
    line+=$(printf ' | %-8s %8s %15s %6s' "$l" "$(ratio "$(med < "$W/$a.$l")" "$p")" "$tr" "$v")
  done
  echo "$line" | tee -a "$W/table.txt"
done
echo | tee -a "$W/table.txt"
for l in "${labels[@]}"; do
  cp "$W/m/eventcost_off.cubin" "$W/m_$l/"
  for c in latency:4096 throughput:1024; do
    "$IKET" run -o "$W/ev-$l-${c%%:*}" --kernel '^ev_loop$' --launch all --capacity $((${c#*:} + 8)) \
      -- "$W/bench" eventcost --case "${c%%:*}" --modules "$W/m_$l" --out "$W/ev-$l" > "$W/ev-$l-${c%%:*}.log" 2>&1
  done
  cat "$W/ev-$l"/eventcost-*.txt 2>/dev/null | sed "s/^/$l: /" | tee -a "$W/table.txt"
done
[ -n "${OUT:-}" ] && mkdir -p "$OUT" && cp "$W/table.txt" "$OUT/header-compare.txt"
exit 0
