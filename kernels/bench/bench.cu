// bench: the standalone harness that checks and times the Hopper kernels of
// kernels/hopper with and without iket tracing, measures what one event costs,
// and writes traced launches as .iket captures (docs/FORMAT.md section 5).
//
// The kernels are loaded as cubins through the driver API (cuModuleLoadData),
// one module per build, exactly as iket's runtime loads a module: the
// instrumented build's iket_state and iket_name_table are found with
// cuModuleGetGlobal. scripts/overhead.sh builds the cubins and runs the steps;
// see docs/OVERHEAD.md for the method.
//
//   bench STEP --modules DIR --out DIR [--work DIR] [--cublas FILE]
//              [--rounds N] [--warmup N] [--quick] [--control DIR]
//   STEP: check | trace | time | eventcost | selftest
//   --control DIR: time's control is DIR's uninstrumented cubin instead of a
//   second load of --modules' one, so a candidate change to a kernel is timed
//   against the current kernel in the same rounds (its results are checked
//   at each timed size like the other builds', but it is not dumped for the
//   full-matrix comparison with torch; the control column and the JSON's
//   control_ratio are then DIR's build / --modules' uninstrumented build,
//   and settings.order names DIR). Only for time.
//
// Exit codes: 0 all checks passed; 1 a check failed (wrong results, drops,
// slower than a hard limit is never a failure); 2 a CUDA call failed; 3 a
// kernel did not finish within its watchdog limit; 64 bad usage.
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
#include <time.h>
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
  std::string work = "/tmp/iket-bench";
  std::string cublas;  // "size median_us" lines from torch_ref.py time
  std::string control;  // --control DIR: the control's cubins ("": --modules)
  // control_dir is where time's control cubin comes from.
  std::string control_dir() const { return control.empty() ? modules : control; }
  int rounds = 9;
  int warmup = 3;
  bool quick = false;
  std::string kernels = "all";  // --kernels all|pipeline|gemm
  bool want(const char* k) const { return kernels == "all" || kernels == k; }
};

static int usage() {
  fprintf(stderr,
          "usage: bench check|trace|time|eventcost|selftest --modules DIR "
          "--out DIR [--work DIR] [--cublas FILE] [--rounds N] [--warmup N] "
          "[--quick] [--kernels all|pipeline|gemm] [--control DIR]\n");
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

// ---- modules and iket buffers -----------------------------------------------

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
  bool global(const char* name, CUdeviceptr* p, size_t* bytes) const {
    return cuModuleGetGlobal(p, bytes, mod, name) == CUDA_SUCCESS;
  }
};

// docs/FORMAT.md section 2.
struct IketState {
  uint64_t base;
  uint32_t capacity;
  uint32_t wrap_mask;
  uint32_t warps_per_cta;
  uint32_t version;
  uint32_t build;  // bit 0: wrap build, bit 1: safe lanes (set by the header)
  uint32_t reserved;
};
static_assert(sizeof(IketState) == 32, "iket state is 32 bytes");

static uint64_t stride_of(uint32_t cap) { return 64ull + 8ull * (cap + 1ull); }

// Buffers of one traced configuration: warps slots of capacity records each,
// stop mode.
struct Trace {
  CUdeviceptr state = 0;
  std::string names;  // the module's iket_name_table
  void* buf = nullptr;  // inside raw, not straddling a 4 GiB boundary
  void* raw = nullptr;
  uint32_t build = 0;
  uint32_t version = 2;  // iket_state version of the attached module
  uint64_t warps = 0;
  uint32_t capacity = 0;
  uint32_t warps_per_cta = 0;

