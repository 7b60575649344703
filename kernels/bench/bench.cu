// bench: a plain CUDA program that checks and times the Hopper kernels of
// kernels/hopper (gemm.cu, pipeline.cu) and the event-cost loop of
// eventcost.cu. It knows nothing of iket's buffers: tracing is done from
// outside, by `iket run -- bench run ...` (docs/OVERHEAD.md).
//
// Each kernel build is a cubin, loaded through the driver API
// (cuModuleLoadData) from --modules DIR as KERNEL_BUILD.cubin: BUILD is
// "off" (built without IKET_ENABLE), "on" (-DIKET_ENABLE=1) or "dbg"
// (bounded mbarrier waits, -DHOPPER_SPIN_LIMIT). scripts/overhead.sh builds
// them and runs the steps.
//
//   bench check [--kernels all|pipeline|gemm] --modules DIR [--quick]
//       every build (dbg, off, on) against references, on outputs poisoned
//       with NaN: gemm against an fp64 sample, pipeline every element and
//       row sum on the device and 32 rows on the host in double. The "on"
//       build runs as it runs in any program iket does not trace: its
//       events execute, with no buffers to record into.
//   bench time [--kernels ...] --modules DIR --out DIR [--rounds N]
//              [--warmup N] [--cublas FILE] [--control DIR] [--quick]
//       the uninstrumented build against a control (the same cubin loaded a
//       second time, or --control DIR's uninstrumented cubin, so a change to
//       a kernel is timed against the current one in the same rounds), in
//       rounds that alternate which goes first; CUDA events around one
//       launch, L2 flushed before each call outside the events. Gemm beside
//       cuBLAS (--cublas: torch_ref.py time's file), pipeline beside a
//       device-to-device copy of the same bytes. Writes OUT/table-time.txt
//       and OUT/bench-time.json.
//   bench run --kernel gemm|pipeline --modules DIR [--build off|on|dbg]
//             [--size N | --size MxNxK] [--launches N] [--check all|ends|none]
//             [--no-flush] [--dump PREFIX]
//       launches the kernel N times (default 21) on real data, each launch
//       on poisoned outputs after an L2 flush (256 MiB written, unless
//       --no-flush), waits for it, and checks its result (--check all, the
//       default; ends: the first and last launch only). Gemm --size is the
//       shape (default 4096: 4096x4096x4096), pipeline's the rows (default
//       131072). --dump PREFIX (gemm) writes A, B and the last launch's C
//       as PREFIX.a.bf16, PREFIX.b.bf16, PREFIX.c_BUILD.bf16 for
//       torch_ref.py check. It times nothing itself: under
//       `iket run --launch 1-20 --baseline 'bench run ... --build off' --
//        bench run ... --build on` iket traces and times launches 1..20 of
//       both builds and pairs them.
//   bench eventcost --modules DIR --out DIR [--case latency|throughput|all]
//                   [--quick]
//       cycles per event: eventcost.cu's ev_loop from both builds, one warp
//       (latency) and 64 warps per SM (throughput), %clock64 in the kernel.
//       The instrumented loop costs what tracing costs only while its
//       launches are traced (`iket run --kernel '^ev_loop$' --launch all
//       --capacity ITERS+8 -- bench eventcost ...`); run alone, its events
//       execute with no buffers to record into. Writes OUT/eventcost-CASE.txt and
//       OUT/bench-eventcost-CASE.json.
//
// Exit codes: 0 every check passed; 1 a check failed (wrong results; being
// slower is never a failure); 2 a CUDA call failed; 3 a kernel did not
// finish within its watchdog limit; 64 bad usage.
//
// Build: nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a
//        -o bench kernels/bench/bench.cu -lcuda
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

// ---- errors -----------------------------------------------------------------

