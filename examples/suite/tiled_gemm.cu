// tiled_gemm.cu: a non-persistent tiled GEMM with many CTAs, written the
// plain way: C = A * B (bf16 in, fp32 out), one CTA of four warps per
// 64x64 tile of C; per 32-wide step of K every thread loads its share of
// the A and B tiles into shared memory, then each warp multiplies its 32x32
// quarter with tensor cores (WMMA). Each step's load and mma are a
// range_push / range_pop with the step as the payload.
//
//   tiled_gemm [--size N] [--launches N]
//
// Prints the mean time per launch (its own CUDA events, after one untimed
// launch) and exits 1 when a checked element is wrong, 2 on a CUDA error.
#include <cuda_bf16.h>
#include <mma.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "iket.cuh"

#define GEMM_NAMES(X) X(ROLE, worker) X(RANGE, load) X(RANGE, mma) X(RANGE, store)
IKET_NAMES(GEMM_NAMES)

#define CK(x)                                                                                         \
  do {                                                                                                \
    cudaError_t e_ = (x);                                                                             \
    if (e_ != cudaSuccess) {                                                                          \
      fprintf(stderr, "tiled_gemm: %s at %s:%d: %s\n", #x, __FILE__, __LINE__, cudaGetErrorString(e_)); \
      exit(2);                                                                                        \
    }                                                                                                 \
  } while (0)

using namespace nvcuda;
constexpr int kTile = 64, kStep = 32, kThreads = 128;

__global__ void __launch_bounds__(kThreads) tiled_gemm(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                                                      float* __restrict__ C, int n) {
  iket::Warp tr;
  __shared__ __nv_bfloat16 as[kTile][kStep], bs[kStep][kTile];
  const int warp = threadIdx.x / 32, wr = warp / 2, wc = warp % 2;
  const int row0 = blockIdx.y * kTile, col0 = blockIdx.x * kTile;
  tr.set_role(iket_id::worker);
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.f);
  for (int k0 = 0; k0 < n; k0 += kStep) {
    tr.range_push(iket_id::load, k0 / kStep);
    for (int i = threadIdx.x; i < kTile * kStep; i += kThreads) {
      as[i / kStep][i % kStep] = A[static_cast<size_t>(row0 + i / kStep) * n + k0 + i % kStep];
      bs[i / kTile][i % kTile] = B[static_cast<size_t>(k0 + i / kTile) * n + col0 + i % kTile];
    }
    __syncthreads();
    tr.range_pop();
    tr.range_push(iket_id::mma, k0 / kStep);
    for (int kk = 0; kk < kStep; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b[2];
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a[i], &as[wr * 32 + i * 16][kk], kStep);
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], &bs[kk][wc * 32 + j * 16], kTile);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();
    tr.range_pop();
  }
  tr.range_push(iket_id::store);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(&C[static_cast<size_t>(row0 + wr * 32 + i * 16) * n + col0 + wc * 32 + j * 16], acc[i][j], n,
                              wmma::mem_row_major);
  tr.range_pop();
}

int main(int argc, char** argv) {
  int n = 4096, launches = 10;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--size") && i + 1 < argc) n = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--launches") && i + 1 < argc) launches = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: tiled_gemm [--size N] [--launches N]\n");
      return 2;
    }
  }
  if (n <= 0 || n % kTile != 0) {
    fprintf(stderr, "tiled_gemm: --size must be a multiple of %d\n", kTile);
    return 2;
  }
  const size_t nn = static_cast<size_t>(n) * n;
  std::vector<__nv_bfloat16> ha(nn), hb(nn);
  std::vector<float> fa(nn), fb(nn);
  for (size_t i = 0; i < nn; ++i) {
    fa[i] = static_cast<float>(static_cast<int>((i * 2654435761u >> 11) % 17) - 8) / 8.f;
    fb[i] = static_cast<float>(static_cast<int>((i * 40503u >> 5) % 13) - 6) / 8.f;
    ha[i] = __float2bfloat16(fa[i]);
    hb[i] = __float2bfloat16(fb[i]);
  }
  __nv_bfloat16 *A, *B;
  float* C;
  CK(cudaMalloc(&A, nn * sizeof(__nv_bfloat16)));
  CK(cudaMalloc(&B, nn * sizeof(__nv_bfloat16)));
  CK(cudaMalloc(&C, nn * sizeof(float)));
  CK(cudaMemcpy(A, ha.data(), nn * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(B, hb.data(), nn * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice));
  const dim3 grid(n / kTile, n / kTile);
  // One launch before the clock starts: CUDA loads a kernel's module at its
  // first use (CUDA_MODULE_LOADING=LAZY, the default), which would otherwise
  // fall inside the timed launches, and the caches warm.
  tiled_gemm<<<grid, kThreads>>>(A, B, C, n);
  CK(cudaDeviceSynchronize());
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaEventRecord(e0));
  for (int i = 0; i < launches; ++i) tiled_gemm<<<grid, kThreads>>>(A, B, C, n);
  CK(cudaGetLastError());
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  std::vector<float> hc(nn);
  CK(cudaMemcpy(hc.data(), C, nn * sizeof(float), cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int t = 0; t < 256; ++t) {  // the inputs are exact in bf16: sums of exact products
    const size_t r = (t * 7919u) % n, c = (t * 104729u) % n;
    double want = 0;
    for (int k = 0; k < n; ++k) want += static_cast<double>(fa[r * n + k]) * fb[static_cast<size_t>(k) * n + c];
    if (std::fabs(hc[r * n + c] - want) > 1e-3 * std::fabs(want) + 1e-2) ++bad;
  }
  printf("tiled_gemm: %d launches at %d^3: %.2f us per launch (%.1f TFLOP/s), %s\n", launches, n, 1000.0 * ms / launches,
         2.0 * n * n * n * launches / (ms * 1e9), bad ? "WRONG" : "correct");
  return bad ? 1 : 0;
}
