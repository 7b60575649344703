// ring.cu: an ld/st ring through mbarriers (cuda::barrier), written the
// plain way: in each CTA warp 0 copies tiles of the input from global to
// shared memory with ordinary loads and stores into a ring of STAGES
// slots, and two consumer warps sum their halves of every tile. A slot's
// "full" barrier completes when the producer has filled it, its "empty"
// barrier when the consumers are done with it. Every wait, load and
// compute is a range_push / range_pop with the tile as the payload. With
// --lane0-wait the producer's lane 0 alone waits for a free slot (inside
// its range) and the warp then loads together, as many producers do.
//
//   ring [--ctas N] [--tiles N] [--launches N] [--lane0-wait]
//
// Prints the mean time per launch (its own CUDA events, after one untimed
// launch) and exits 1 when a sum is wrong, 2 on a CUDA error.
#include <cuda/barrier>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "iket.cuh"

#define RING_NAMES(X)                                                   \
  X(ROLE, producer) X(ROLE, consumer) X(RANGE, wait_empty) X(RANGE, load) \
  X(RANGE, wait_full) X(RANGE, compute)
IKET_NAMES(RING_NAMES)

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      fprintf(stderr, "ring: %s at %s:%d: %s\n", #x, __FILE__, __LINE__, cudaGetErrorString(e_)); \
      exit(2);                                                                                  \
    }                                                                                           \
  } while (0)

constexpr int kStages = 4, kConsumers = 2, kTile = 1024;  // floats per tile
using barrier = cuda::barrier<cuda::thread_scope_block>;
// The barriers are initialised by thread 0 (init below), as CUDA's own
// examples of cuda::barrier in shared memory do.
#pragma nv_diag_suppress static_var_with_dynamic_init

template <bool kLane0Wait>
__global__ void __launch_bounds__(32 * (1 + kConsumers)) ring(const float* __restrict__ in, float* __restrict__ out, int tiles) {
  iket::Warp tr;
  __shared__ float4 slot[kStages][kTile / 4];
  __shared__ barrier full[kStages], empty[kStages];
  __shared__ float partial[kConsumers];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0)
    for (int s = 0; s < kStages; ++s) {
      init(&full[s], blockDim.x);
      init(&empty[s], blockDim.x);
    }
  __syncthreads();
  const float4* src = reinterpret_cast<const float4*>(in) + static_cast<long long>(blockIdx.x) * tiles * (kTile / 4);
  if (warp == 0) {
    tr.set_role(iket_id::producer);
    for (int t = 0; t < tiles; ++t) {
      const int s = t % kStages;
      if (t >= kStages && kLane0Wait) {
        barrier::arrival_token token = empty[s].arrive();
        if (lane == 0) {
          tr.range_push(iket_id::wait_empty, t);
          empty[s].wait(std::move(token));
          tr.range_pop();
        }
        __syncwarp();
      } else if (t >= kStages) {
        tr.range_push(iket_id::wait_empty, t);
        empty[s].arrive_and_wait();
        tr.range_pop();
      }
      tr.range_push(iket_id::load, t);
      for (int i = lane; i < kTile / 4; i += 32) slot[s][i] = src[t * (kTile / 4) + i];
      tr.range_pop();
      (void)full[s].arrive();
    }
  } else {
    tr.set_role(iket_id::consumer);
    const int c = warp - 1, per = kTile / 4 / kConsumers;
    float sum = 0.f;
    for (int t = 0; t < tiles; ++t) {
      const int s = t % kStages;
      tr.range_push(iket_id::wait_full, t);
      full[s].arrive_and_wait();
      tr.range_pop();
      tr.range_push(iket_id::compute, t);
      for (int i = c * per + lane; i < (c + 1) * per; i += 32) {
        const float4 v = slot[s][i];
        sum += (v.x + v.y) + (v.z + v.w);
      }
      tr.range_pop();
      if (t + kStages < tiles) (void)empty[s].arrive();
    }
    for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0) partial[c] = sum;
  }
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0] + partial[1];
}

int main(int argc, char** argv) {
  int ctas = 1056, tiles = 32, launches = 20;
  bool lane0 = false;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--ctas") && i + 1 < argc) ctas = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--tiles") && i + 1 < argc) tiles = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--launches") && i + 1 < argc) launches = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--lane0-wait")) lane0 = true;
    else {
      fprintf(stderr, "usage: ring [--ctas N] [--tiles N] [--launches N] [--lane0-wait]\n");
      return 2;
    }
  }
  const size_t n = static_cast<size_t>(ctas) * tiles * kTile;
  std::vector<float> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = static_cast<float>((i * 2654435761u >> 9) % 1000) / 1000.f;
  float *in, *out;
  CK(cudaMalloc(&in, n * sizeof(float)));
  CK(cudaMalloc(&out, ctas * sizeof(float)));
  CK(cudaMemcpy(in, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  const auto launch = [&] {
    if (lane0) ring<true><<<ctas, 32 * (1 + kConsumers)>>>(in, out, tiles);
    else ring<false><<<ctas, 32 * (1 + kConsumers)>>>(in, out, tiles);
  };
  // One launch before the clock starts: CUDA loads a kernel's module at its
  // first use (CUDA_MODULE_LOADING=LAZY, the default), which would otherwise
  // fall inside the timed launches, and the caches warm.
  launch();
  CK(cudaDeviceSynchronize());
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaEventRecord(e0));
  for (int i = 0; i < launches; ++i) launch();
  CK(cudaGetLastError());
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  std::vector<float> got(ctas);
  CK(cudaMemcpy(got.data(), out, ctas * sizeof(float), cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int c = 0; c < ctas; ++c) {
    double want = 0;
    for (size_t i = 0; i < static_cast<size_t>(tiles) * kTile; ++i) want += h[c * static_cast<size_t>(tiles) * kTile + i];
    if (std::abs(got[c] - want) > 1e-3 * std::abs(want) + 1e-3) ++bad;
  }
  printf("ring%s: %d launches on %d CTAs x %d tiles: %.2f us per launch, %s\n", lane0 ? " (lane 0 waits)" : "", launches, ctas, tiles, 1000.0 * ms / launches,
         bad ? "WRONG" : "correct");
  return bad ? 1 : 0;
}
