// eventcost: what one iket event costs, measured two ways.
//
// 1. Cycles. ev_loop runs `iters` iterations of a dependent FMA; the
//    instrumented build (-DIKET_ENABLE=1) also records one mark per iteration
//    (payload = iteration), the uninstrumented build records nothing. Lane 0 of
//    each warp writes the %clock64 cycles the loop took to cycles[warp slot].
//    With one warp this is the event's latency on the dependent path; with 64
//    warps per SM (grid = 2 x SMs, block = 1024) the SM's cycles divided by the
//    events it recorded is the throughput cost.
// 2. Instructions. ev_sass1 .. ev_sass5 are identical but for 1 .. 5 marks;
//    scripts/overhead.sh counts their SASS instructions (cuobjdump -sass) and
//    the differences are the instructions of one event.
//
// Launch ev_loop: block = (1024) or (32); arguments (unsigned long long*
// cycles, float* sink, int iters); cycles and sink hold one entry per warp and
// per thread. ev_sassN: grid = (1), block = (32); argument (unsigned* p) with
// 4 entries.
#include "iket.cuh"

#define EVENTCOST_NAMES(X) X(MARK, tick) X(MARK, tick_b) X(MARK, tick_c) X(MARK, tick_d) X(MARK, tick_e) \
  X(RANGE, phase_a) X(RANGE, phase_b) X(RANGE, phase_c) X(ROLE, bench)
IKET_NAMES(EVENTCOST_NAMES)

extern "C" __global__ void __launch_bounds__(1024, 2)
    ev_loop(unsigned long long* __restrict__ cycles, float* __restrict__ sink,
            int iters) {
  iket::Warp tr;
  tr.set_role(iket_id::bench);
  float x = (float)threadIdx.x;
  const float a = 1.0001f + (float)(iters & 1) * 1e-7f;
  unsigned long long t0, t1;
  __syncwarp();
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t0)::"memory");
#pragma unroll 1
  for (int i = 0; i < iters; ++i) {
    x = fmaf(x, a, 0.5f);
    tr.mark(iket_id::tick, (unsigned)i);
  }
  __syncwarp();
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t1)::"memory");
  const unsigned long long tid =
      (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  sink[tid] = x;
  if (threadIdx.x % 32 == 0) cycles[tid / 32] = t1 - t0;
}

// The SASS probes: p[1] is a run-time payload, p[0] and p[2] are stores the
// events sit between. The marks differ in name (ids tick .. tick_e are
// consecutive), not in payload, so no payload arithmetic is counted as the
// event's and no two events are alike. One template, so the kernels differ
// in nothing but the number of events.
// ev_stage (SASS only): the loop of ev_loop with a pipeline stage as the
// payload (i % 4, also used by the loop itself, as a kernel uses its stage
// index): the compiler knows its range, so no mask.
extern "C" __global__ void ev_stage(float* __restrict__ sink, int iters) {
  iket::Warp tr;
  float x = (float)threadIdx.x;
#pragma unroll 1
  for (int i = 0; i < iters; ++i) {
    const unsigned s = (unsigned)i % 4u;
    x = fmaf(x, 1.0001f, (float)s);
    tr.mark(iket_id::tick, s);
  }
  sink[threadIdx.x] = x;
}

template <int N>
__device__ __forceinline__ void sass_probe(unsigned* p) {
  iket::Warp tr;
  const unsigned v = p[1];
  p[0] = v;
#pragma unroll
  for (int i = 0; i < N; ++i)
    tr.mark(static_cast<unsigned short>(iket_id::tick + i), v);
  p[2] = v + 1;
}

extern "C" __global__ void ev_sass1(unsigned* p) { sass_probe<1>(p); }
extern "C" __global__ void ev_sass2(unsigned* p) { sass_probe<2>(p); }
extern "C" __global__ void ev_sass3(unsigned* p) { sass_probe<3>(p); }
extern "C" __global__ void ev_sass4(unsigned* p) { sass_probe<4>(p); }
extern "C" __global__ void ev_sass5(unsigned* p) { sass_probe<5>(p); }

// ev_next1 and ev_next2: one and two range_next between a push and a pop,
// the probe of range_next's instructions (one NEXT record per call).
template <int N>
__device__ __forceinline__ void next_probe(unsigned* p) {
  iket::Warp tr;
  const unsigned v = p[1];
  p[0] = v;
  tr.range_push(iket_id::phase_a, v);
#pragma unroll
  for (int i = 0; i < N; ++i)
    tr.range_next(static_cast<unsigned short>(iket_id::phase_b + i), v);
  tr.range_pop();
  p[2] = v + 1;
}

extern "C" __global__ void ev_next1(unsigned* p) { next_probe<1>(p); }
extern "C" __global__ void ev_next2(unsigned* p) { next_probe<2>(p); }

// ev_pair1 and ev_pair2: one and two stamp + range_next_pair between a push
// and a pop, the probe of a pair's instructions (two NEXT records).
template <int N>
__device__ __forceinline__ void pair_probe(unsigned* p) {
  iket::Warp tr;
  const unsigned v = p[1];
  p[0] = v;
  tr.range_push(iket_id::phase_a, v);
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const iket::Stamp t = tr.stamp();
    tr.range_next_pair(t, static_cast<unsigned short>(iket_id::phase_b + i), v,
                       iket_id::phase_a, v);
  }
  tr.range_pop();
  p[2] = v + 1;
}

extern "C" __global__ void ev_pair1(unsigned* p) { pair_probe<1>(p); }
extern "C" __global__ void ev_pair2(unsigned* p) { pair_probe<2>(p); }
