#!/usr/bin/env bash
# Runs on the GPU machine: `iket run -- CMD` on the example application of
# examples/app, built every way users build (whole-program nvcc, several .cu
# files, -rdc=true, CMake, a PyTorch extension, NVRTC through CuPy, a cubin
# loaded through the driver API and through cuLibraryLoad), launched every
# way (<<<>>>, cudaLaunchKernelEx, a CUDA graph, static and shared cudart,
# lazy and eager module loading, several processes), with the failures a
# user meets (no kernel matched, a hang, a fault, another tool attached), and
# the cost of attaching. Expects bin/iket (scripts/build-gpu.sh). Writes
# everything under $1 (default ./out/app) and prints a table last; exits 1
# when a step failed.
set -u -o pipefail
cd "$(dirname "$0")/.."
R=$(mkdir -p "${1:-./out/app}" && cd "${1:-./out/app}" && pwd)
W=${WORK:-/tmp/iket-app}
rm -rf "$W"; mkdir -p "$W"
[ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"
IKET=$PWD/bin/iket
A=examples/app
INC="-Ikernels/include -I$A"
ARCH=${ARCH:--arch=sm_90a}
status=()
failed=0
step() { # step NAME CMD...: runs CMD with a time limit, logs to $R/NAME.log
  local name=$1; shift
  echo "=== $name: $*"
  local t0=$SECONDS
  if declare -F "$1" > /dev/null; then # a function of this script (exported)
    timeout -k 5 "${STEP_TIMEOUT:-300}" bash -c '"$@"' _ "$@" > "$R/$name.log" 2>&1
  else
    timeout -k 5 "${STEP_TIMEOUT:-300}" "$@" > "$R/$name.log" 2>&1
  fi
  local rc=$?
  tail -n "${TAIL:-15}" "$R/$name.log"
  [ $rc -ne 0 ] && failed=1
  status+=("$(printf '%-22s rc=%-3s %4ss' "$name" "$rc" "$((SECONDS - t0))")")
  return $rc
}
# expect CODE GREP CMD...: CMD must exit CODE and print a line matching GREP.
expect() {
  local code=$1 pat=$2; shift 2
  "$@" > "$W/expect.out" 2>&1; local rc=$?
  cat "$W/expect.out"
  echo "exit code $rc (want $code)"
  [ "$rc" -eq "$code" ] && grep -qE "$pat" "$W/expect.out"
}
# traced DIR: DIR holds the outputs and a capture whose every warp decodes
# (its pairing is the kernel's: the lane-rule step checks it).
traced() {
  for f in trace.iket trace.pftrace report.html latency.json; do
    [ -s "$1/$f" ] || { echo "missing $1/$f"; return 1; }
  done
  "$IKET" stats "$1/trace.iket" > /dev/null && "$IKET" check "$1/trace.iket" --expect no_drops
}

export -f traced expect
export IKET W
echo "iket app run: $(date -u +%Y-%m-%dT%H:%M:%SZ), commit ${IKET_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo '?')}"
nvcc --version | tail -n 1

# ---- builds ------------------------------------------------------------------
step build-whole bash -c "nvcc -O3 -std=c++17 $ARCH $INC -DIKET_ENABLE=1 -o $W/app $A/main.cu $A/scale.cu &&
  nvcc -O3 -std=c++17 $ARCH $INC -o $W/app_plain $A/main.cu $A/scale.cu"
step build-rdc nvcc -rdc=true -O3 -std=c++17 $ARCH $INC -DIKET_ENABLE=1 -o "$W/app_rdc" $A/main.cu $A/scale.cu
step build-shared nvcc -cudart shared -O3 -std=c++17 $ARCH $INC -DIKET_ENABLE=1 -o "$W/app_shared" $A/main.cu $A/scale.cu
step build-cmake bash -c "cmake -S $A -B $W/cmake -DCMAKE_CUDA_ARCHITECTURES=90a -DIKET_ENABLE=ON -DAPP_RDC=ON && cmake --build $W/cmake -j"
step build-driver bash -c "nvcc -cubin -O3 -std=c++17 $ARCH $INC -DIKET_ENABLE=1 -DIKET_LIVE=1 -o $W/pipeline.cubin $A/entry.cu &&
  g++ -O2 -I/usr/local/cuda/include -o $W/driver_app $A/driver_app.cpp -L/usr/local/cuda/lib64/stubs -lcuda"

# ---- tracing inside the application ------------------------------------------
step whole bash -c "$IKET run -o $R/whole -- $W/app && traced $R/whole"
step baseline bash -c "$IKET run -o $R/baseline --kernel pipeline --launch 0-4 --baseline '$W/app_plain' -- $W/app &&
  grep -q '\"paired_ratio\"' $R/baseline/latency.json"
# The same launches against the instrumented build run with no iket
# attached: the buffers' cost alone, without the dormant build's.
step baseline-dormant bash -c "$IKET run -o $R/basedormant --kernel pipeline --launch 0-4 --baseline '$W/app' -- $W/app"
# --dormant: the same launches of the instrumented build timed untraced too,
# against the plain build: what leaving tracing compiled in costs; --control:
# the plain build run again, against its first run: the noise of the ratios.
step dormant bash -c "$IKET run -o $R/dormant --kernel pipeline --launch 0-4 --baseline '$W/app_plain' --dormant --control -- $W/app &&
  grep -q '\"dormant\"' $R/dormant/latency.json && grep -q '\"control\"' $R/dormant/latency.json"
step kernel-demangled bash -c "$IKET run -o $R/demangled --kernel 'app::pipeline<4, 2>' -- $W/app &&
  $IKET stats $R/demangled/trace.iket | grep -q compute"
step kernel-second bash -c "$IKET run -o $R/second --kernel '^scale_kernel' -- $W/app && $IKET stats $R/second/trace.iket | grep -q scale"
# The first launch, zero_out, constructs no iket::Warp: named, not counted;
# the default selection traces the next instrumented launch (scale_kernel).
step no-warp bash -c "$IKET run -o $R/nowarp -- $W/app > $W/nowarp.out 2>&1; rc=\$?; cat $W/nowarp.out; [ \$rc -eq 0 ] &&
  grep -q 'zero_out: no warp of its first traced launch constructed an iket::Warp' $W/nowarp.out && grep -q 'launch 0: scale_kernel' $W/nowarp.out && traced $R/nowarp"
# Buffers past IKET_BUFFER_LIMIT (792 warps, 4 MB): 512 records per warp, not
# 4096; every event still fits (about 255 per warp).
step capacity-fit bash -c "IKET_BUFFER_LIMIT=4000000 $IKET run -o $R/fit --kernel pipeline -- $W/app > $W/fit.out 2>&1; rc=\$?; cat $W/fit.out; [ \$rc -eq 0 ] &&
  grep -q 'traced with 512 records per warp' $W/fit.out && traced $R/fit && $IKET validate $R/fit/trace.iket"
step no-match expect 2 "matched no launch" "$IKET" run -o "$R/nomatch" --kernel nothing_like_this -- "$W/app"
step not-instrumented expect 2 "IKET_ENABLE" "$IKET" run -o "$R/plain" -- "$W/app_plain"
# The example records its end mark with lane 0 alone after whole-warp
# events, as users write it: every warp must decode strictly.
step lane-rule "$IKET" validate "$R/baseline/trace.iket"
step launch-ex bash -c "$IKET run -o $R/ex --kernel pipeline -- $W/app --ex && traced $R/ex"
step graph expect 2 "graph" "$IKET" run -o "$R/graph" --kernel pipeline -- "$W/app" --graph
step rdc bash -c "$IKET run -o $R/rdc --kernel pipeline -- $W/app_rdc && traced $R/rdc"
step shared-cudart bash -c "$IKET run -o $R/shared -- $W/app_shared && traced $R/shared"
step cmake bash -c "$IKET run -o $R/cmake -- $W/cmake/app && traced $R/cmake"
step lazy bash -c "CUDA_MODULE_LOADING=LAZY $IKET run -o $R/lazy --kernel pipeline --launch 2 -- $W/app"
step eager bash -c "CUDA_MODULE_LOADING=EAGER $IKET run -o $R/eager --kernel pipeline -- $W/app"
step driver-module bash -c "$IKET run -o $R/drv -- $W/driver_app $W/pipeline.cubin && traced $R/drv"
step driver-library bash -c "$IKET run -o $R/lib -- $W/driver_app $W/pipeline.cubin --library && traced $R/lib"
step cupy-nvrtc bash -c "$IKET run -o $R/cupy --baseline 'python3 $A/app.py --plain' -- python3 $A/app.py && traced $R/cupy"
step torch-ext bash -c "$IKET run -o $R/torch -- python3 $A/torch_app.py && traced $R/torch"
step torch-dormant bash -c "$IKET run -o $R/torchd -- python3 $A/torch_app.py --dormant > $W/torchd.out 2>&1; rc=\$?; cat $W/torchd.out; [ \$rc -eq 0 ] &&
  grep -Eq '[1-9][0-9]* compiled again' $W/torchd.out && traced $R/torchd"
# Every lane pattern (lane 0 alone, the whole warp, an if/else by lane, lanes
# 0-7) in an extension built with torch's own flags: each name's count exact.
step torch-lanes bash -c "$IKET run -o $R/lanes -- python3 $A/torch_lanes.py && $IKET stats --json --launch 0 $R/lanes/trace.iket > $W/lanes.json &&
  python3 $A/torch_lanes.py --check $W/lanes.json && $IKET check $R/lanes/trace.iket --expect strict --expect no_drops"
# Small captures for CI's fixtures (internal/bundled/testdata/app_cpp_h200.iket, app_py_h200.iket).
step fixture-cpp "$IKET" run -o "$R/fixture-cpp" --capacity 320 --kernel pipeline --launch 1 -- "$W/app" --ctas 4 --tiles 16
step fixture-py "$IKET" run -o "$R/fixture-py" --capacity 320 -- python3 $A/app.py --ctas 4 --tiles 16 --launches 2
step processes bash -c "$IKET run -o $R/procs -- bash -c '$W/app & $W/app; wait' && ls -d $R/procs/pid*-gpu0 | wc -l | grep -q 2"
step hang expect 2 "did not finish" "$IKET" run -o "$R/hang" --kernel pipeline --timeout 3s -- "$W/app" --hang
step hang-watch expect 2 "wait_full" "$IKET" run -o "$R/hangw" --kernel pipeline --watch --timeout 3s -- "$W/app" --hang
step fault expect 2 "CUDA_ERROR" "$IKET" run -o "$R/fault" --kernel pipeline --watch -- "$W/app" --fault
step exit-code expect 2 "status 2|exited" "$IKET" run -o "$R/usage" -- "$W/app" --no-such-flag
# Beside Nsight Compute: ncu injects into its target (iket), which does not
# use CUDA; the program then runs with iket's injection, and ncu profiles
# nothing. The step records what each says.
command -v ncu > /dev/null && step beside-ncu bash -c "ncu --target-processes all -o $W/ncu -f $IKET run -o $R/ncu -- $W/app --launches 1; true"

# ---- the cost of attaching: the application's own per-launch time -----------
# plain build; instrumented build without iket (dormant); instrumented build
# with iket attached and no launch selected (--launch 100000).
cost() {
  for round in 1 2 3 4 5; do
    echo "plain $($W/app_plain --launches 200 | sed 's/.*: \([0-9.]*\) us per launch.*/\1/')"
    echo "dormant $($W/app --launches 200 | sed 's/.*: \([0-9.]*\) us per launch.*/\1/')"
    echo "attached $($IKET run -o $W/cost --kernel pipeline --launch 100000 -- $W/app --launches 200 2>/dev/null | sed 's/.*: \([0-9.]*\) us per launch.*/\1/')"
  done
}
export -f cost
export W
step attach-cost bash -c cost
awk '{v[$1]=v[$1]" "$2} END {for (k in v) print k ":" v[k]}' "$R/attach-cost.log" | tee "$R/attach-cost.txt"

echo
echo "===== summary ====="
printf '%s\n' "${status[@]}" | tee "$R/summary.txt"
# summarize NAME RUN KEY LABEL: the list KEY of RUN's latency.json (kernels,
# dormant, control), one line per kernel, LABEL naming its first time.
summarize() {
  [ -f "$R/$2/latency.json" ] || return 0
  python3 -c '
import json,sys
for k in json.load(open(sys.argv[1])).get(sys.argv[2]) or []:
    u=k.get("uninstrumented") or {}
    print("%-28s %s p50 %8.2f us  baseline p50 %8.2f us  ratio %.4f  paired %.4f  (%d pairs)" % (k["kernel"][:28], sys.argv[3], k["instrumented"]["median_us"], u.get("median_us",0), k.get("ratio",0), k.get("paired_ratio",0), len(k["pairs"])))
' "$R/$2/latency.json" "$3" "$4" | sed "s/^/$1: /" | tee -a "$R/summary.txt"
}
summarize baseline baseline kernels traced
summarize basedormant basedormant kernels traced
summarize dormant dormant dormant untraced
summarize control dormant control again
exit $failed
