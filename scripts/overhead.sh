#!/usr/bin/env bash
# overhead.sh: the cost of iket tracing on real Hopper kernels, in one command
# on the H200 (see docs/OVERHEAD.md). Builds the kernels of kernels/hopper and
# kernels/bench with nvcc (three builds each: debug with bounded mbarrier
# waits, uninstrumented, instrumented), then:
#   1. check     every build of pipeline and gemm against references
#   2. trace     one traced launch of each at a small size -> .iket captures
#   3. cublas    torch.mm timing (cuBLAS) with the same method
#   4. time      uninstrumented vs instrumented, interleaved, L2 flushed
#   5. torch     full GEMM output of both builds vs torch fp32 matmul
#   6. eventcost cycles per event (latency, throughput), stop-mode overflow
#   7. sass      instructions, bytes and fences of one event (cuobjdump)
# and prints the table last.
#
# Usage: scripts/overhead.sh [--quick]      (--quick: small sizes, smoke run)
# Env:   OUT   (default ./out) receives the results, at most 8 small files:
#              overhead.txt (summary + table), overhead.log (everything),
#              results.json, sass-event.txt, trace-pipeline.iket, trace-gemm.iket
#        WORK  (default /tmp/iket-overhead) builds, dumps, per-step logs
#        NVCC  (default nvcc, else /usr/local/cuda/bin/nvcc)
#        IKET_EXTRA_FLAGS  extra nvcc flags for every kernel build, e.g.
#              -DIKET_SAFE_LANES=1 to measure the header's lane catch-up mode
# Exit code: 0 when every step passed, else 1 (the summary names the steps).
set -u -o pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-./out}
WORK=${WORK:-/tmp/iket-overhead}
QUICK=""
[ "${1:-}" = "--quick" ] && QUICK="--quick"
mkdir -p "$OUT" "$WORK/modules"
OUT=$(cd "$OUT" && pwd)
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
  timeout -k 5 "$limit" "$@" > "$WORK/$name.log" 2>&1
  local rc=$?
  cat "$WORK/$name.log"
  [ $rc -eq 124 ] && echo "!!! $name: timed out after ${limit}s"
  [ $rc -ne 0 ] && failed=1
  status+=("$(printf '%-10s rc=%-4s %4ss' "$name" "$rc" "$((SECONDS - t0))")")
  return $rc
}

# The git commit can be stale where the tree is a copy with old git data;
# the hash of the kernel sources says what was built. IKET_COMMIT, when set,
# names the commit.
kernels_hash=$(find kernels -type f \( -name '*.cu' -o -name '*.cuh' \) | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-12)
echo "iket overhead run: $(date -u +%Y-%m-%dT%H:%M:%SZ), commit ${IKET_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo '?') (git here)}, kernels/ sources sha256 $kernels_hash"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv 2>&1 | tee "$WORK/nvidia-smi-before.csv"
"$NVCC" --version | tail -n 2

