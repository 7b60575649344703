#!/usr/bin/env bash
# app-cost.sh: what iket costs the example application (examples/app) on
# the GPU machine, for header builds given as nvcc flags:
#
#   scripts/app-cost.sh [LABEL=FLAGS ...]     e.g. default= wrap=-DIKET_WRAP=1
#
# For each build: the application's own time per launch (its CUDA events
# around 200 back-to-back launches) for the plain build and for the
# instrumented build run without iket (dormant), alternating, five rounds;
# then `iket run --launch 0-9 --baseline plain` (ten traced launches paired
# with the plain build's), and whether the traced launches validate
# strictly. Prints one table row per build. Expects bin/iket.
set -u -o pipefail
cd "$(dirname "$0")/.."
[ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"
W=${WORK:-/tmp/iket-app-cost}
mkdir -p "$W"
IKET=$PWD/bin/iket
A=examples/app
ARCH=${ARCH:--arch=sm_90a}
[ $# -eq 0 ] && set -- default=
build() { nvcc -O3 -std=c++17 $ARCH "$@" -Ikernels/include -I$A $A/main.cu $A/scale.cu; } # flags first: an -I of theirs wins
build -o "$W/plain" || exit 1
us() { "$@" --launches 200 | sed -n 's/.*: \([0-9.]*\) us per launch.*/\1/p'; }
median() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
rows=()
for spec in "$@"; do
  label=${spec%%=*} flags=${spec#*=}
  build -DIKET_ENABLE=1 $flags -o "$W/app-$label" || { rows+=("$label: build failed"); continue; }
  : > "$W/$label.plain"; : > "$W/$label.dormant"
  for r in 1 2 3 4 5; do
    us "$W/plain" >> "$W/$label.plain"
    us "$W/app-$label" >> "$W/$label.dormant"
  done
  p=$(median < "$W/$label.plain") d=$(median < "$W/$label.dormant")
  "$IKET" run -o "$W/run-$label" --kernel pipeline --launch 0-9 --baseline "$W/plain" -- "$W/app-$label" > "$W/run-$label.log" 2>&1
  ratio=$(python3 -c 'import json,sys; k=json.load(open(sys.argv[1]))["kernels"][0]; print("%.4f %.4f %.2f %.2f" % (k["ratio"], k["paired_ratio"], k["instrumented"]["median_us"], k["uninstrumented"]["median_us"]))' "$W/run-$label/latency.json" 2>/dev/null || echo "- - - -")
  "$IKET" validate "$W/run-$label/trace.iket" > "$W/validate-$label.log" 2>&1 && valid=strict || valid="violations($(grep -c 'launch' "$W/validate-$label.log"))"
  rows+=("$(printf '%-10s plain %7.2f us  dormant %7.2f us (%+.2f%%)  traced ratio %s  %s' "$label" "$p" "$d" "$(awk -v d="$d" -v p="$p" 'BEGIN { print (d / p - 1) * 100 }')" "$ratio" "$valid")")
  echo "${rows[-1]}"
  cat "$W/$label.plain" "$W/$label.dormant" | tr '\n' ' '; echo
done
echo
echo "build      application's own time per launch                traced: ratio paired traced_us plain_us   validate"
printf '%s\n' "${rows[@]}"