static void die_rt(cudaError_t e, const char* expr, const char* file, int line) {
  fprintf(stderr, "FAIL: %s at %s:%d: %s (%s)\n", expr, file, line,
          cudaGetErrorName(e), cudaGetErrorString(e));
  fflush(stderr);
  exit(2);
}
static void die_drv(CUresult r, const char* expr, const char* file, int line) {
  const char* name = "?";
  const char* str = "?";
  cuGetErrorName(r, &name);
  cuGetErrorString(r, &str);
  fprintf(stderr, "FAIL: %s at %s:%d: %s (%s)\n", expr, file, line, name, str);
  fflush(stderr);
  exit(2);
}
#define CK(x)                                         \
  do {                                                \
    cudaError_t e_ = (x);                             \
    if (e_ != cudaSuccess) die_rt(e_, #x, __FILE__, __LINE__); \
  } while (0)
#define CU(x)                                         \
  do {                                                \
    CUresult r_ = (x);                                \
    if (r_ != CUDA_SUCCESS) die_drv(r_, #x, __FILE__, __LINE__); \
  } while (0)

static double now_s() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// sync_watch waits for the stream like cudaStreamSynchronize but gives up
// after limit_s: a hung kernel ends the process (which ends the kernel) with
// exit code 3 instead of hanging the script.
static void sync_watch(cudaStream_t st, double limit_s, const char* what) {
  const double t0 = now_s();
  for (;;) {
    cudaError_t e = cudaStreamQuery(st);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) {
      fprintf(stderr, "FAIL: %s: %s (%s)\n", what, cudaGetErrorName(e),
              cudaGetErrorString(e));
      fflush(stderr);
      exit(2);
    }
    if (now_s() - t0 > limit_s) {
      fprintf(stderr,
              "HANG: %s still running after %.0f s; exiting (the process exit "
              "ends the kernel)\n",
              what, limit_s);
      fflush(stderr);
      _exit(3);
    }
    usleep(100);
  }
}

// ---- options ----------------------------------------------------------------

struct Options {
  std::string step;
  std::string modules = ".";
  std::string out = "out";
  std::string cublas;   // "size median_us" lines from torch_ref.py time
  std::string control;  // --control DIR: the control's cubins ("": --modules)
  // control_dir is where time's control cubin comes from.
  std::string control_dir() const { return control.empty() ? modules : control; }
  int rounds = 9;
  int warmup = 3;
  bool quick = false;
  std::string kernels = "all";  // check, time: --kernels all|pipeline|gemm
  bool want(const char* k) const { return kernels == "all" || kernels == k; }
  // run
  std::string kernel;        // --kernel gemm|pipeline
  std::string build = "off"; // --build: the cubin KERNEL_BUILD.cubin
  std::string size;          // --size N or MxNxK ("": the kernel's default)
  int launches = 21;
  std::string check = "all";  // all | ends | none
  bool flush = true;
  std::string dump;  // --dump PREFIX (gemm)
  // eventcost
  std::string ev_case = "all";  // latency | throughput | all
  // module is the path of KERNEL's cubin of the given build.
  std::string module(const char* k, const std::string& b) const {
    return modules + "/" + k + "_" + b + ".cubin";
  }
};

static int usage() {
  fprintf(stderr,
          "usage: bench check [--kernels all|pipeline|gemm] --modules DIR [--quick]\n"
          "       bench time [--kernels all|pipeline|gemm] --modules DIR --out DIR\n"
          "                  [--rounds N] [--warmup N] [--cublas FILE] [--control DIR] [--quick]\n"
          "       bench run --kernel gemm|pipeline --modules DIR [--build off|on|dbg]\n"
          "                 [--size N|MxNxK] [--launches N] [--check all|ends|none]\n"
          "                 [--no-flush] [--dump PREFIX]\n"
          "       bench eventcost --modules DIR --out DIR [--case latency|throughput|all] [--quick]\n");
  return 64;
}

// ---- small device helpers (runtime API, this file's own module) --------------

__device__ __forceinline__ uint32_t hash32(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return (uint32_t)x;
}
// Uniform in [-1, 1): never all zeros, different per seed.
__global__ void fill_f32(float* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = (float)(hash32(i * 0x9e3779b97f4a7c15ull + seed) >> 8) *
               (2.0f / 16777216.0f) -
           1.0f;
}
__global__ void fill_bf16(__nv_bfloat16* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = __float2bfloat16((float)(hash32(i * 0x9e3779b97f4a7c15ull + seed) >>
                                    8) *
                                (2.0f / 16777216.0f) -
                            1.0f);
}

// Checks every element of the pipeline's output against the same fmaf, and
// every row sum against a double-precision sum. bad[0] counts bad elements,
// bad[1] bad row sums; first[0], first[1] are the smallest bad indices.
__global__ void pipeline_check(const float* in, const float* out,
                               const float* rowsum, long long rows, int cols,
                               float scale, float bias,
                               unsigned long long* bad,
                               unsigned long long* first) {
  __shared__ double part[256];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    double s = 0.0;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
      const size_t i = (size_t)r * cols + c;
      const float want = fmaf(in[i], scale, bias);
      const float got = out[i];
      if (!(fabsf(got - want) <= 1e-6f * fabsf(want))) {
        atomicAdd(&bad[0], 1ull);
        atomicMin(&first[0], (unsigned long long)i);
      }
      s += (double)want;
    }
    part[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
      if ((int)threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      const double want = part[0];
      const double got = rowsum[r];
      if (!(fabs(got - want) <= 1e-4 * cols + 1e-5 * fabs(want))) {
        atomicAdd(&bad[1], 1ull);
        atomicMin(&first[1], (unsigned long long)r);
      }
    }
    __syncthreads();
  }
}

