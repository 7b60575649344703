#!/usr/bin/env bash
# Header variants that order the clock reads after a barrier: each
# variant's barrier-order.cu (a range around __syncthreads) traced, then
# variants.sh (beside this file) on the suite with the same VARS. Run from
# .exp/ of the repository root with .exp/<variant>/iket.cuh
# (barrier-variants.patch applied to .exp/head/iket.cuh, fd79427's header),
# .exp/bo/b.cu (barrier-order.cu) and variants.sh copied beside this:
#   VARS="head clk32 wsync" bash .exp/barrier-variants.sh
#   VARS="head wsync wsp" bash .exp/barrier-variants.sh
# Its event-cost step left no output in either run (its logs were not
# kept), so no event cost was measured (barrier-variants.txt).
set -u
here=$(dirname "$0")
cd "$here/.."
export PATH=$PATH:/usr/local/cuda/bin
for v in ${VARS:-head}; do
  nvcc -O3 -std=c++17 -arch=sm_90a -I.exp/$v -DIKET_ENABLE=1 -o /tmp/bo_$v .exp/bo/b.cu &&
    ./bin/iket run -o /tmp/bo-$v -- /tmp/bo_$v 2>&1 | grep -E "^ +\(none\) +wait" | sed "s/^/barrier $v: /"
done
VARS=${VARS:-head} bash "$here/variants.sh"
