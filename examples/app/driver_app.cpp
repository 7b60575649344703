// driver_app.cpp: the example kernel launched through the CUDA driver API
// from a cubin (entry.cu), as frameworks that load modules themselves do:
//
//   driver_app CUBIN [--library] [--launches N]
//
// --library loads it with cuLibraryLoadFromFile (context-independent
// loading, CUDA 12) and launches the CUkernel; otherwise cuModuleLoad and
// cuModuleGetFunction. Build: g++ -O2 -I/usr/local/cuda/include -o
// driver_app examples/app/driver_app.cpp -lcuda. Exits 1 on a wrong result,
// 2 on a CUDA error.
#include <cuda.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CU(x)                                                                   \
  do {                                                                          \
    CUresult r_ = (x);                                                          \
    if (r_ != CUDA_SUCCESS) {                                                   \
      const char* s_ = "?";                                                     \
      cuGetErrorName(r_, &s_);                                                  \
      fprintf(stderr, "driver_app: %s at line %d: %s\n", #x, __LINE__, s_);     \
      exit(2);                                                                  \
    }                                                                           \
  } while (0)

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: driver_app CUBIN [--library] [--launches N]\n");
    return 2;
  }
  bool library = false;
  int launches = 5, ctas = 264, tiles = 64;
  for (int i = 2; i < argc; ++i) {
    if (!strcmp(argv[i], "--library")) library = true;
    else if (!strcmp(argv[i], "--launches") && i + 1 < argc) launches = atoi(argv[++i]);
  }
  const char* entry = "_ZN3app8pipelineILi4ELi2EEEvPKfPfi";  // app::pipeline<4, 2>
  CU(cuInit(0));
  CUdevice dev;
  CU(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuCtxSetCurrent(ctx));
  CUfunction f;
#if CUDA_VERSION >= 12000
  CUlibrary lib = nullptr;
  if (library) {
    CUkernel k;
    CU(cuLibraryLoadFromFile(&lib, argv[1], nullptr, nullptr, 0, nullptr, nullptr, 0));
    CU(cuLibraryGetKernel(&k, lib, entry));
    f = reinterpret_cast<CUfunction>(k);  // cuLaunchKernel takes a CUkernel
  } else
#endif
  {
    if (library) {
      fprintf(stderr, "driver_app: --library needs CUDA 12\n");
      return 2;
    }
    CUmodule m;
    CU(cuModuleLoad(&m, argv[1]));
    CU(cuModuleGetFunction(&f, m, entry));
  }
  const size_t n = static_cast<size_t>(ctas) * tiles * 1024;
  std::vector<float> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = static_cast<float>((i * 2654435761u >> 7) % 1000) / 1000.f;
  CUdeviceptr in, out;
  CU(cuMemAlloc(&in, n * sizeof(float)));
  CU(cuMemAlloc(&out, ctas * sizeof(float)));
  CU(cuMemcpyHtoD(in, h.data(), n * sizeof(float)));
  void* args[] = {&in, &out, &tiles};
  for (int i = 0; i < launches; ++i) CU(cuLaunchKernel(f, ctas, 1, 1, 96, 1, 1, 0, nullptr, args, nullptr));
  CU(cuCtxSynchronize());
  std::vector<float> got(ctas);
  CU(cuMemcpyDtoH(got.data(), out, ctas * sizeof(float)));
  int bad = 0;
  for (int c = 0; c < ctas; ++c) {
    double want = 0;
    for (size_t i = 0; i < static_cast<size_t>(tiles) * 1024; ++i) want += h[c * static_cast<size_t>(tiles) * 1024 + i];
    if (std::fabs(got[c] - want) > 1e-3 * std::fabs(want) + 1e-3) ++bad;
  }
  printf("driver_app: %d launches (%s): %s\n", launches, library ? "cuLibrary" : "cuModule", bad ? "WRONG" : "correct");
  return bad ? 1 : 0;
}