  void attach(const Module& m) {
    size_t bytes = 0;
    if (!m.global("iket_state", &state, &bytes) || bytes != sizeof(IketState)) {
      fprintf(stderr, "FAIL: %s has no 32-byte iket_state (built without -DIKET_ENABLE=1?)\n",
              m.path.c_str());
      exit(2);
    }
    IketState st;
    CU(cuMemcpyDtoH(&st, state, sizeof st));
    build = st.build;
    version = st.version;
    if (version < 1 || version > 2) {
      fprintf(stderr, "FAIL: %s: iket_state version %u, the bench knows versions 1 and 2\n",
              m.path.c_str(), version);
      exit(2);
    }
    if (build & 1u) {
      fprintf(stderr, "FAIL: %s is a wrap build (IKET_WRAP); the bench records in stop mode\n",
              m.path.c_str());
      exit(2);
    }
    CUdeviceptr t;
    if (!m.global("iket_name_table", &t, &bytes)) {
      fprintf(stderr, "FAIL: %s has no iket_name_table\n", m.path.c_str());
      exit(2);
    }
    std::vector<char> s(bytes + 1, 0);
    CU(cuMemcpyDtoH(s.data(), t, bytes));
    names = s.data();
  }
  // alloc sizes the buffers and points iket_state at them.
  void alloc(uint64_t nwarps, uint32_t wpc, uint32_t cap) {
    release();
    warps = nwarps;
    warps_per_cta = wpc;
    capacity = cap;
    // docs/FORMAT.md section 3: a launch's buffers must not straddle a
    // 4 GiB boundary and must end 32 bytes below one. If the first
    // allocation does not, one of twice the size (plus the margin) holds a
    // part that does.
    const uint64_t size = warps * stride_of(cap);
    const uint64_t margin = 32;
    auto straddles = [&](uint64_t p) { return (p >> 32) != ((p + size + margin - 1) >> 32); };
    CK(cudaMalloc(&raw, size));
    uint64_t a = (uint64_t)(uintptr_t)raw;
    if (straddles(a)) {
      if (size > (1ull << 31)) {
        fprintf(stderr, "FAIL: %llu bytes of warp buffers: at most 2 GiB here\n",
                (unsigned long long)size);
        exit(2);
      }
      CK(cudaFree(raw));
      CK(cudaMalloc(&raw, 2 * size + margin));
      a = (uint64_t)(uintptr_t)raw;
      const uint64_t b = ((a >> 32) + 1) << 32;
      if (straddles(a)) a = b;
    }
    buf = (void*)(uintptr_t)a;
    CK(cudaMemset(buf, 0, size));
    CK(cudaDeviceSynchronize());
    IketState st = {(uint64_t)(uintptr_t)buf, cap, 0xffffffffu, wpc, version, build, 0u};
    CU(cuMemcpyHtoD(state, &st, sizeof st));
  }
  void clear() {
    CK(cudaMemset(buf, 0, warps * stride_of(capacity)));
    CK(cudaDeviceSynchronize());
  }
  void release() {
    if (raw) CK(cudaFree(raw));
    raw = nullptr;
    buf = nullptr;
  }
  // Detach points iket_state at nothing (events go to the scratch slot).
  void detach() {
    IketState st = {0, 0, 0xffffffffu, 1u, 1u, build, 0u};
    CU(cuMemcpyHtoD(state, &st, sizeof st));
  }
  std::vector<unsigned char> copy() const {
    std::vector<unsigned char> h(warps * stride_of(capacity));
    CK(cudaMemcpy(h.data(), buf, h.size(), cudaMemcpyDeviceToHost));
    return h;
  }
};

// Measurement settings of the gemm step (both off by default):
// IKET_BENCH_CAP=N: the traced builds record into buffers of N records per
// warp; events past it are counted, not stored (stop mode), and the drops
// are allowed. With 0 the instrumented build runs every event's
// instructions and stores nothing: the stores' share of the tracing cost.
// IKET_BENCH_PARTIAL=1: warps that recorded nothing are allowed (a build
// that records only some roles' events, GEMM_TRACE without bit 4, or
// none at all, GEMM_TRACE=0: the start and exit records alone).
static long bench_cap() {
  const char* e = getenv("IKET_BENCH_CAP");
  return e && *e ? atol(e) : -1;
}
static bool bench_partial() {
  const char* e = getenv("IKET_BENCH_PARTIAL");
  return e && *e && strcmp(e, "0") != 0;
}

