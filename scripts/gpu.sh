#!/usr/bin/env bash
# Runs on the H200 (see README "On a GPU machine"): iket demo and run on the built-in
# example, then every GPU test with IKET_REQUIRE_GPU=1 so nothing can pass by
# skipping. Expects bin/ from scripts/build-gpu.sh. Writes everything under
# ${OUT:-./out}; prints a short table last.
set -u -o pipefail
cd "$(dirname "$0")/.."
# Everything is written under $RES; at the end its files of at most 1 MiB (the
# logs, summaries, latency.json files and the small fixture captures) are
# packed into $OUT/gpu-results.tgz, one file small enough to bring back
# from the GPU machine (at most 16 MiB); $OUT/left-out.txt lists the larger
# ones (traces of full-size runs, reports) with their sizes.
OUT=${OUT:-./out}
RES=${RES:-/tmp/iket-gpu}
rm -rf "$RES"; mkdir -p "$OUT" "$RES"
final_out=$OUT
OUT=$RES
status=()
step() { # step NAME CMD...: runs CMD, logs to $OUT/NAME.log, records pass/fail
  local name=$1; shift
  echo "=== $name: $*"
  local t0=$SECONDS
  timeout "${STEP_TIMEOUT:-240}" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  tail -n "${TAIL:-25}" "$OUT/$name.log"
  status+=("$(printf '%-28s rc=%-3s %4ss' "$name" "$rc" "$((SECONDS - t0))")")
  return $rc
}
# The tree's git data can be stale where it is a copy: the binary's version
# names the commit it was built from.
./bin/iket --version 2>&1 | head -n 1
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv > "$OUT/nvidia-smi.csv" 2>&1
cat "$OUT/nvidia-smi.csv"
step devices ./bin/iket devices
step demo ./bin/iket demo -o "$OUT/demo"
step run ./bin/iket run warp_roles -o "$OUT/run"
# The run's timing has a control (the uninstrumented build again) unless
# --no-control; latency.json says which.
step control bash -c 'grep -q "\"control_ratio\"" "$1/run/latency.json" && ./bin/iket run warp_roles --no-control -o "$1/nocontrol" && ! grep -q "\"control\"" "$1/nocontrol/latency.json" && grep -q "alternating" "$1/nocontrol/latency.json"' _ "$OUT"
# The capture bundled with iket (internal/bundled/testdata): small buffers.
step fixture ./bin/iket run warp_roles --capacity 16 -o "$OUT/fixture"
step calibrate ./bin/iket run calibrate --timeout 60s -o "$OUT/cal"
[ -f "$OUT/cal/trace.iket" ] && step calibrate-spread ./bin/iket calibrate --rounds "$OUT/cal/trace.iket"
[ -f "$OUT/cal/trace.iket" ] && ./bin/iket calibrate --json "$OUT/cal/trace.iket" > "$OUT/cal/spread.json" 2>&1
step spec ./bin/iket run --spec kernels/examples/warp_roles.yaml --no-timing -o "$OUT/spec"
step wrap ./bin/iket run warp_roles --capacity 4 --mode wrap --no-timing -o "$OUT/wrap"
[ -f "$OUT/run/trace.iket" ] && step check ./bin/iket check "$OUT/run/trace.iket" --expect 'no_drops' --expect 'strict'
root=$PWD
absout=$(cd "$OUT" && pwd)
while read -r name rel; do
  step "test-$name" env -C "$rel" IKET_REQUIRE_GPU=1 IKET_TEST_OUT="$absout" "$root/bin/$name.test" -test.v -test.timeout 200s
done < bin/tests.txt
# A kernel that hangs and one that faults, through the CLI: each must exit 2
# with a diagnosis (hang) or the CUDA error (fault) and keep its partial
# capture. Each runs in its own process: a fault ends CUDA for the process.
expect2='"$@"; rc=$?; echo "exit code $rc"; [ "$rc" -eq 2 ]'
step hang-cli bash -c "$expect2" _ ./bin/iket run hang --watch --timeout 2s -o "$OUT/hang"
grep -q "still running" "$OUT/hang-cli.log" || status+=("hang-cli: no diagnosis in the output")
step fault-cli bash -c "$expect2" _ ./bin/iket run fault --watch -o "$OUT/fault"
grep -q "CUDA_ERROR" "$OUT/fault-cli.log" || status+=("fault-cli: no CUDA error named")
# iket run -- CMD on the example application, every way it is built and
# launched (scripts/gpu-app.sh has its own table, in $OUT/app/summary.txt).
STEP_TIMEOUT=1200 step app scripts/gpu-app.sh "$OUT/app"
# Watch mode's cost (host-mapped buffers) against device buffers.
step bench-watch env -C iket "$root/bin/iket.test" -test.run '^$' -test.bench GPUTrace -test.benchmem -test.count 3
echo
echo "===== summary ====="
printf '%s\n' "${status[@]}" | tee "$OUT/summary.txt"
(cd "$RES" && find . -type f -size +1024k -printf '%s %p\n' | sort -k2 > "$RES/left-out.txt" &&
  find . -type f -size -1025k -print0 | tar czf "$final_out/gpu-results.tgz" --null -T -)
echo "gpu-results.tgz: $(du -k "$final_out/gpu-results.tgz" | cut -f1) KiB"
cp "$RES/left-out.txt" "$final_out/left-out.txt"
cp "$OUT/summary.txt" "$final_out/summary.txt"
