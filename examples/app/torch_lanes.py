"""torch_lanes.py: a producer/consumer kernel as a PyTorch extension built
by load_inline with torch's own flags, recording in every lane pattern: a
producer that waits in lane 0 alone and loads with the whole warp,
consumers that record in the whole warp, in odd and even lanes (an if/else
by lane) and in lanes 0-7. Traced with

    iket run -o out -- python examples/app/torch_lanes.py
    iket stats --json --launch 0 out/trace.iket > stats.json
    python examples/app/torch_lanes.py --check stats.json

--check compares the capture's per-name counts with what the kernel
records (no GPU needed) and exits 1 on a difference; --plain builds
without IKET_ENABLE. Exits 1 when the result is wrong.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
INCLUDE = os.path.abspath(os.path.join(HERE, "..", "..", "kernels", "include"))

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include "iket.cuh"
#define LANES_NAMES(X) X(ROLE, producer) X(ROLE, consumer) X(RANGE, flagwait) X(RANGE, load) \
  X(RANGE, sync) X(RANGE, compute) X(RANGE, odd) X(RANGE, even) X(RANGE, epilogue) X(MARK, tile_done)
IKET_NAMES(LANES_NAMES)
__global__ void lanes(const float* x, float* out, int tiles) {
  iket::Warp tr;
  __shared__ float buf[2][1024];
  __shared__ volatile int ready;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) ready = 0;
  __syncthreads();
  float acc = 0.f;
  if (warp == 0) tr.set_role(iket_id::producer); else tr.set_role(iket_id::consumer);
  for (int t = 0; t < tiles; ++t) {
    const int s = t & 1;
    if (warp == 0) {
      if (lane == 0) {
        tr.range_push(iket_id::flagwait, t);
        while (ready != t) {
        }
        tr.range_pop();
      }
      __syncwarp();
      tr.range_push(iket_id::load, t);
      const float* src = x + ((size_t)blockIdx.x * tiles + t) * 1024;
      for (int i = lane; i < 1024; i += 32) buf[s][i] = src[i];
      tr.range_pop();
    }
    tr.range_push(iket_id::sync);
    __syncthreads();
    tr.range_pop();
    if (warp != 0) {
      tr.range_push(iket_id::compute, t);
      for (int i = threadIdx.x - 32; i < 1024; i += blockDim.x - 32) acc += buf[s][i] * buf[s][i];
      tr.range_pop();
      if (lane & 1) {
        tr.range_push(iket_id::odd);
        acc += 1e-30f;
        tr.range_pop();
      } else {
        tr.range_push(iket_id::even);
        acc -= 1e-30f;
        tr.range_pop();
      }
    }
    if (lane == 0) tr.mark(iket_id::tile_done, t);
    __syncthreads();
    if (threadIdx.x == 32) ready = t + 1;
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
  if (lane < 8) {
    tr.range_push(iket_id::epilogue);
    if (lane == 0 && warp != 0) atomicAdd(&out[blockIdx.x], acc);
    tr.range_pop();
  }
}
torch::Tensor run(torch::Tensor x, int64_t ctas, int64_t tiles, int64_t threads) {
  auto out = torch::zeros({ctas}, x.options());
  lanes<<<ctas, threads, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), out.data_ptr<float>(),
                                                                static_cast<int>(tiles));
  return out;
}
"""
CPP_SRC = "torch::Tensor run(torch::Tensor x, int64_t ctas, int64_t tiles, int64_t threads);"


def expected(ctas, tiles, threads):
    """Ranges per name and marks of one launch, over all warps."""
    cons = threads // 32 - 1
    per_cta = {"flagwait": tiles, "load": tiles, "sync": (cons + 1) * tiles, "compute": cons * tiles,
               "odd": cons * tiles, "even": cons * tiles, "epilogue": cons + 1}
    ranges = {k: v * ctas for k, v in per_cta.items()}
    return ranges, ctas * (cons + 1) * tiles


def check(path, ctas, tiles, threads):
    with open(path) as f:
        d = json.load(f)
    got = {}
    for s in d["stats"]:
        if s["role"] != "":  # "" is a row over every role (docs/JSON.md)
            got[s["range"]] = got.get(s["range"], 0) + s["count"]
    ranges, marks = expected(ctas, tiles, threads)
    bad = 0
    for name, want in sorted(ranges.items()):
        ok = got.get(name, 0) == want
        bad += not ok
        print("%-9s ranges: want %7d, got %7d%s" % (name, want, got.get(name, 0), "" if ok else "  MISMATCH"))
    sm = d["summary"]
    for key, want in (("marks", marks), ("dropped", 0), ("warp_errors", 0), ("warps", ctas * threads // 32)):
        ok = sm[key] == want
        bad += not ok
        print("%-9s: want %7d, got %7d%s" % (key, want, sm[key], "" if ok else "  MISMATCH"))
    extra = sorted(set(got) - set(ranges))
    if extra:
        print("names the kernel does not record:", extra)
        bad += 1
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctas", type=int, default=528)
    ap.add_argument("--tiles", type=int, default=32)
    ap.add_argument("--threads", type=int, default=128)
    ap.add_argument("--launches", type=int, default=3)
    ap.add_argument("--plain", action="store_true")
    ap.add_argument("--check", metavar="STATS_JSON")
    a = ap.parse_args()
    if a.threads < 64 or a.threads % 32 != 0:
        ap.error("--threads %d: want a multiple of 32, at least 64 (a producer warp and a consumer warp)" % a.threads)
    if a.check:
        return check(a.check, a.ctas, a.tiles, a.threads)
    import torch
    from torch.utils.cpp_extension import load_inline

    flags = ["-O3", "-I" + INCLUDE] + ([] if a.plain else ["-DIKET_ENABLE=1"])
    ext = load_inline("iket_lanes_plain" if a.plain else "iket_lanes", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC,
                      functions=["run"], extra_cuda_cflags=flags, verbose=False)
    x = (torch.arange(a.ctas * a.tiles * 1024, dtype=torch.float32) % 97 / 97).cuda()
    for _ in range(a.launches):
        out = ext.run(x, a.ctas, a.tiles, a.threads)
    torch.cuda.synchronize()
    want = (x.view(a.ctas, -1).double() ** 2).sum(dim=1)
    ok = torch.allclose(out.double(), want, rtol=1e-3)
    print("torch_lanes.py: %d launches (%s): %s" % (a.launches, "plain" if a.plain else "iket",
                                                     "correct" if ok else "WRONG"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