// Checks the headers of the last launch: every warp started, finished,
// recorded events and dropped none. relaxed (the gemm step under the
// measurement settings above) allows drops when IKET_BENCH_CAP is set and
// silent warps when IKET_BENCH_PARTIAL is; the message counts both.
// Returns false with a message.
static bool check_headers(const std::vector<unsigned char>& h, uint64_t warps,
                          uint32_t cap, uint64_t* events, uint32_t* max_count,
                          std::string* msg, bool relaxed = false) {
  *events = 0;
  *max_count = 0;
  uint64_t bad = 0, drops = 0, silent = 0;
  char first[256] = "";
  for (uint64_t w = 0; w < warps; ++w) {
    const unsigned char* p = h.data() + w * stride_of(cap);
    uint32_t magic, count, flags;
    memcpy(&magic, p, 4);
    memcpy(&count, p + 56, 4);
    memcpy(&flags, p + 60, 4);
    // Flag bits 2 (lanes disagreed) and 3 (count saturated) must be clear.
    if (count == 0) ++silent;
    if (magic != 0x57454b49u || (flags & 0xfu) != 3u) {
      if (bad++ == 0)
        snprintf(first, sizeof first,
                 "warp slot %llu: magic 0x%08x flags %u count %u",
                 (unsigned long long)w, magic, flags, count);
    }
    if (count > cap) drops += count - cap;
    *events += count;
    *max_count = std::max(*max_count, count);
  }
  char b[512];
  snprintf(b, sizeof b,
           "%llu warps, %llu events, at most %u per warp (capacity %u), %llu "
           "dropped, %llu recorded none, %llu bad headers%s%s",
           (unsigned long long)warps, (unsigned long long)*events, *max_count,
           cap, (unsigned long long)drops, (unsigned long long)silent,
           (unsigned long long)bad, bad ? "; first: " : "", first);
  *msg = b;
  const bool drops_ok = drops == 0 || (relaxed && bench_cap() >= 0);
  const bool silent_ok = silent == 0 || (relaxed && bench_partial());
  return warps > 0 && bad == 0 && drops_ok && silent_ok;
}

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
  double min() const { return *std::min_element(us.begin(), us.end()); }
  double max() const { return *std::max_element(us.begin(), us.end()); }
};

struct Timer {
  cudaStream_t st;
  cudaEvent_t a, b;
  void* flush = nullptr;
  size_t flush_bytes = 256ull << 20;
  double limit_s = 20;

  void init() {
    // A blocking stream: it orders with the legacy default stream that the
    // synchronous cudaMemset/cudaMemcpy calls of the checks use.
    CK(cudaStreamCreate(&st));
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    CK(cudaMalloc(&flush, flush_bytes));
  }
  // One timed call: flush L2 (outside the events), then events around launch.
  double once(const std::function<void()>& launch, int tag, const char* what) {
    CK(cudaMemsetAsync(flush, tag & 0xff, flush_bytes, st));
    CK(cudaEventRecord(a, st));
    launch();
    CK(cudaEventRecord(b, st));
    sync_watch(st, limit_s, what);
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    return ms * 1000.0;
  }
  // interleave times builds (a launch and where its times go): warm-up calls
  // of each, then rounds that rotate which goes first (two builds
  // alternate). gemm and pipeline timings pass three: the uninstrumented
  // build, the instrumented one, and the control (a second load of the
  // uninstrumented cubin: same code, its own module), whose ratio to the
  // uninstrumented build is what two identical builds differ by in this run
  // (the noise the instrumented ratio is read against); with --control,
  // another directory's uninstrumented build instead.
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

// g_control_dir is --control's DIR ("" without it), for latency_json.
static std::string g_control_dir;

// latency_json: ctl (the control: a second load of the uninstrumented
// cubin, or --control's) may be null where none was timed.
static std::string latency_json(const Samples& off, const Samples& on,
                                int warmup, int rounds, size_t flush_bytes,
                                const Samples* ctl = nullptr) {
  const std::string order =
      !ctl ? "uninstrumented and instrumented, alternating"
      : g_control_dir.empty()
          ? "uninstrumented, instrumented, control, rotating each round"
          : "uninstrumented, instrumented, control (the uninstrumented cubin of " +
                g_control_dir + "), rotating each round";
  std::string c;
  if (ctl)
    c = ",\"control\":" + samples_json(*ctl) + ",\"control_ratio\":" +
        std::to_string(ctl->median() / off.median()) +
        ",\"control_paired_ratio\":" + std::to_string(paired_ratio(off, *ctl));
  return "{\"uninstrumented\":" + samples_json(off) +
         ",\"instrumented\":" + samples_json(on) + c +
         ",\"ratio\":" + std::to_string(on.median() / off.median()) +
         ",\"paired_ratio\":" + std::to_string(paired_ratio(off, on)) +
         ",\"settings\":{\"warmup_calls\":" + std::to_string(warmup) +
         ",\"rounds\":" + std::to_string(rounds) +
         ",\"calls_per_round\":1,\"flush_l2\":true,\"flush_bytes\":" +
         std::to_string(flush_bytes) +
         ",\"interleaved\":true,\"order\":\"" + json_escape(order) +
         "\",\"boundary\":\"" + json_escape(kBoundary) +
         "\"}}";
}

// ---- .iket capture writer (docs/FORMAT.md section 5) ---------------------------

struct LaunchInfo {
  std::string kernel, source, names, latency;  // latency: JSON or ""
  uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  uint32_t shared_bytes = 0, warps_per_cta = 0, capacity = 0;
  uint32_t version = 2;  // record format (docs/FORMAT.md section 4)
  uint64_t warps = 0;
};

static std::string names_json(const std::string& table, bool* ok) {
  // "iket-names 1\nKIND name\n..."
  *ok = false;
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < table.size()) {
    size_t e = table.find('\n', pos);
    if (e == std::string::npos) e = table.size();
    lines.push_back(table.substr(pos, e - pos));
    pos = e + 1;
  }
  if (lines.empty() || lines[0] != "iket-names 1") return "[]";
  std::string o = "[";
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    size_t sp = l.find(' ');
    if (sp == std::string::npos) return "[]";
    o += (i > 1 ? "," : "") + std::string("{\"id\":") + std::to_string(i) +
         ",\"kind\":\"" + json_escape(l.substr(0, sp)) + "\",\"name\":\"" +
         json_escape(l.substr(sp + 1)) + "\"}";
  }
  *ok = true;
  return o + "]";
}

