"""torch_app.py: the example kernel as a PyTorch extension built with
torch.utils.cpp_extension.load_inline (nvcc and ninja at run time), its
launch a plain <<<>>> inside the extension. Traced with

    iket run -o out -- python examples/app/torch_app.py

It builds with torch's own arch flags, as an extension usually does, so
the build is live (iket.cuh's default for PyTorch extensions, whose builds
keep no PTX when TORCH_CUDA_ARCH_LIST is set without +PTX); --dormant builds it dormant instead
(-DIKET_LIVE=0, with PTX through TORCH_CUDA_ARCH_LIST=9.0+PTX). --plain
builds it without IKET_ENABLE (the baseline). Exits 1 when the result is
wrong.
"""
import argparse
import os
import sys

import torch
from torch.utils.cpp_extension import load_inline

HERE = os.path.dirname(os.path.abspath(__file__))
INCLUDE = os.path.abspath(os.path.join(HERE, "..", "..", "kernels", "include"))

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include "pipeline.cuh"
torch::Tensor run(torch::Tensor x, int64_t ctas, int64_t tiles) {
  auto out = torch::zeros({ctas}, x.options());
  app::pipeline<4, 2><<<ctas, 96, 0, at::cuda::getCurrentCUDAStream()>>>(
      x.data_ptr<float>(), out.data_ptr<float>(), static_cast<int>(tiles));
  return out;
}
"""
CPP_SRC = "torch::Tensor run(torch::Tensor x, int64_t ctas, int64_t tiles);"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctas", type=int, default=264)
    ap.add_argument("--tiles", type=int, default=64)
    ap.add_argument("--launches", type=int, default=5)
    ap.add_argument("--plain", action="store_true")
    ap.add_argument("--dormant", action="store_true")
    a = ap.parse_args()
    flags = ["-O3", "-std=c++17", "-I" + HERE, "-I" + INCLUDE]
    if not a.plain:
        flags.append("-DIKET_ENABLE=1")
    if a.dormant:
        flags.append("-DIKET_LIVE=0")
        os.environ["TORCH_CUDA_ARCH_LIST"] = "9.0+PTX"
    name = "iket_app_plain" if a.plain else "iket_app_dormant" if a.dormant else "iket_app_traced"
    ext = load_inline(name, cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=["run"],
                      extra_cuda_cflags=flags, extra_include_paths=[HERE, INCLUDE], verbose=False)
    g = torch.Generator().manual_seed(7)
    x = (torch.randint(0, 1000, (a.ctas * a.tiles * 1024,), generator=g) / 1000).float().cuda()
    for _ in range(a.launches):
        out = ext.run(x, a.ctas, a.tiles)
    torch.cuda.synchronize()
    want = x.view(a.ctas, -1).double().sum(dim=1)
    ok = torch.allclose(out.double(), want, rtol=1e-3, atol=1e-3)
    build = "plain" if a.plain else "dormant" if a.dormant else "iket"
    print("torch_app.py: %d launches (%s): %s" % (a.launches, build, "correct" if ok else "WRONG"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