# ---- build (parallel) ---------------------------------------------------------
build() {
  local fails=0 pids=() names=()
  cubin() { # cubin NAME SRC FLAGS...
    local name=$1 src=$2; shift 2
    "$NVCC" -cubin $ARCH -O3 -lineinfo -Ikernels/include -Ikernels/hopper \
      -Xptxas -v ${IKET_EXTRA_FLAGS:-} "$@" -o "$M/$name.cubin" "$src" > "$M/$name.build.log" 2>&1
  }
  cubin pipeline_off kernels/hopper/pipeline.cu & pids+=($!); names+=(pipeline_off)
  cubin pipeline_on kernels/hopper/pipeline.cu -DIKET_ENABLE=1 & pids+=($!); names+=(pipeline_on)
  cubin pipeline_dbg kernels/hopper/pipeline.cu -DHOPPER_SPIN_LIMIT=4000000 & pids+=($!); names+=(pipeline_dbg)
  cubin gemm_off kernels/hopper/gemm.cu & pids+=($!); names+=(gemm_off)
  cubin gemm_on kernels/hopper/gemm.cu -DIKET_ENABLE=1 & pids+=($!); names+=(gemm_on)
  cubin gemm_dbg kernels/hopper/gemm.cu -DHOPPER_SPIN_LIMIT=4000000 & pids+=($!); names+=(gemm_dbg)
  cubin eventcost_off kernels/bench/eventcost.cu & pids+=($!); names+=(eventcost_off)
  cubin eventcost_on kernels/bench/eventcost.cu -DIKET_ENABLE=1 & pids+=($!); names+=(eventcost_on)
  "$NVCC" -O2 -std=c++17 $ARCH -Ikernels/include -o "$M/bench" kernels/bench/bench.cu -lcuda \
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
step selftest 30 "$B" selftest --out "$WORK"
step check 150 "$B" check --modules "$M" --out "$WORK" $QUICK
step trace 60 "$B" trace --modules "$M" --out "$OUT"
SIZES=4096,8192
[ -n "$QUICK" ] && SIZES=2048
step cublas 120 python3 kernels/bench/torch_ref.py time --sizes $SIZES --out "$WORK/cublas.txt"
# 21 rounds: the ratios read are medians, and more rounds steady them.
step time 240 "$B" time --rounds 21 --modules "$M" --out "$WORK" --work "$WORK" --cublas "$WORK/cublas.txt" $QUICK
CS=4096
[ -n "$QUICK" ] && CS=2048
step torch 120 python3 kernels/bench/torch_ref.py check --prefix "$WORK/gemm$CS" --size $CS
step eventcost 60 "$B" eventcost --modules "$M" --out "$WORK" $QUICK
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
rm -f "$WORK/gemm"*.bf16

# ---- results ------------------------------------------------------------------
python3 - "$WORK" "$OUT/results.json" << 'EOF'
import json, os, sys
work, out = sys.argv[1], sys.argv[2]
res = {}
for key, name in (("check", "bench-check.json"), ("time", "bench-time.json"),
                  ("eventcost", "bench-eventcost.json"), ("cublas", "cublas.txt.json")):
    p = os.path.join(work, name)
    if os.path.exists(p):
        try:
            res[key] = json.load(open(p))
        except Exception as e:  # keep going: the summary says what is missing
            res[key] = {"error": str(e)}
with open(out, "w") as f:
    json.dump(res, f, indent=1)
EOF
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv,noheader > "$WORK/nvidia-smi-after.csv" 2>&1

{
  echo "===== iket overhead summary ($(date -u +%Y-%m-%dT%H:%M:%SZ), $((SECONDS - T0)) s) ====="
  echo "command: scripts/overhead.sh ${QUICK:-}; IKET_EXTRA_FLAGS='${IKET_EXTRA_FLAGS:-}'"
  echo "device before: $(tail -n 1 "$WORK/nvidia-smi-before.csv")"
  echo "device after:  $(cat "$WORK/nvidia-smi-after.csv")"
  echo "steps:"
  printf '  %s\n' "${status[@]}"
  echo
  grep -h -E '^(gemm|pipeline) .*(correct|WRONG)|CHECK FAILED|HANG|FAIL' "$WORK/check.log" "$WORK/time.log" 2>/dev/null | sed 's/^/  /'
  grep -h -E '^check' "$WORK/torch.log" 2>/dev/null | sed 's/^/  /'
  echo
  grep -h -E '^(SASS|instructions|range_next|ev_loop body|ev_stage body|global bytes|fences)' "$WORK/sass.log" 2>/dev/null
  cat "$WORK/eventcost.txt" 2>/dev/null
  echo
  cat "$WORK/table-time.txt" 2>/dev/null || echo "(no timing table: the time step failed, see overhead.log)"
} > "$OUT/overhead.txt"
echo
cat "$OUT/overhead.txt"
ls -la "$OUT"
exit $failed
