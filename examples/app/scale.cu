// scale.cu: a second translation unit with a kernel of its own, so that the
// application is a program of several .cu files that each include iket.cuh.
#include "names.cuh"

__global__ void scale_kernel(float* x, int n, float a) {
  iket::Warp tr;
  tr.range_push(iket_id::scale);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x[i] *= a;
  tr.range_pop();
}

void scale(float* x, int n, float a, cudaStream_t s) { scale_kernel<<<32, 256, 0, s>>>(x, n, a); }