static std::string g_device_json = "null";

static bool write_capture(const std::string& path, const LaunchInfo& li,
                          const std::vector<unsigned char>& buffers) {
  bool ok;
  const std::string names = names_json(li.names, &ok);
  if (!ok) {
    fprintf(stderr, "FAIL: write %s: name table does not parse: %s\n",
            path.c_str(), li.names.c_str());
    return false;
  }
  char created[64];
  time_t t = time(nullptr);
  strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
  auto arr = [](const uint32_t v[3]) {
    return "[" + std::to_string(v[0]) + "," + std::to_string(v[1]) + "," +
           std::to_string(v[2]) + "]";
  };
  uint64_t offset = 0, prev = 1;
  std::string meta;
  while (offset != prev) {  // the offset's digits change the length: iterate
    prev = offset;
    meta = std::string("{\"version\":") + std::to_string(li.version) +
           ",\"tool\":\"iket-bench\",\"created\":\"" +
           created + "\"" +
           (g_device_json != "null" ? ",\"device\":" + g_device_json : "") +
           ",\"launches\":[{\"kernel\":\"" + json_escape(li.kernel) +
           "\",\"source\":\"" + json_escape(li.source) +
           "\",\"grid\":" + arr(li.grid) + ",\"block\":" + arr(li.block) +
           ",\"shared_bytes\":" + std::to_string(li.shared_bytes) +
           ",\"warps_per_cta\":" + std::to_string(li.warps_per_cta) +
           ",\"warps\":" + std::to_string(li.warps) +
           ",\"capacity\":" + std::to_string(li.capacity) +
           ",\"mode\":\"stop\",\"names\":" + names +
           ",\"offset\":" + std::to_string(offset) +
           (li.latency.empty() ? "" : ",\"latency\":" + li.latency) + "}]}";
    offset = (24 + meta.size() + 7) / 8 * 8;
  }
  if (buffers.size() != li.warps * stride_of(li.capacity)) {
    fprintf(stderr, "FAIL: write %s: %zu buffer bytes, want %llu\n",
            path.c_str(), buffers.size(),
            (unsigned long long)(li.warps * stride_of(li.capacity)));
    return false;
  }
  FILE* f = fopen(path.c_str(), "wb");
  if (!f) {
    fprintf(stderr, "FAIL: create %s: %s\n", path.c_str(), strerror(errno));
    return false;
  }
  unsigned char hdr[24] = {'I', 'K', 'E', 'T', 'C', 'A', 'P', 0, (unsigned char)li.version,
                           0, 0, 0, 0, 0, 0, 0};
  const uint64_t mlen = meta.size();
  memcpy(hdr + 16, &mlen, 8);  // little-endian host (x86-64)
  bool w = fwrite(hdr, 1, 24, f) == 24 &&
           fwrite(meta.data(), 1, meta.size(), f) == meta.size();
  static const unsigned char zeros[8] = {0};
  const size_t pad = offset - 24 - meta.size();
  w = w && fwrite(zeros, 1, pad, f) == pad &&
      fwrite(buffers.data(), 1, buffers.size(), f) == buffers.size();
  if (fclose(f) != 0 || !w) {
    fprintf(stderr, "FAIL: write %s: %s\n", path.c_str(), strerror(errno));
    return false;
  }
  printf("wrote %s (%zu bytes of warp buffers, %llu warps, capacity %u)\n",
         path.c_str(), buffers.size(), (unsigned long long)li.warps,
         li.capacity);
  return true;
}

