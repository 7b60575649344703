"""app.py: the example kernel in a Python program, compiled at run time
with NVRTC through CuPy (cupy.RawModule), launched from Python. Traced with

    iket run -o out -- python examples/app/app.py
    iket run -o out --baseline 'python examples/app/app.py --plain' -- python examples/app/app.py

--plain compiles it without IKET_ENABLE (the baseline). It checks its
result and exits 1 when it is wrong.
"""
import argparse
import os
import sys

import cupy as cp
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
INCLUDE = os.path.join(HERE, "..", "..", "kernels", "include")
STAGES, CONSUMERS, TILE = 4, 2, 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctas", type=int, default=264)
    ap.add_argument("--tiles", type=int, default=64)
    ap.add_argument("--launches", type=int, default=5)
    ap.add_argument("--plain", action="store_true", help="build without IKET_ENABLE")
    a = ap.parse_args()
    opts = ["-std=c++17", "-I" + HERE, "-I" + os.path.abspath(INCLUDE)]
    if not a.plain:
        opts.append("-DIKET_ENABLE=1")
    expr = "app::pipeline<%d, %d>" % (STAGES, CONSUMERS)
    mod = cp.RawModule(code='#include "pipeline.cuh"\n', options=tuple(opts), name_expressions=[expr])
    kernel = mod.get_function(expr)
    rng = np.random.default_rng(7)
    h = (rng.integers(0, 1000, a.ctas * a.tiles * TILE) / 1000).astype(np.float32)
    x = cp.asarray(h)
    out = cp.zeros(a.ctas, dtype=cp.float32)
    for _ in range(a.launches):
        kernel((a.ctas,), (32 * (1 + CONSUMERS),), (x, out, np.int32(a.tiles)))
    cp.cuda.Device().synchronize()
    want = h.reshape(a.ctas, -1).astype(np.float64).sum(axis=1)
    got = cp.asnumpy(out)
    ok = np.allclose(got, want, rtol=1e-3, atol=1e-3)
    print("app.py: %d launches of %s (%s): %s" % (a.launches, expr, "plain" if a.plain else "iket", "correct" if ok else "WRONG"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