// ---- modules ----------------------------------------------------------------

struct Module {
  CUmodule mod = nullptr;
  std::string path;

  void load(const std::string& p) {
    path = p;
    FILE* f = fopen(p.c_str(), "rb");
    if (!f) {
      fprintf(stderr, "FAIL: open module %s: %s\n", p.c_str(), strerror(errno));
      exit(2);
    }
    std::vector<char> buf;
    char tmp[1 << 16];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) buf.insert(buf.end(), tmp, tmp + n);
    fclose(f);
    CUresult r = cuModuleLoadData(&mod, buf.data());
    if (r != CUDA_SUCCESS) {
      fprintf(stderr, "FAIL: load module %s:\n", p.c_str());
      die_drv(r, "cuModuleLoadData", __FILE__, __LINE__);
    }
  }
  CUfunction fn(const char* name) const {
    CUfunction f;
    CUresult r = cuModuleGetFunction(&f, mod, name);
    if (r != CUDA_SUCCESS) {
      fprintf(stderr, "FAIL: kernel %s in %s:\n", name, path.c_str());
      die_drv(r, "cuModuleGetFunction", __FILE__, __LINE__);
    }
    return f;
  }
};

// ---- timing -----------------------------------------------------------------

struct Samples {
  std::vector<double> us;
  double median() const {
    std::vector<double> v = us;
    std::sort(v.begin(), v.end());
    if (v.empty()) return 0;
    return v.size() % 2 ? v[v.size() / 2]
                        : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  }
  double min() const { return us.empty() ? 0 : *std::min_element(us.begin(), us.end()); }
  double max() const { return us.empty() ? 0 : *std::max_element(us.begin(), us.end()); }
};

struct Timer {
  cudaStream_t st;
  cudaEvent_t a, b;
  void* flush_buf = nullptr;
  size_t flush_bytes = 256ull << 20;
  double limit_s = 20;

  void init() {
    // A blocking stream: it orders with the legacy default stream that the
    // synchronous cudaMemset/cudaMemcpy calls of the checks use.
    CK(cudaStreamCreate(&st));
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    CK(cudaMalloc(&flush_buf, flush_bytes));
  }
  // flush writes flush_bytes (more than the L2 holds) on the stream.
  void flush(int tag) { CK(cudaMemsetAsync(flush_buf, tag & 0xff, flush_bytes, st)); }
  // One timed call: flush L2 (outside the events), then events around launch.
  double once(const std::function<void()>& launch, int tag, const char* what) {
    flush(tag);
    CK(cudaEventRecord(a, st));
    launch();
    CK(cudaEventRecord(b, st));
    sync_watch(st, limit_s, what);
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    return ms * 1000.0;
  }
  // interleave times builds (a launch and where its times go): warm-up calls
  // of each, then rounds that rotate which goes first. The time step passes
  // two: the uninstrumented build and the control (a second load of the
  // same cubin: same code, its own module, or with --control another
  // directory's build), whose ratio to the first is what two identical
  // builds differ by in this run.
  using Build = std::pair<std::function<void()>, Samples*>;
  void interleave(std::initializer_list<Build> list, int warmup, int rounds,
                  const char* what) {
    const std::vector<Build> b(list);
    const int n = (int)b.size();
    for (int w = 0; w < warmup; ++w)
      for (const Build& x : b) once(x.first, w, what);
    for (int r = 0; r < rounds; ++r)
      for (int i = 0; i < n; ++i) {
        const Build& x = b[(r + i) % n];
        x.second->us.push_back(once(x.first, r, what));
      }
  }
};

