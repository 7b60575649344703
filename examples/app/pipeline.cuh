// pipeline.cuh: a warp-specialized producer/consumer kernel written the
// plain way. In each CTA warp 0 (the producer) copies tiles of the input
// into a ring of STAGES shared-memory slots; warps 1..CONSUMERS (the
// consumers) each sum their half of every tile. Named barriers hand a slot
// over: the producer waits until it is free, fills it and arrives on its
// "full" barrier; the consumers wait until it is full, reduce it and arrive
// on its "free" barrier. Every wait, load and compute is a range_push /
// range_pop, with the tile index as the payload.
//
// Launch: grid = (ctas), block = (32 * (1 + CONSUMERS)); in holds
// ctas * tiles * TILE floats, out ctas floats: out[c] = the sum of CTA c's
// tiles. A negative tiles deadlocks on purpose (the producer fills one tile
// less than the consumers wait for): the example of a hang to diagnose.
#pragma once
#include "names.cuh"

namespace app {

constexpr int TILE = 1024;  // floats per tile

__device__ __forceinline__ void bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void bar_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

template <int STAGES, int CONSUMERS>
__global__ void __launch_bounds__(32 * (1 + CONSUMERS))
    pipeline(const float* __restrict__ in, float* __restrict__ out, int tiles) {
  static_assert(1 + 2 * STAGES <= 16, "named barriers 1..2*STAGES");
  iket::Warp tr;
  __shared__ float4 ring[STAGES][TILE / 4];
  __shared__ float partial[CONSUMERS];
  const bool deadlock = tiles < 0;
  if (deadlock) tiles = -tiles;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int threads = 32 * (1 + CONSUMERS);
  const float4* src = reinterpret_cast<const float4*>(in) +
                      static_cast<long long>(blockIdx.x) * tiles * (TILE / 4);
  if (warp == 0) {
    tr.set_role(iket_id::producer);
    for (int t = 0; t < tiles - (deadlock ? 1 : 0); ++t) {
      const int s = t % STAGES;
      if (t >= STAGES) {
        tr.range_push(iket_id::wait_free, t);
        bar_sync(1 + STAGES + s, threads);  // the consumers freed slot s
        tr.range_pop();
      }
      tr.range_push(iket_id::load, t);
      for (int i = lane; i < TILE / 4; i += 32) ring[s][i] = src[t * (TILE / 4) + i];
      __threadfence_block();
      tr.range_pop();
      bar_arrive(1 + s, threads);  // slot s is full
    }
  } else {
    tr.set_role(iket_id::consumer);
    const int c = warp - 1;
    float sum = 0.f;
    for (int t = 0; t < tiles; ++t) {
      const int s = t % STAGES;
      tr.range_push(iket_id::wait_full, t);
      bar_sync(1 + s, threads);
      tr.range_pop();
      tr.range_push(iket_id::compute, t);
      const int per = TILE / 4 / CONSUMERS;
      for (int i = c * per + lane; i < (c + 1) * per; i += 32) {
        const float4 v = ring[s][i];
        sum += (v.x + v.y) + (v.z + v.w);
      }
      tr.range_pop();
      if (t + STAGES < tiles) bar_arrive(1 + STAGES + s, threads);  // free slot s
    }
    for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0) partial[c] = sum;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.f;
    for (int c = 0; c < CONSUMERS; ++c) total += partial[c];
    out[blockIdx.x] = total;
    tr.mark(iket_id::done, blockIdx.x & 0xffff);
  }
}

}  // namespace app