// ---- results ------------------------------------------------------------------

struct Row {
  std::string kernel, size, perf, ref;
  double off_us, on_us, ctl_us;  // medians; ctl: the control (0: none)
  double paired;                 // paired_ratio(uninstrumented, instrumented)
};
static std::vector<Row> g_rows;
static std::string g_json;  // objects, comma separated
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

#include "bench_pipeline.cuh"
#include "bench_gemm.cuh"
#include "bench_eventcost.cuh"

// ---- selftest: the capture writer, without a GPU --------------------------------

static int selftest(const Options& o) {
  LaunchInfo li;
  li.kernel = "selftest";
  li.source = "kernels/bench/bench.cu";
  li.names = "iket-names 1\nROLE producer\nRANGE load\nMARK start\n";
  li.grid[0] = 2;
  li.block[0] = 64;
  li.warps_per_cta = 2;
  li.warps = 4;
  li.capacity = 4;
  li.version = 1;  // the records below put the tag in the high word
  std::vector<unsigned char> buf(li.warps * stride_of(li.capacity), 0);
  for (uint64_t w = 0; w < li.warps; ++w) {
    unsigned char* p = buf.data() + w * stride_of(li.capacity);
    const uint32_t magic = 0x57454b49u, smid = (uint32_t)w, cta = (uint32_t)(w / 2),
                   warp = (uint32_t)(w % 2), count = 3, flags = 3;
    const uint64_t gt0 = 1000000, clk0 = 5000, gt1 = 1000000 + 1000, clk1 = 5000 + 1980;
    memcpy(p, &magic, 4);
    memcpy(p + 4, &smid, 4);
    memcpy(p + 8, &cta, 4);
    memcpy(p + 20, &warp, 4);
    memcpy(p + 24, &gt0, 8);
    memcpy(p + 32, &clk0, 8);
    memcpy(p + 40, &gt1, 8);
    memcpy(p + 48, &clk1, 8);
    memcpy(p + 56, &count, 4);
    memcpy(p + 60, &flags, 4);
    const uint64_t rec[3] = {
        (6ull << 61) | (1ull << 48) | (uint32_t)(clk0 + 10),
        (2ull << 61) | (2ull << 48) | (7ull << 32) | (uint32_t)(clk0 + 20),
        (3ull << 61) | (uint32_t)(clk0 + 900)};
    memcpy(p + 64, rec, sizeof rec);
  }
  Samples a, b;
  a.us = {10, 11, 12};
  b.us = {10.5, 11.5, 12.5};
  li.latency = latency_json(a, b, 1, 3, 256ull << 20);
  const std::string path = o.out + "/selftest.iket";
  return write_capture(path, li, buf) ? 0 : 1;
}

