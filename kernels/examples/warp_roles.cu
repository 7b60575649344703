// warp_roles: the seed document's two-role example, on a grid that fills the
// GPU. In each CTA of 64 threads, warp 0 (producer) copies 256 floats of its
// chunk to shared memory, both warps meet at a CTA barrier, and warp 1
// (consumer) writes out[i] = in[i] * 2 + 1.
//
// Launch: grid = (chunks), block = (64); arguments (const float* in,
// float* out); in and out hold chunks * 256 floats.
#include "iket.cuh"

#define WARP_ROLES_NAMES(X)                                          \
  X(ROLE, producer)                                                  \
  X(ROLE, consumer)                                                  \
  X(MARK, kernel_start)                                              \
  X(RANGE, producer_load)                                            \
  X(RANGE, wait_for_data)                                            \
  X(RANGE, consumer_compute)
IKET_NAMES(WARP_ROLES_NAMES)

#define WARP_ROLES_N 256
#define WARP_ROLES_ELEMS_PER_LANE 8

extern "C" __global__ void __launch_bounds__(64)
    warp_roles(const float* __restrict__ in, float* __restrict__ out) {
  iket::Warp tr;
  __shared__ float tile[WARP_ROLES_N];
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const float* src = in + static_cast<unsigned long long>(blockIdx.x) * WARP_ROLES_N;
  float* dst = out + static_cast<unsigned long long>(blockIdx.x) * WARP_ROLES_N;

  tr.mark(iket_id::kernel_start, warp);
  if (warp == 0) {
    tr.set_role(iket_id::producer);
    tr.range_push(iket_id::producer_load);
#pragma unroll 1
    for (int i = 0; i < WARP_ROLES_ELEMS_PER_LANE; ++i) {
      tile[i * 32 + lane] = src[i * 32 + lane];
    }
    tr.range_pop(iket_id::producer_load);
  } else {
    tr.set_role(iket_id::consumer);
  }

  tr.range_push(iket_id::wait_for_data);
  __syncthreads();
  tr.range_pop(iket_id::wait_for_data);

  if (warp == 1) {
    tr.range_push(iket_id::consumer_compute);
#pragma unroll 1
    for (int i = 0; i < WARP_ROLES_ELEMS_PER_LANE; ++i) {
      const int index = i * 32 + lane;
      dst[index] = tile[index] * 2.0f + 1.0f;
    }
    tr.range_pop(iket_id::consumer_compute);
  }
}

// warp_roles_reference computes the same output plainly, for specs' reference
// checks (kernels/examples/warp_roles.yaml).
extern "C" __global__ void warp_roles_reference(const float* __restrict__ in,
                                                float* __restrict__ out) {
  const unsigned long long base =
      static_cast<unsigned long long>(blockIdx.x) * WARP_ROLES_N;
  for (int i = threadIdx.x; i < WARP_ROLES_N; i += blockDim.x) {
    out[base + i] = in[base + i] * 2.0f + 1.0f;
  }
}
