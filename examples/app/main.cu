// main.cu: a minimal CUDA application with a warp-specialized kernel, as a
// user writes one: cudaMalloc, <<<>>> (or cudaLaunchKernelEx, or a CUDA
// graph), its own timing, its own check. Build it with -DIKET_ENABLE=1 and
// `iket run -- ./app` traces it; build it without and it is the baseline.
//
//   app [--ctas N] [--tiles N] [--launches N] [--ex] [--graph] [--hang] [--fault]
//
// It prints the mean time of its launches (after one untimed launch, but
// with --graph) and exits 1 when a result is wrong, 2 on a CUDA error.
// --hang launches the kernel with the producer stopping one tile short (the
// consumers wait for ever: a deadlock to diagnose); --fault gives it an
// output pointer no allocation holds.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "pipeline.cuh"

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      fprintf(stderr, "app: %s at %s:%d: %s\n", #x, __FILE__, __LINE__, cudaGetErrorString(e_)); \
      exit(2);                                                                         \
    }                                                                                  \
  } while (0)

void scale(float* x, int n, float a, cudaStream_t s);  // scale.cu

// zero_out clears the output: a kernel without an iket::Warp in the same
// file as the instrumented one (so in its module), as programs have.
__global__ void zero_out(float* p, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] = 0.f;
}

constexpr int kStages = 4, kConsumers = 2;

int main(int argc, char** argv) {
  int ctas = 264, tiles = 64, launches = 5;
  bool ex = false, graph = false, hang = false, fault = false;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--ctas") && i + 1 < argc) ctas = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--tiles") && i + 1 < argc) tiles = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--launches") && i + 1 < argc) launches = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--ex")) ex = true;
    else if (!strcmp(argv[i], "--graph")) graph = true;
    else if (!strcmp(argv[i], "--hang")) hang = true;
    else if (!strcmp(argv[i], "--fault")) fault = true;
    else {
      fprintf(stderr, "usage: app [--ctas N] [--tiles N] [--launches N] [--ex] [--graph] [--hang] [--fault]\n");
      return 2;
    }
  }
  const size_t n = static_cast<size_t>(ctas) * tiles * app::TILE;
  std::vector<float> h(n);
  unsigned r = 12345;
  for (auto& v : h) {
    r = r * 1664525u + 1013904223u;
    v = static_cast<float>((r >> 9) % 1000) / 1000.f;  // exact in float sums of a few thousand
  }
  float *in, *out;
  CK(cudaMalloc(&in, n * sizeof(float)));
  CK(cudaMalloc(&out, ctas * sizeof(float)));
  CK(cudaMemcpy(in, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  zero_out<<<1, 256, 0, st>>>(out, ctas);
  CK(cudaGetLastError());
  auto kernel = app::pipeline<kStages, kConsumers>;
  const dim3 grid(ctas), block(32 * (1 + kConsumers));
  if (hang || fault) {
    // One launch that does not complete: the producer has one tile less to
    // give than the consumers take, or the output is no allocation.
    float* o = fault ? reinterpret_cast<float*>(16) : out;
    kernel<<<grid, block, 0, st>>>(in, o, hang ? -tiles : tiles);
    CK(cudaStreamSynchronize(st));
    return 0;
  }
  auto launch = [&]() {
    if (ex) {
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = grid;
      cfg.blockDim = block;
      cfg.stream = st;
      CK(cudaLaunchKernelEx(&cfg, kernel, (const float*)in, out, tiles));
    } else {
      kernel<<<grid, block, 0, st>>>(in, out, tiles);
      CK(cudaGetLastError());
    }
  };
  scale(in, static_cast<int>(n), 1.0f, st);  // the other translation unit's kernel
  // One launch before the clock starts: CUDA loads a kernel's module at its
  // first use (CUDA_MODULE_LOADING=LAZY, the default), which would otherwise
  // fall inside the timed launches, and the caches warm. Not with --graph,
  // whose launches are all the graph's.
  if (!graph) {
    launch();
    CK(cudaStreamSynchronize(st));
  }
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaEventRecord(e0, st));
  if (graph) {
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < launches; ++i) launch();
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiateWithFlags(&ge, g, 0));
    CK(cudaGraphLaunch(ge, st));
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
  } else {
    for (int i = 0; i < launches; ++i) launch();
  }
  CK(cudaEventRecord(e1, st));
  CK(cudaStreamSynchronize(st));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  std::vector<float> got(ctas);
  CK(cudaMemcpy(got.data(), out, ctas * sizeof(float), cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int c = 0; c < ctas; ++c) {
    double want = 0;
    for (size_t i = 0; i < static_cast<size_t>(tiles) * app::TILE; ++i) want += h[c * static_cast<size_t>(tiles) * app::TILE + i];
    if (std::abs(got[c] - want) > 1e-3 * std::abs(want) + 1e-3) {
      if (bad++ < 3) fprintf(stderr, "app: CTA %d: %g, want %g\n", c, got[c], want);
    }
  }
  printf("app: %d launches of pipeline<%d,%d> on %d CTAs x %d tiles: %.2f us per launch, %s\n", launches, kStages,
         kConsumers, ctas, tiles, 1000.0 * ms / launches, bad ? "WRONG" : "correct");
  CK(cudaFree(in));
  CK(cudaFree(out));
  return bad ? 1 : 0;
}
