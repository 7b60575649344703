// pipeline: a persistent warp-specialized streaming kernel for Hopper.
//
//   out[r][c] = in[r][c] * scale + bias          (rows of PIPE_ROW floats)
//   rowsum[r] = sum over c of out[r][c]
//
// One CTA per SM (grid = number of SMs) walks rows blockIdx.x, +gridDim.x, ...
// Warp 0 is the producer: for each row it waits for a free slot of a
// PIPE_STAGES-deep shared-memory ring (empty mbarrier), then lane 0 issues one
// 16 KiB 1D bulk copy (cp.async.bulk ... mbarrier::complete_tx::bytes) that
// completes on the slot's full mbarrier. Warps 1..PIPE_CONSUMERS are
// consumers: consumer c takes local rows c, c+PIPE_CONSUMERS, ..., waits for
// the slot's data, computes with 16-byte shared loads and 16-byte streaming
// global stores, frees the slot, and reduces the row sum with shuffles.
//
// Tracing (iket.cuh; the same source builds with and without -DIKET_ENABLE=1):
// every warp sets its role once; per row, with the ring slot (stage) as the
// payload, the producer records the ranges wait_free and issue, a consumer
// wait_data, compute and epilogue.
//
// Launch: grid = (SMs), block = (PIPE_THREADS), dynamic shared memory =
// PIPE_SMEM_BYTES (raise cudaFuncAttributeMaxDynamicSharedMemorySize first);
// arguments (const float* in, float* out, float* rowsum, int rows, float
// scale, float bias). in and out hold rows * PIPE_ROW floats, 16-byte aligned.
// Build: nvcc -cubin -gencode=arch=compute_90a,code=sm_90a (sm_90 works too).
#include "iket.cuh"
#include "hopper.cuh"

#define PIPELINE_NAMES(X) \
  X(ROLE, producer)       \
  X(ROLE, consumer)       \
  X(RANGE, wait_free)     \
  X(RANGE, issue)         \
  X(RANGE, wait_data)     \
  X(RANGE, compute)       \
  X(RANGE, epilogue)
IKET_NAMES(PIPELINE_NAMES)

#define PIPE_ROW 4096                            // floats per row (one tile)
#define PIPE_TILE_BYTES (PIPE_ROW * 4)           // 16 KiB
#define PIPE_STAGES 8                            // ring depth
#define PIPE_CONSUMERS 4                         // consumer warps
#define PIPE_THREADS (32 * (1 + PIPE_CONSUMERS))  // 160
#define PIPE_SMEM_BYTES (PIPE_STAGES * PIPE_TILE_BYTES)

static_assert(PIPE_STAGES % PIPE_CONSUMERS == 0,
              "each consumer owns whole ring slots");
static_assert(PIPE_ROW % (32 * 4 * 8) == 0, "row = lanes x float4 x unroll");

extern "C" __global__ void __launch_bounds__(PIPE_THREADS, 1)
    pipeline(const float* __restrict__ in, float* __restrict__ out,
             float* __restrict__ rowsum, int rows, float scale, float bias) {
  iket::Warp tr;
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ __align__(8) uint64_t full[PIPE_STAGES];
  __shared__ __align__(8) uint64_t empty[PIPE_STAGES];

  // The warp index through a shuffle, so the compiler knows every lane has
  // the same one and the role branches below are warp-uniform to it. With
  // threadIdx.x / 32 alone, ptxas (CUDA 13.0) puts divergence checks and
  // convergence regions inside them, in both builds.
  const int warp = __shfl_sync(0xffffffffu, (int)(threadIdx.x / 32), 0);
  const int lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int s = 0; s < PIPE_STAGES; ++s) {
      hopper::mbar_init(&full[s], 1);   // the producer's arrive.expect_tx
      hopper::mbar_init(&empty[s], 1);  // the owning consumer's arrive
    }
    hopper::mbar_fence_init();
  }
  __syncthreads();

  // Rows of this CTA: blockIdx.x + i * gridDim.x for i < local.
  const int local =
      rows > (int)blockIdx.x
          ? (rows - (int)blockIdx.x + (int)gridDim.x - 1) / (int)gridDim.x
          : 0;

  if (warp == 0) {
    tr.set_role(iket_id::producer);
#pragma unroll 1
    for (int i = 0; i < local; ++i) {
      const int s = i % PIPE_STAGES;
      const uint32_t round = (uint32_t)(i / PIPE_STAGES);
      const long long row = (long long)blockIdx.x + (long long)i * gridDim.x;
      tr.range_push(iket_id::wait_free, s);
      // The first round finds every slot free (parity of the phase before 0).
      hopper::mbar_wait(&empty[s], (round & 1u) ^ 1u, 0x100u + s);
      __syncwarp();
      tr.range_next(iket_id::issue, s);
      if (lane == 0) {
        hopper::mbar_arrive_expect_tx(&full[s], PIPE_TILE_BYTES);
        hopper::bulk_g2s(smem + (size_t)s * PIPE_TILE_BYTES,
                         in + row * PIPE_ROW, PIPE_TILE_BYTES, &full[s]);
      }
      __syncwarp();
      tr.range_pop();
    }
  } else {
    tr.set_role(iket_id::consumer);
    const int c = warp - 1;
#pragma unroll 1
    for (int i = c; i < local; i += PIPE_CONSUMERS) {
      const int s = i % PIPE_STAGES;
      const uint32_t round = (uint32_t)(i / PIPE_STAGES);
      const long long row = (long long)blockIdx.x + (long long)i * gridDim.x;
      tr.range_push(iket_id::wait_data, s);
      hopper::mbar_wait(&full[s], round & 1u, 0x200u + s);
      __syncwarp();
      tr.range_next(iket_id::compute, s);
      const float4* src =
          reinterpret_cast<const float4*>(smem + (size_t)s * PIPE_TILE_BYTES);
      float4* dst = reinterpret_cast<float4*>(out + row * PIPE_ROW);
      float sum = 0.f;
#pragma unroll 1
      for (int j0 = 0; j0 < PIPE_ROW / 4; j0 += 32 * 8) {
        float4 v[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) v[u] = src[j0 + u * 32 + lane];
#pragma unroll
        for (int u = 0; u < 8; ++u) {
          float4 o;
          o.x = fmaf(v[u].x, scale, bias);
          o.y = fmaf(v[u].y, scale, bias);
          o.z = fmaf(v[u].z, scale, bias);
          o.w = fmaf(v[u].w, scale, bias);
          sum += (o.x + o.y) + (o.z + o.w);
          __stcs(dst + j0 + u * 32 + lane, o);
        }
      }
      // Every lane's shared loads have returned (their values are used
      // above); hand the slot back to the producer.
      __syncwarp();
      if (lane == 0) hopper::mbar_arrive(&empty[s]);
      tr.range_next(iket_id::epilogue, s);
#pragma unroll
      for (int off = 16; off > 0; off >>= 1)
        sum += __shfl_xor_sync(0xffffffffu, sum, off);
      if (lane == 0) rowsum[row] = sum;
      tr.range_pop();
    }
  }
}