static std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if ((unsigned char)c < 0x20) {
      char b[8];
      snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += c;
    }
  }
  return o;
}

static std::string samples_json(const Samples& s) {
  std::string o = "{\"median_us\":" + std::to_string(s.median()) +
                  ",\"min_us\":" + std::to_string(s.min()) +
                  ",\"max_us\":" + std::to_string(s.max()) + ",\"rounds_us\":[";
  for (size_t i = 0; i < s.us.size(); ++i)
    o += (i ? "," : "") + std::to_string(s.us[i]);
  return o + "]}";
}

static const char* kBoundary =
    "CUDA events around one launch on its own stream; L2 flushed by a "
    "256 MiB cudaMemsetAsync before each call, outside the events";

// paired_ratio: the median over rounds of a round's b / a (the two calls
// ran in the same round); rounds with a time of 0 are left out.
static double paired_ratio(const Samples& a, const Samples& b) {
  Samples q;
  for (size_t i = 0; i < a.us.size() && i < b.us.size(); ++i)
    if (a.us[i] > 0 && b.us[i] > 0) q.us.push_back(b.us[i] / a.us[i]);
  return q.us.empty() ? 0 : q.median();
}

// timing_json: the uninstrumented build and its control, every round.
static std::string timing_json(const Options& o, const Samples& off, const Samples& ctl,
                               size_t flush_bytes) {
  const std::string order =
      o.control.empty()
          ? "uninstrumented, control (the same cubin loaded again), alternating"
          : "uninstrumented, control (the uninstrumented cubin of " + o.control +
                "), alternating";
  return "{\"uninstrumented\":" + samples_json(off) + ",\"control\":" + samples_json(ctl) +
         ",\"control_ratio\":" + std::to_string(ctl.median() / off.median()) +
         ",\"control_paired_ratio\":" + std::to_string(paired_ratio(off, ctl)) +
         ",\"settings\":{\"warmup_calls\":" + std::to_string(o.warmup) +
         ",\"rounds\":" + std::to_string(o.rounds) +
         ",\"calls_per_round\":1,\"flush_l2\":true,\"flush_bytes\":" +
         std::to_string(flush_bytes) + ",\"interleaved\":true,\"order\":\"" +
         json_escape(order) + "\",\"boundary\":\"" + json_escape(kBoundary) + "\"}}";
}

// ---- results ------------------------------------------------------------------

struct Row {
  std::string kernel, size, perf, ref;
  double off_us, ctl_us;  // medians
  double paired;          // paired_ratio(uninstrumented, control)
};
static std::vector<Row> g_rows;
static std::string g_json;  // objects, comma separated
static std::string g_device_json = "null";
static bool g_failed = false;

static void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "CHECK FAILED: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  fflush(stderr);
  g_failed = true;
}

static void add_json(const std::string& obj) {
  g_json += (g_json.empty() ? "" : ",\n") + obj;
}

// write_bytes writes n bytes to path, naming a failure on stderr.
static bool write_bytes(const std::string& path, const void* data, size_t n) {
  FILE* f = fopen(path.c_str(), "wb");
  const bool ok = f && fwrite(data, 1, n, f) == n;
  if (!f || fclose(f) != 0 || !ok) {
    fprintf(stderr, "FAIL: write %s: %s\n", path.c_str(), strerror(errno));
    return false;
  }
  return true;
}

// write_file writes bytes of device memory d to path.
static bool write_file(const std::string& path, const void* d, size_t bytes) {
  std::vector<char> h(bytes);
  CK(cudaMemcpy(h.data(), d, bytes, cudaMemcpyDeviceToHost));
  return write_bytes(path, h.data(), bytes);
}

// write_text writes s to path; a failure fails the run.
static void write_text(const std::string& path, const std::string& s) {
  if (!write_bytes(path, s.data(), s.size())) g_failed = true;
}

