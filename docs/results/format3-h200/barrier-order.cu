#include <cstdio>
#include <cstdlib>
#include "iket.cuh"
#define BARRIER_NAMES(X) X(RANGE, busy) X(RANGE, wait)
IKET_NAMES(BARRIER_NAMES)
__global__ void barrier_order(long long spin, int mode) {
  iket::Warp tr;
  if (threadIdx.x / 32 == 0) {
    tr.range_push(iket_id::busy);
    const long long t0 = clock64();
    while (clock64() - t0 < spin) {
    }
    tr.range_pop();
  }
  tr.range_push(iket_id::wait);
  if (mode == 0) __syncthreads();
  else if (mode == 1) asm volatile("bar.sync 1, %0;" ::"r"(blockDim.x) : "memory");
  else if (mode == 2) asm volatile("barrier.sync 0;" ::: "memory");
  else asm volatile("bar.sync 0;" ::: "memory");
  tr.range_pop();
}
int main() {
  for (int mode = 0; mode < 4; ++mode) {
    barrier_order<<<4, 64>>>(200000, mode);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) { printf("mode %d: %s\n", mode, cudaGetErrorString(e)); return 1; }
  }
  printf("ok\n");
  return 0;
}
