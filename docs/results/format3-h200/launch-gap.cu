// launch-gap.cu: the harness of launch-gap.txt ("ring2"), examples/suite/ring.cu's kernel under
// iket run's launch sequence without iket. From the repository root:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a [-I<variant header dir> -DIKET_ENABLE=1] \
//     -Ikernels/include -o ring2 docs/results/format3-h200/launch-gap.cu
// iket run's launch sequence in-process, each step switchable by the environment:
// BUFCAP (records per warp; 0: no buffers), ALLOC_EACH, MEMSET_EACH, STATE_EACH, FLUSH (bytes, default 256 MiB; 0 none),
// N (launches, default 21; the first not counted). Prints the median us of the kernel between CUDA events.
#define main ring_main
#include "../../../examples/suite/ring.cu"
#undef main
#include <algorithm>
#include <chrono>
#include <unistd.h>
static long envl(const char* k, long d) { const char* e = getenv(k); return e ? atol(e) : d; }
int main() {
  const int ctas = 1056, tiles = 32, wpc = 3;
  const long cap = envl("BUFCAP", 0), alloc_each = envl("ALLOC_EACH", 0), memset_each = envl("MEMSET_EACH", 0),
             state_each = envl("STATE_EACH", 0), copy_each = envl("COPY_EACH", 0), sleep_us = envl("SLEEP_US", 0), idle_us = envl("IDLE_US", 0), warm_us = envl("WARM_US", 0), flush = envl("FLUSH", 256l << 20), n = envl("N", 21);
  const size_t nin = static_cast<size_t>(ctas) * tiles * kTile;
  std::vector<float> h(nin);
  for (size_t i = 0; i < nin; ++i) h[i] = static_cast<float>((i * 2654435761u >> 9) % 1000) / 1000.f;
  float *in, *out;
  CK(cudaMalloc(&in, nin * sizeof(float)));
  CK(cudaMalloc(&out, ctas * sizeof(float)));
  CK(cudaMemcpy(in, h.data(), nin * sizeof(float), cudaMemcpyHostToDevice));
  char* fb = nullptr;
  if (flush) CK(cudaMalloc(&fb, flush));
  const size_t bytes = cap ? static_cast<size_t>(ctas) * wpc * (64ull + 8ull * (cap + 1)) : 0;
  char* b = nullptr;
  auto alloc = [&]() { CK(cudaMalloc(&b, bytes)); CK(cudaMemset(b, 0, bytes)); };
  auto state = [&](bool on) {
#if defined(IKET_ENABLE) && IKET_ENABLE
    iket::State s = {on ? reinterpret_cast<unsigned long long>(b) : 0ull, on ? (unsigned)cap : 0u, 0xffffffffu, on ? (unsigned)wpc : 1u, IKET_FORMAT_VERSION, 0u, 0u};
    CK(cudaMemcpyToSymbol(iket_state, &s, sizeof s));
#else
    (void)on;
#endif
  };
  if (cap && !alloc_each) { alloc(); state(true); }
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (long i = 0; i < n; ++i) {
    if (cap && alloc_each) { alloc(); state(true); }
    else if (cap && memset_each) CK(cudaMemset(b, 0, bytes));
    if (cap && state_each && !alloc_each) state(true);
    if (flush && warm_us) {  // keep the GPU busy with the flush for warm_us before the launch
      const auto w0 = std::chrono::steady_clock::now();
      while (std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - w0).count() < warm_us) {
        CK(cudaMemset(fb, static_cast<int>(i & 0xff), flush));
        CK(cudaDeviceSynchronize());
      }
    }
    if (idle_us) { CK(cudaDeviceSynchronize()); usleep(idle_us); }  // the GPU idle right before the flush
    if (flush) CK(cudaMemset(fb, static_cast<int>(i & 0xff), flush));
    CK(cudaDeviceSynchronize());
    CK(cudaEventRecord(e0));
    ring<false><<<ctas, 32 * (1 + kConsumers)>>>(in, out, tiles);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaGetLastError());
    float t = 0;
    CK(cudaEventElapsedTime(&t, e0, e1));
    if (i > 0) ms.push_back(t);
    if (sleep_us) usleep(sleep_us);
    if (cap && copy_each) {  // 1: straight into pageable memory; 2: through a kept pinned 32 MiB buffer
      static char* stage = nullptr;
      char* hb = static_cast<char*>(malloc(bytes));
      if (copy_each == 1) CK(cudaMemcpy(hb, b, bytes, cudaMemcpyDeviceToHost));
      else {
        const size_t S = 32u << 20;
        if (!stage) CK(cudaHostAlloc(&stage, S, cudaHostAllocPortable));
        for (size_t o = 0; o < bytes; o += S) { size_t k = std::min(S, bytes - o); CK(cudaMemcpy(stage, b + o, k, cudaMemcpyDeviceToHost)); memcpy(hb + o, stage, k); }
      }
      free(hb);
    }
    if (cap && alloc_each) { if (state_each) state(false); CK(cudaFree(b)); }
    else if (cap && state_each) state(false);
  }
  std::sort(ms.begin(), ms.end());
  printf("ring2: %.2f us per launch (median of %zu)\n", 1000.0 * ms[ms.size() / 2], ms.size());
  return 0;
}