// ---- the device ----------------------------------------------------------------

struct Device {
  cudaDeviceProp prop;
  int sms = 0;
  void init() {
    CK(cudaSetDevice(0));
    CK(cudaFree(0));  // creates the primary context the driver API uses
    CK(cudaGetDeviceProperties(&prop, 0));
    sms = prop.multiProcessorCount;
    int rt = 0, drv = 0;
    CK(cudaRuntimeGetVersion(&rt));
    CK(cudaDriverGetVersion(&drv));
    printf("device: %s, sm_%d%d, %d SMs, L2 %d MiB, runtime %d, driver %d\n",
           prop.name, prop.major, prop.minor, sms, prop.l2CacheSize >> 20, rt,
           drv);
    char b[512];
    snprintf(b, sizeof b,
             "{\"name\":\"%s\",\"cuda\":\"%d.%d\",\"compute_capability\":\"%d.%d\","
             "\"sms\":%d}",
             json_escape(prop.name).c_str(), drv / 1000, (drv % 1000) / 10,
             prop.major, prop.minor, sms);
    g_device_json = b;
    if (prop.major != 9) {
      fprintf(stderr, "FAIL: these kernels need a Hopper GPU (sm_90), found sm_%d%d\n",
              prop.major, prop.minor);
      exit(2);
    }
  }
};

static void launch(CUfunction f, unsigned grid, unsigned block, unsigned smem,
                   cudaStream_t st, void** args) {
  CU(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, smem, (CUstream)st, args,
                    nullptr));
}

// launch_own launches one of this file's kernels (fill_*, pipeline_check)
// through the driver API too, so every launch of the program is a
// cuLaunchKernel.
static void launch_own(const void* kernel, unsigned grid, unsigned block, cudaStream_t st,
                       void** args) {
  cudaFunction_t f;
  CK(cudaGetFuncBySymbol(&f, kernel));
  launch((CUfunction)f, grid, block, 0, st, args);
}

// parse_int parses a decimal in [lo, 2^30].
static bool parse_int(const std::string& s, int lo, int* v) {
  char* end;
  errno = 0;
  const long x = strtol(s.c_str(), &end, 10);
  if (s.empty() || *end || errno || x < lo || x > 1 << 30) return false;
  *v = (int)x;
  return true;
}

// checked reports whether run launch i (of n) is checked.
static bool checked(const Options& o, int i, int n) {
  return o.check == "all" || (o.check == "ends" && (i == 0 || i == n - 1));
}

#include "bench_pipeline.cuh"
#include "bench_gemm.cuh"
#include "bench_eventcost.cuh"

// ---- main -----------------------------------------------------------------------