int main(int argc, char** argv) {
  Options o;
  if (argc < 2) return usage();
  o.step = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&](std::string* dst) {
      if (i + 1 >= argc) return false;
      *dst = argv[++i];
      return true;
    };
    std::string v;
    if (a == "--modules") {
      if (!val(&o.modules)) return usage();
    } else if (a == "--out") {
      if (!val(&o.out)) return usage();
    } else if (a == "--work") {
      if (!val(&o.work)) return usage();
    } else if (a == "--cublas") {
      if (!val(&o.cublas)) return usage();
    } else if (a == "--control") {
      if (!val(&o.control)) return usage();
    } else if (a == "--rounds") {
      if (!val(&v)) return usage();
      o.rounds = atoi(v.c_str());
    } else if (a == "--warmup") {
      if (!val(&v)) return usage();
      o.warmup = atoi(v.c_str());
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--kernels") {
      if (!val(&o.kernels)) return usage();
      if (o.kernels != "all" && o.kernels != "pipeline" && o.kernels != "gemm") {
        fprintf(stderr, "bench: --kernels %s: want all, pipeline or gemm\n", o.kernels.c_str());
        return 64;
      }
    } else {
      fprintf(stderr, "bench: unknown flag %s\n", a.c_str());
      return usage();
    }
  }
  if (!o.control.empty() && o.step != "time") {
    fprintf(stderr, "bench: --control is for the time step, not %s\n", o.step.c_str());
    return 64;
  }
  g_control_dir = o.control;
  if (o.rounds < 5) {
    fprintf(stderr, "bench: --rounds %d: at least 5 rounds\n", o.rounds);
    return 64;
  }
  if (o.step == "selftest") return selftest(o);
  if (o.step != "check" && o.step != "trace" && o.step != "time" &&
      o.step != "eventcost") {
    fprintf(stderr, "bench: unknown step %s\n", o.step.c_str());
    return usage();
  }

  Device dev;
  dev.init();
  Timer tm;
  tm.init();

  if (o.step == "check") {
    if (o.want("pipeline")) pipeline_step(o, dev, tm, /*check_only=*/true, /*trace=*/false);
    if (o.want("gemm")) gemm_step(o, dev, tm, /*check_only=*/true, /*trace=*/false);
  } else if (o.step == "trace") {
    if (o.want("pipeline")) pipeline_step(o, dev, tm, false, true);
    if (o.want("gemm")) gemm_step(o, dev, tm, false, true);
  } else if (o.step == "time") {
    if (o.want("pipeline")) pipeline_step(o, dev, tm, false, false);
    if (o.want("gemm")) gemm_step(o, dev, tm, false, false);
  } else if (o.step == "eventcost") {
    eventcost_step(o, dev, tm);
  } else {
    return usage();
  }

  if (!g_rows.empty()) {
    std::string t;
    char b[512];
    // ratio: of the medians; paired: the median of the rounds' ratios,
    // which a run whose rounds fall into a slow and a fast group moves less.
    snprintf(b, sizeof b, "%-9s %-22s %12s %12s %7s %7s %7s %16s  %s\n", "kernel", "size",
             "uninstr_us", "instr_us", "ratio", "paired", "control", "throughput",
             "reference");
    t += b;
    for (const Row& r : g_rows) {
      snprintf(b, sizeof b, "%-9s %-22s %12.1f %12.1f %7.4f %7.4f %7.4f %16s  %s\n",
               r.kernel.c_str(), r.size.c_str(), r.off_us, r.on_us, r.on_us / r.off_us,
               r.paired, r.ctl_us / r.off_us, r.perf.c_str(), r.ref.c_str());
      t += b;
    }
    if (!o.control.empty())
      t += "control: the uninstrumented cubins of " + o.control + "\n";
    printf("\n%s", t.c_str());
    const std::string tp = o.out + "/table-" + o.step + ".txt";
    if (FILE* f = fopen(tp.c_str(), "w")) {
      fputs(t.c_str(), f);
      fclose(f);
    }
  }
  if (!g_json.empty()) {
    const std::string jp = o.out + "/bench-" + o.step + ".json";
    if (FILE* f = fopen(jp.c_str(), "w")) {
      fprintf(f, "{\"device\":%s,\"step\":\"%s\",\"results\":[\n%s\n]}\n",
              g_device_json.c_str(), o.step.c_str(), g_json.c_str());
      fclose(f);
    }
  }
  if (g_failed) {
    fprintf(stderr, "bench %s: FAILED (see CHECK FAILED lines above)\n",
            o.step.c_str());
    return 1;
  }
  printf("bench %s: all checks passed\n", o.step.c_str());
  return 0;
}
