#!/usr/bin/env bash
# overhead.sh: the cost of iket tracing on real Hopper kernels, in one command
# on the H200 (see docs/OVERHEAD.md). Builds the cubins of kernels/hopper
# (three builds each: debug with bounded mbarrier waits, uninstrumented,
# instrumented) and of kernels/bench/eventcost.cu with nvcc, and
# kernels/bench/bench.cu, a plain CUDA program that loads them, then:
#   1. check      every build of pipeline and gemm against references
#   2. cublas     torch.mm timing (cuBLAS), bench's method
#   3. time       the uninstrumented kernels against a control (the same
#                 cubin loaded again), cuBLAS and a device copy, L2 flushed
#   4. gemm4096, gemm8192, pipeline: iket traces the user's program:
#                   bin/iket run --launch 1-20 --baseline 'bench run ... --build off'
#                     -- bench run ... --build on
#                 bench launches the kernel 21 (TRACED+1) times on checked
#                 data, each after an L2 flush of its own; iket traces and
#                 times launches 1-20 (1-TRACED) of the instrumented build
#                 and times the same launches of the uninstrumented one,
#                 pairing them (latency.json); each *-check step then runs
#                 iket check (strict, no_drops) on the first and last
#                 traced launch
#   5. torch      all of C of the last traced gemm launch (and of the
#                 uninstrumented build's) vs torch fp32 matmul
#   6. eventcost  cycles per event (latency, throughput), traced by iket run
#   7. sass       instructions, bytes and fences of one event (cuobjdump)
# and prints the tables last: the uninstrumented kernels against control
# and cuBLAS, then per traced kernel from each run's latency.json the
# uninstrumented and instrumented medians, their ratio and the paired ratio.
#
# Usage: scripts/overhead.sh [--quick]      (--quick: small sizes, 5 traced
#                                           launches, smoke run)
#        scripts/overhead.sh --suite        (what scripts/suite.sh needs: the
#                                           builds, their check and the event
#                                           cost, in WORK; no other step)
# Needs: nvcc, cuobjdump, python3 with torch (cuBLAS), a C compiler (iket
# builds its injection library on first use), and bin/iket, built on the
# development machine by scripts/build-gpu.sh and carried.
# Env:   OUT   (default ./out) receives the results, at most 8 small files:
#              overhead.txt (summary + tables), overhead.log (everything),
#              results.json (every timing round, every pair), sass-event.txt,
#              trace-gemm.iket, trace-pipeline.iket (one traced launch at a
#              small size each, for the bundled fixtures)
#        WORK  (default /tmp/iket-overhead) builds, per-step logs, and each
#              iket run's folder run-NAME/ (trace.iket, report.html,
#              latency.json; trace.pftrace is removed, it runs to GBs at
#              8192^3, unless KEEP_PFTRACE=1)
#        IKET  (default bin/iket)
#        TRACED (default 20, 5 with --quick) traced launches per kernel
#        NVCC  (default nvcc, else /usr/local/cuda/bin/nvcc)
#        IKET_EXTRA_FLAGS  extra nvcc flags for every kernel build, e.g.
#              -DIKET_WRAP=1 to measure the wrap build
# Exit code: 0 when every step passed, else 1 (the summary names the steps).
set -u -o pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-./out}
WORK=${WORK:-/tmp/iket-overhead}
IKET=${IKET:-bin/iket}
QUICK=""
SUITE=""
[ "${1:-}" = "--quick" ] && QUICK="--quick"
[ "${1:-}" = "--suite" ] && SUITE=1
traced_default=20
[ -n "$QUICK" ] && traced_default=5
TRACED=${TRACED:-$traced_default}
case $TRACED in '' | *[!0-9]* | 0) echo "TRACED=$TRACED: want a count of launches"; exit 1 ;; esac
mkdir -p "$OUT" "$WORK/modules"
OUT=$(cd "$OUT" && pwd)
WORK=$(cd "$WORK" && pwd)
case $IKET in /*) ;; *) IKET=$PWD/$IKET ;; esac
exec > >(tee "$OUT/overhead.log") 2>&1

[ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"
NVCC=${NVCC:-}
if [ -z "$NVCC" ]; then
  if command -v nvcc > /dev/null; then NVCC=nvcc; else NVCC=/usr/local/cuda/bin/nvcc; fi
fi
ARCH="-gencode=arch=compute_90a,code=sm_90a"
M=$WORK/modules
T0=$SECONDS
status=()
failed=0

step() { # step NAME TIMEOUT CMD...: runs CMD with a timeout, logs to $WORK/NAME.log
  local name=$1 limit=$2; shift 2
  echo "=== $name: $*"
  local t0=$SECONDS
  timeout -k 10 "$limit" "$@" > "$WORK/$name.log" 2>&1
  local rc=$?
  cat "$WORK/$name.log"
  [ $rc -eq 124 ] && echo "!!! $name: timed out after ${limit}s"
  [ $rc -ne 0 ] && failed=1
  status+=("$(printf '%-22s rc=%-4s %4ss' "$name" "$rc" "$((SECONDS - t0))")")
  return $rc
}

# The git commit can be stale where the tree is a copy with old git data;
# the hash of the kernel sources says what was built, and the iket binary's
# version which commit it was built from. IKET_COMMIT, when set, names the
# commit.
kernels_hash=$(find kernels -type f \( -name '*.cu' -o -name '*.cuh' \) | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-12)
echo "iket overhead run: $(date -u +%Y-%m-%dT%H:%M:%SZ), commit ${IKET_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo '?') (git here)}, kernels/ sources sha256 $kernels_hash, $("$IKET" --version 2>&1 | head -n 1)"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv 2>&1 | tee "$WORK/nvidia-smi-before.csv"
"$NVCC" --version | tail -n 2
if [ -x "$IKET" ]; then
  "$IKET" --version 2>&1 | head -n 1
else
  echo "!!! $IKET not found: build it with scripts/build-gpu.sh and carry bin/ (the iket steps fail)"
fi

# ---- build (parallel) ---------------------------------------------------------
build() {
  local fails=0 pids=() names=()
  cubin() { # cubin NAME SRC FLAGS...
    local name=$1 src=$2; shift 2
    "$NVCC" -cubin $ARCH -O3 -lineinfo -Ikernels/include -Ikernels/hopper \
      -Xptxas -v ${IKET_EXTRA_FLAGS:-} "$@" -o "$M/$name.cubin" "$src" > "$M/$name.build.log" 2>&1
  }
  cubin pipeline_off kernels/hopper/pipeline.cu & pids+=($!); names+=(pipeline_off)
  cubin pipeline_on kernels/hopper/pipeline.cu -DIKET_ENABLE=1 -DIKET_LIVE=1 & pids+=($!); names+=(pipeline_on)
  cubin pipeline_dbg kernels/hopper/pipeline.cu -DHOPPER_SPIN_LIMIT=4000000 & pids+=($!); names+=(pipeline_dbg)
  cubin gemm_off kernels/hopper/gemm.cu & pids+=($!); names+=(gemm_off)
  cubin gemm_on kernels/hopper/gemm.cu -DIKET_ENABLE=1 -DIKET_LIVE=1 & pids+=($!); names+=(gemm_on)
  cubin gemm_dbg kernels/hopper/gemm.cu -DHOPPER_SPIN_LIMIT=4000000 & pids+=($!); names+=(gemm_dbg)
  cubin eventcost_off kernels/bench/eventcost.cu & pids+=($!); names+=(eventcost_off)
  cubin eventcost_on kernels/bench/eventcost.cu -DIKET_ENABLE=1 -DIKET_LIVE=1 & pids+=($!); names+=(eventcost_on)
  "$NVCC" -O2 -std=c++17 $ARCH -o "$M/bench" kernels/bench/bench.cu -lcuda \
    > "$M/bench.build.log" 2>&1 & pids+=($!); names+=(bench)
  for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then
      echo "!!! build ${names[$i]} failed:"; cat "$M/${names[$i]}.build.log"; fails=1
    fi
  done
  for n in pipeline_off pipeline_on gemm_off gemm_on; do
    echo "--- $n: $(grep -E 'registers|spill' "$M/$n.build.log" | tr -s ' ' | paste -sd' ')"
    # setmaxnreg ignored (C7508) or wgmma serialized (C7510, C7515) = slow path.
    if grep -E 'C75[0-9][0-9]|wgmma' "$M/$n.build.log"; then echo "!!! $n: ptxas warning above"; fi
  done
  return $fails
}
export NVCC ARCH M WORK
export -f build
step build 300 bash -c build || { echo "build failed; stopping"; printf '%s\n' "${status[@]}"; exit 1; }

B=$M/bench
capcheck() { # capcheck DIR LAUNCH...: iket check strict and no_drops on those launches
  local dir=$1 rc=0; shift
  for l in "$@"; do
    echo "--- launch $l"
    "$IKET" check "$dir/trace.iket" --launch "$l" --expect strict --expect no_drops || rc=1
  done
  return $rc
}
export IKET
export -f capcheck
# eventcost: every ev_loop launch of the instrumented build traced, so its
# events store their records; the two cases need different capacities.
eventcost_steps() {
  local c name tput=1024
  [ -n "$QUICK" ] && tput=256
  for c in latency:4096 throughput:$tput; do
    name=eventcost-${c%%:*}
    rm -rf "$WORK/run-$name"
    step "$name" 120 "$IKET" run -o "$WORK/run-$name" --kernel '^ev_loop$' --launch all \
      --capacity $((${c#*:} + 8)) -- "$B" eventcost --case "${c%%:*}" --modules "$M" --out "$WORK" $QUICK
    step "$name-check" 60 bash -c 'capcheck "$@"' _ "$WORK/run-$name" 0 4
    [ "${KEEP_PFTRACE:-0}" = 1 ] || rm -f "$WORK/run-$name/trace.pftrace"
  done
}
step check 150 "$B" check --modules "$M" $QUICK
if [ -n "$SUITE" ]; then
  eventcost_steps
  echo "steps:"
  printf '  %s\n' "${status[@]}"
  cat "$WORK/eventcost-latency.txt" "$WORK/eventcost-throughput.txt" 2>/dev/null
  exit $failed
fi
# The SM count sizes iket's buffers below (bench prints it first).
SMS=$(grep -o -m 1 '[0-9]\+ SMs' "$WORK/check.log" | cut -d' ' -f1)
SMS=${SMS:-132}
SIZES=4096,8192
[ -n "$QUICK" ] && SIZES=2048
step cublas 120 python3 kernels/bench/torch_ref.py time --sizes $SIZES --out "$WORK/cublas.txt"
# 21 rounds: the ratios read are medians, and more rounds steady them.
step time 240 "$B" time --rounds 21 --modules "$M" --out "$WORK" --cublas "$WORK/cublas.txt" $QUICK

# ---- iket run -- bench run ----------------------------------------------------
# Records per warp so that nothing drops (stop mode), from the kernels'
# events: a gemm warp records at most 4 per k step of each of its CTA's
# tiles and 8 per tile, 16 besides; a pipeline warp 4 per row of its CTA,
# 16 besides; ev_loop one per iteration, 8 besides.
gemm_cap() { # gemm_cap N: for an NxNxN gemm on SMS SMs
  local n=$1 tiles grid
  tiles=$(((n / 128) * (n / 256)))
  grid=$((tiles < SMS ? tiles : SMS))
  echo $((((tiles + grid - 1) / grid) * (4 * (n / 64) + 8) + 16))
}
pipeline_cap() { echo $((4 * (($1 + SMS - 1) / SMS) + 16)); }
q() { printf "'%s'" "$1"; } # a word of iket run --baseline's command line

# iket_run NAME KERNEL CAPACITY BENCH-RUN-FLAGS...: launch 0 warms up, and
# launches 1..TRACED of the instrumented build are traced and timed, paired
# with the same launches of the uninstrumented build; then NAME-check runs
# iket check on the capture's first and last launch.
iket_run() {
  local name=$1 kernel=$2 cap=$3; shift 3
  local n=$((TRACED + 1)) base dir=$WORK/run-$name
  base="$(q "$B") run"
  for a in "$@" --build off --launches $n; do base+=" $(q "$a")"; done
  rm -rf "$dir"
  step "$name" 420 "$IKET" run -o "$dir" --kernel "^$kernel\$" --launch "1-$TRACED" \
    --capacity "$cap" --baseline "$base" -- "$B" run "$@" --build on --launches $n
  step "$name-check" 120 bash -c 'capcheck "$@"' _ "$dir" 0 $((TRACED - 1))
  [ "${KEEP_PFTRACE:-0}" = 1 ] || rm -f "$dir/trace.pftrace"
}
if [ -n "$QUICK" ]; then
  GEMM_RUNS="2048"; ROWS=8192
else
  GEMM_RUNS="4096 8192"; ROWS=131072
fi
CS=${GEMM_RUNS%% *} # the size torch checks whole
for n in $GEMM_RUNS; do
  dump=()
  [ "$n" = "$CS" ] && dump=(--dump "$WORK/gemm$n")
  iket_run "gemm$n" gemm "$(gemm_cap "$n")" --kernel gemm --size "$n" --modules "$M" ${dump[@]+"${dump[@]}"}
done
iket_run pipeline pipeline "$(pipeline_cap "$ROWS")" --kernel pipeline --size "$ROWS" --modules "$M"
# Small captures for iket's bundled fixtures (internal/bundled/testdata):
# one traced launch of each kernel at a small size, with its baseline pair.
fixture() { # fixture NAME KERNEL CAPACITY BENCH-RUN-FLAGS...
  local name=$1 kernel=$2 cap=$3; shift 3
  local base dir=$WORK/fixture-$name
  base="$(q "$B") run"
  for a in "$@" --build off --launches 2; do base+=" $(q "$a")"; done
  rm -rf "$dir"
  step "fixture-$name" 120 "$IKET" run -o "$dir" --kernel "^$kernel\$" --launch 1 --capacity "$cap" \
    --baseline "$base" -- "$B" run "$@" --build on --launches 2 &&
    cp "$dir/trace.iket" "$OUT/trace-$name.iket"
}
fixture gemm gemm "$(gemm_cap 1024)" --kernel gemm --size 1024 --modules "$M"
fixture pipeline pipeline "$(pipeline_cap $((8 * SMS)))" --kernel pipeline --size $((8 * SMS)) --modules "$M"
step torch 120 python3 kernels/bench/torch_ref.py check --prefix "$WORK/gemm$CS" --size "$CS"
rm -f "$WORK/gemm"*.bf16

eventcost_steps

sass() {
  cuobjdump -sass "$M/eventcost_on.cubin" > "$WORK/eventcost_on.sass" &&
    for n in eventcost_off pipeline_off pipeline_on gemm_off gemm_on; do
      cuobjdump -sass "$M/$n.cubin" > "$WORK/$n.sass" || return 1
    done &&
    python3 kernels/bench/sass_count.py "$WORK/eventcost_on.sass" "$WORK/eventcost_off.sass" \
      "$WORK/pipeline_off.sass" "$WORK/pipeline_on.sass" "$WORK/gemm_off.sass" "$WORK/gemm_on.sass"
}
export -f sass
step sass 60 bash -c sass
cp "$WORK/sass.log" "$OUT/sass-event.txt"

# ---- results ------------------------------------------------------------------
RUNS=""
for n in $GEMM_RUNS; do RUNS+=" gemm$n"; done
RUNS+=" pipeline"
python3 - "$WORK" "$OUT/results.json" "$WORK/table-iket.txt" $RUNS << 'EOF'
import json, os, sys
work, out, table, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
res = {"iket_run": {}}
def load(p):
    try:
        with open(p) as f:
            return json.load(f)
    except Exception as e:  # keep going: the summary says what is missing
        return {"error": str(e)}
for key, name in (("time", "bench-time.json"), ("cublas", "cublas.txt.json"),
                  ("eventcost_latency", "bench-eventcost-latency.json"),
                  ("eventcost_throughput", "bench-eventcost-throughput.json")):
    p = os.path.join(work, name)
    if os.path.exists(p):
        res[key] = load(p)
lines = ["%-10s %-9s %6s %12s %12s %7s %7s" % ("run", "kernel", "pairs", "uninstr_p50",
         "instr_p50", "ratio", "paired")]
for r in runs:
    j = load(os.path.join(work, "run-" + r, "latency.json"))
    res["iket_run"][r] = j
    if "error" in j:
        lines.append("%-10s (no latency.json: %s)" % (r, j["error"]))
        continue
    for k in j.get("kernels") or []:
        u = k.get("uninstrumented") or {}
        i = k.get("instrumented") or {}
        if not u:
            lines.append("%-10s %-9s %6d %12s %12.1f  (no baseline timing)" %
                         (r, k.get("kernel", "?"), len(k.get("pairs") or []), "-", i.get("median_us", 0)))
            continue
        lines.append("%-10s %-9s %6d %12.1f %12.1f %7.4f %7.4f" % (
            r, k.get("kernel", "?"), len(k.get("pairs") or []), u.get("median_us", 0),
            i.get("median_us", 0), k.get("ratio", 0), k.get("paired_ratio", 0)))
with open(out, "w") as f:
    json.dump(res, f, indent=1)
with open(table, "w") as f:
    f.write("\n".join(lines) + "\n")
EOF
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv,noheader > "$WORK/nvidia-smi-after.csv" 2>&1

{
  echo "===== iket overhead summary ($(date -u +%Y-%m-%dT%H:%M:%SZ), $((SECONDS - T0)) s) ====="
  echo "command: scripts/overhead.sh ${QUICK:-}; IKET_EXTRA_FLAGS='${IKET_EXTRA_FLAGS:-}'; $TRACED traced launches per kernel"
  echo "device before: $(tail -n 1 "$WORK/nvidia-smi-before.csv")"
  echo "device after:  $(cat "$WORK/nvidia-smi-after.csv")"
  echo "steps:"
  printf '  %s\n' "${status[@]}"
  echo
  grep -h -E '^(gemm|pipeline) .*(correct|WRONG)|^(gemm|pipeline) run: .*checked|CHECK FAILED|HANG|FAIL' \
    "$WORK/check.log" "$WORK/time.log" "$WORK"/gemm[0-9]*.log "$WORK"/pipeline*.log "$WORK"/eventcost-*.log \
    2>/dev/null | sed 's/^/  /'
  for f in "$WORK"/*-check.log; do
    [ -f "$f" ] && echo "  $(basename "$f" .log), first and last traced launch:" \
      "$(grep -h 'rules passed$' "$f" | paste -sd';' - | sed 's/;/; /g')"
  done
  grep -h -E '^check' "$WORK/torch.log" 2>/dev/null | sed 's/^/  /'
  echo
  grep -h -E '^(SASS|instructions|range_next|ev_loop body|ev_stage body|global bytes|fences)' "$WORK/sass.log" 2>/dev/null
  cat "$WORK/eventcost-latency.txt" "$WORK/eventcost-throughput.txt" 2>/dev/null
  echo
  echo "uninstrumented kernels (bench time: control = the same cubin loaded again):"
  cat "$WORK/table-time.txt" 2>/dev/null || echo "(no timing table: the time step failed, see overhead.log)"
  echo
  echo "iket run, $TRACED traced launches of each kernel paired with the same launches of the uninstrumented build (us):"
  cat "$WORK/table-iket.txt" 2>/dev/null || echo "(no iket table, see overhead.log)"
} > "$OUT/overhead.txt"
echo
cat "$OUT/overhead.txt"
ls -la "$OUT"
exit $failed