int main(int argc, char** argv) {
  Options o;
  if (argc < 2) return usage();
  o.step = argv[1];
  // Which flags each step takes.
  const bool is_check = o.step == "check", is_time = o.step == "time",
             is_run = o.step == "run", is_ev = o.step == "eventcost";
  if (!is_check && !is_time && !is_run && !is_ev) {
    fprintf(stderr, "bench: unknown step %s\n", o.step.c_str());
    return usage();
  }
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&](std::string* dst) {
      if (i + 1 >= argc) return false;
      *dst = argv[++i];
      return true;
    };
    auto only = [&](bool ok) {
      if (!ok) fprintf(stderr, "bench: %s is not a flag of bench %s\n", a.c_str(), o.step.c_str());
      return ok;
    };
    std::string v;
    bool ok = true;
    if (a == "--modules") {
      ok = val(&o.modules);
    } else if (a == "--out") {
      ok = only(is_time || is_ev) && val(&o.out);
    } else if (a == "--cublas") {
      ok = only(is_time) && val(&o.cublas);
    } else if (a == "--control") {
      ok = only(is_time) && val(&o.control);
    } else if (a == "--rounds") {
      ok = only(is_time) && val(&v) && parse_int(v, 5, &o.rounds);
    } else if (a == "--warmup") {
      ok = only(is_time) && val(&v) && parse_int(v, 0, &o.warmup);
    } else if (a == "--quick") {
      ok = only(is_check || is_time || is_ev);
      o.quick = true;
    } else if (a == "--kernels") {
      ok = only(is_check || is_time) && val(&o.kernels) &&
           (o.kernels == "all" || o.kernels == "pipeline" || o.kernels == "gemm");
    } else if (a == "--kernel") {
      ok = only(is_run) && val(&o.kernel) && (o.kernel == "pipeline" || o.kernel == "gemm");
    } else if (a == "--build") {
      ok = only(is_run) && val(&o.build) && !o.build.empty() &&
           o.build.find('/') == std::string::npos;
    } else if (a == "--size") {
      ok = only(is_run) && val(&o.size);
    } else if (a == "--launches") {
      ok = only(is_run) && val(&v) && parse_int(v, 1, &o.launches);
    } else if (a == "--check") {
      ok = only(is_run) && val(&o.check) &&
           (o.check == "all" || o.check == "ends" || o.check == "none");
    } else if (a == "--no-flush") {
      ok = only(is_run);
      o.flush = false;
    } else if (a == "--dump") {
      ok = only(is_run) && val(&o.dump);
    } else if (a == "--case") {
      ok = only(is_ev) && val(&o.ev_case) &&
           (o.ev_case == "all" || o.ev_case == "latency" || o.ev_case == "throughput");
    } else {
      fprintf(stderr, "bench: unknown flag %s\n", a.c_str());
      ok = false;
    }
    if (!ok) {
      fprintf(stderr, "bench %s: bad flag or value near %s\n", o.step.c_str(), a.c_str());
      return usage();
    }
  }
  if (is_run && o.kernel.empty()) {
    fprintf(stderr, "bench run: --kernel gemm or --kernel pipeline\n");
    return 64;
  }
  if (is_run && !o.dump.empty() && o.kernel != "gemm") {
    fprintf(stderr, "bench run: --dump is for the gemm\n");
    return 64;
  }

  Device dev;
  dev.init();
  Timer tm;
  tm.init();

  if (is_check) {
    if (o.want("pipeline")) pipeline_check_step(o, dev, tm);
    if (o.want("gemm")) gemm_check_step(o, dev, tm);
  } else if (is_time) {
    if (o.want("pipeline")) pipeline_time_step(o, dev, tm);
    if (o.want("gemm")) gemm_time_step(o, dev, tm);
  } else if (is_run) {
    if (o.kernel == "gemm") {
      if (!gemm_run_step(o, dev, tm)) return 64;
    } else if (!pipeline_run_step(o, dev, tm)) {
      return 64;
    }
  } else {
    eventcost_step(o, dev, tm);
  }

  if (!g_rows.empty()) {
    std::string t;
    char b[512];
    // control: the control's median / the uninstrumented median; paired:
    // the median of the rounds' own ratios, which a run whose rounds fall
    // into a slow and a fast group moves less.
    snprintf(b, sizeof b, "%-9s %-22s %12s %12s %8s %7s %16s  %s\n", "kernel", "size",
             "uninstr_us", "control_us", "control", "paired", "throughput", "reference");
    t += b;
    for (const Row& r : g_rows) {
      snprintf(b, sizeof b, "%-9s %-22s %12.1f %12.1f %8.4f %7.4f %16s  %s\n",
               r.kernel.c_str(), r.size.c_str(), r.off_us, r.ctl_us, r.ctl_us / r.off_us,
               r.paired, r.perf.c_str(), r.ref.c_str());
      t += b;
    }
    if (!o.control.empty()) t += "control: the uninstrumented cubins of " + o.control + "\n";
    printf("\n%s", t.c_str());
    write_text(o.out + "/table-" + o.step + ".txt", t);
  }
  if (!g_json.empty() && (is_time || is_ev)) {
    const std::string jp =
        o.out + "/bench-" + o.step + (is_ev ? "-" + o.ev_case : std::string()) + ".json";
    write_text(jp, "{\"device\":" + g_device_json + ",\"step\":\"" + o.step +
                       "\",\"results\":[\n" + g_json + "\n]}\n");
  }
  if (g_failed) {
    fprintf(stderr, "bench %s: FAILED (see CHECK FAILED lines above)\n", o.step.c_str());
    return 1;
  }
  printf("bench %s: all checks passed\n", o.step.c_str());
  return 0;
}
