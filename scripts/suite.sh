#!/usr/bin/env bash
# suite.sh: what iket costs kernels written the plain way, on the GPU
# machine, as one table. The suite: examples/suite/ring.cu (an ld/st ring
# through mbarriers), examples/suite/tiled_gemm.cu (a non-persistent WMMA
# GEMM with many CTAs), examples/app (a producer/consumer pipeline over named
# barriers), and the TMA pipeline and the persistent warp-specialized GEMM
# of kernels/hopper through kernels/bench: from scripts/overhead.sh's build
# in $OVERHEAD_WORK, which `scripts/overhead.sh --suite` makes first when it
# is not there (the builds, their check against references, the event
# cost). The gemm runs twice: as overhead.sh builds it (stamped pairs, the
# consumers' through an iket::Batch) and written the plain way
# (hopper_gemm_plain: -DGEMM_NEXT=0, a range_push/range_pop around each
# wait and each k-tile's MMAs).
#
#   scripts/suite.sh [NVCC-FLAGS...]     e.g. -I<dir> to build with another iket.cuh
#
# For each application: its own time per launch (ROUNDS rounds of LAUNCHES
# back-to-back launches, default 7 and 200, after one untimed launch that
# loads the kernel's module and warms the caches) for the plain build, the
# plain build again (the control) and the instrumented build run without
# iket (dormant), alternating, medians; then `iket run --launch 1-10
# --baseline plain --control` (the ten launches after the untimed one,
# traced and paired with the plain build's: ratio of medians and paired
# ratio; the plain build's second run paired with its first, the noise of
# that pairing) and whether the capture validates strictly.
# ring runs twice: as written, and with its producer's lane 0 alone waiting
# (--lane0-wait). The event's latency and throughput come from overhead.sh's
# run in $OVERHEAD_WORK; after them, each row's perturbation as its iket run
# reported it (registers, memory, CTAs per SM and SASS instructions of both
# builds, where the records went, and its warnings). Expects bin/iket. Prints the
# table last, and writes it to $OUT/suite.txt when OUT is set. Exits 1
# when a build or an iket run failed (its row shows dashes or is missing).
set -u -o pipefail
cd "$(dirname "$0")/.."
[ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"
W=${WORK:-/tmp/iket-suite}
OW=${OVERHEAD_WORK:-/tmp/iket-overhead}
mkdir -p "$W"
IKET=$PWD/bin/iket
ARCH=${ARCH:--arch=sm_90a}
EXTRA=("$@")
median() { sort -n | awk '{v[NR]=$1} END {if (NR == 0) print 0; else print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
us() { "$@" | sed -n 's/.*: \([0-9.]*\) us per launch.*/\1/p'; }
rows=()
ran=() # the names of the iket runs made, for their perturbation lines
failed=0
# latency DIR: the traced and baseline medians, ratio and paired ratio of
# the iket run in DIR and its control's paired ratio, or dashes and status 1
# when it has none.
latency() {
  python3 -c 'import json,sys
d=json.load(open(sys.argv[1])); k=d["kernels"][0]; u=k.get("uninstrumented") or {}; c=(d.get("control") or [{}])[0]
print("%9.2f %9.2f %7.4f %7.4f %7.4f" % (k["instrumented"]["median_us"], u.get("median_us", 0), k.get("ratio", 0), k.get("paired_ratio", 0), c.get("paired_ratio", 0)))' "$1/latency.json" 2>/dev/null && return
  echo "        -         -       -       -       -"
  return 1
}

# row NAME PLAIN INSTRUMENTED KERNEL-RE ARGS...: one line of the table.
row() {
  local name=$1 plain=$2 inst=$3 re=$4; shift 4
  : > "$W/$name.p"; : > "$W/$name.c"; : > "$W/$name.d"
  for ((r = 0; r < ${ROUNDS:-7}; r++)); do
    us "$plain" "$@" --launches "${LAUNCHES:-200}" >> "$W/$name.p"
    us "$plain" "$@" --launches "${LAUNCHES:-200}" >> "$W/$name.c"
    us "$inst" "$@" --launches "${LAUNCHES:-200}" >> "$W/$name.d"
  done
  local p c d
  p=$(median < "$W/$name.p") c=$(median < "$W/$name.c") d=$(median < "$W/$name.d")
  rm -rf "$W/run-$name"
  ran+=("$name")
  "$IKET" run -o "$W/run-$name" --kernel "$re" --launch 1-10 --baseline "$plain $* --launches 10" --control -- "$inst" "$@" --launches 10 > "$W/run-$name.log" 2>&1
  local lat
  lat=$(latency "$W/run-$name") || failed=1
  local valid=strict
  "$IKET" validate "$W/run-$name/trace.iket" > "$W/validate-$name.log" 2>&1 || valid=violations
  rows+=("$(printf '%-14s %9.2f %7.4f %7.4f  %s  %s' "$name" "$p" "$(awk -v a="$c" -v b="$p" 'BEGIN { print a / b }')" \
    "$(awk -v a="$d" -v b="$p" 'BEGIN { print a / b }')" "$lat" "$valid")")
  echo "${rows[-1]}"
}

build() { # build OUT SRC...: the plain build, and OUT_on with tracing
  local out=$1; shift
  nvcc -O3 -std=c++17 $ARCH -Ikernels/include -Iexamples/app -o "$out" "$@" &&
    nvcc -O3 -std=c++17 $ARCH ${EXTRA[@]+"${EXTRA[@]}"} -Ikernels/include -Iexamples/app -DIKET_ENABLE=1 -o "${out}_on" "$@" ||
    { echo "build of $out failed: its rows are left out"; failed=1; return 1; }
}
# The git commit can be stale where the tree is a copy with old git data:
# the version bin/iket was built with says which commit ran.
echo "iket suite: $(date -u +%Y-%m-%dT%H:%M:%SZ), commit ${IKET_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo '?') (git here)}, $("$IKET" --version 2>&1 | head -n 1), flags: ${EXTRA[*]:-none}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv,noheader 2>&1
build "$W/ring" examples/suite/ring.cu && row ring "$W/ring" "$W/ring_on" '^ring' &&
  row ring_lane0 "$W/ring" "$W/ring_on" '^ring' --lane0-wait
build "$W/tiled_gemm" examples/suite/tiled_gemm.cu && LAUNCHES=20 row tiled_gemm "$W/tiled_gemm" "$W/tiled_gemm_on" 'tiled_gemm'
build "$W/app" examples/app/main.cu examples/app/scale.cu && row app_pipeline "$W/app" "$W/app_on" 'pipeline'
if [ ! -x "$OW/modules/bench" ]; then
  echo "no overhead.sh build in $OW: scripts/overhead.sh --suite makes it (log: $W/overhead-suite.log)"
  OUT=$W/overhead-suite WORK=$OW bash scripts/overhead.sh --suite > "$W/overhead-suite.log" 2>&1 || {
    echo "scripts/overhead.sh --suite failed:"; tail -n 20 "$W/overhead-suite.log"; failed=1; }
fi
if [ -x "$OW/modules/bench" ]; then
  # The gemm written the plain way as well: GEMM_NEXT=0 records a
  # range_push/range_pop around each wait and each k-tile's MMAs (no stamped
  # pairs, no Batch), beside overhead.sh's uninstrumented build.
  PM=$W/modules-plain
  mkdir -p "$PM" && cp "$OW/modules/gemm_off.cubin" "$PM/" &&
    nvcc -cubin $ARCH -O3 -lineinfo ${EXTRA[@]+"${EXTRA[@]}"} -Ikernels/include -Ikernels/hopper -DIKET_ENABLE=1 -DIKET_LIVE=1 -DGEMM_NEXT=0 \
      -o "$PM/gemm_on.cubin" kernels/hopper/gemm.cu > "$W/gemm-plain.build.log" 2>&1 ||
    { echo "build of the plain gemm failed (log: $W/gemm-plain.build.log)"; failed=1; }
  # bench run prints no time of its own: the traced columns only.
  for spec in pipeline:pipeline:"$OW/modules" gemm:gemm:"$OW/modules" gemm_plain:gemm:"$PM"; do
    IFS=: read -r n k m <<< "$spec" # row name, kernel, modules folder
    [ -f "$m/${k}_on.cubin" ] || continue
    rm -rf "$W/run-$n"
    ran+=("hopper_$n")
    "$IKET" run -o "$W/run-$n" --kernel "^$k\$" --launch 1-10 --control \
      --baseline "$OW/modules/bench run --kernel $k --modules $m --build off --launches 11" \
      -- "$OW/modules/bench" run --kernel "$k" --modules "$m" --build on --launches 11 > "$W/run-$n.log" 2>&1
    lat=$(latency "$W/run-$n") || failed=1
    rows+=("$(printf '%-17s %6s %7s %7s  %s  %s' "hopper_$n" - - - "$lat" "$("$IKET" validate "$W/run-$n/trace.iket" > /dev/null 2>&1 && echo strict || echo violations)")")
  done
else
  echo "no overhead.sh build in $OW: the Hopper kernels are left out"
fi
{
  echo
  echo "kernel          plain_us control dormant  traced_us  base_us   ratio  paired ctl_run  validate"
  printf '%s\n' ${rows[@]+"${rows[@]}"}
  for c in latency throughput; do
    [ -f "$OW/eventcost-$c.txt" ] && cat "$OW/eventcost-$c.txt"
  done
  # The perturbation iket run reported for each row (registers, shared and
  # local memory, CTAs per SM, SASS instructions of both builds; where the
  # records went; warnings).
  echo
  for n in ${ran[@]+"${ran[@]}"}; do
    grep -h 'registers per thread\|occupancy differs\|(spills) differs\|records kept in the L2\|records written through the L2' "$W/run-${n#hopper_}.log" 2>/dev/null | sed "s|^ *|$n:  |" || true
  done
} | tee "$W/suite.txt"
[ -n "${OUT:-}" ] && mkdir -p "$OUT" && cp "$W/suite.txt" "$OUT/suite.txt"
exit $failed
