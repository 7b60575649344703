// bench_gemm.cuh: the GEMM kernel's part of bench.cu (included there, not a
// header of its own): tensor maps, correctness, timing, and the plain run.
//
// Constants mirror kernels/hopper/gemm.cu.
#define BG_BM 128
#define BG_BN 256
#define BG_BK 64
#define BG_THREADS 384
// The ring, the epilogue's TMA-store buffers (8 warps x 2 x 2 KiB), alignment.
#define BG_SMEM (4 * (128 * 64 * 2 + 256 * 64 * 2) + 8 * 2 * 2048 + 1024)

typedef CUresult (*EncodeTiledFn)(CUtensorMap*, CUtensorMapDataType, cuuint32_t,
                                  void*, const cuuint64_t*, const cuuint64_t*,
                                  const cuuint32_t*, const cuuint32_t*,
                                  CUtensorMapInterleave, CUtensorMapSwizzle,
                                  CUtensorMapL2promotion,
                                  CUtensorMapFloatOOBfill);

static EncodeTiledFn encode_tiled() {
  static EncodeTiledFn fn = nullptr;
  if (fn) return fn;
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
  CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000,
                                      cudaEnableDefault, &q));
#else
  CK(cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &p, cudaEnableDefault, &q));
#endif
  if (!p || q != cudaDriverEntryPointSuccess) {
    fprintf(stderr, "FAIL: driver entry point cuTensorMapEncodeTiled not found (status %d)\n",
            (int)q);
    exit(2);
  }
  fn = (EncodeTiledFn)p;
  return fn;
}

// A rows x K bf16 row-major matrix, boxes of box_rows x 64, 128-byte swizzle.
static CUtensorMap make_tmap(const void* base, int rows, int K, int box_rows) {
  CUtensorMap m;
  const cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)rows};
  const cuuint64_t strides[1] = {(cuuint64_t)K * 2};
  const cuuint32_t box[2] = {BG_BK, (cuuint32_t)box_rows};
  const cuuint32_t estr[2] = {1, 1};
  CUresult r = encode_tiled()(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2,
                              const_cast<void*>(base), dims, strides, box, estr,
                              CU_TENSOR_MAP_INTERLEAVE_NONE,
                              CU_TENSOR_MAP_SWIZZLE_128B,
                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "FAIL: encode tensor map (%d x %d, box %d x 64):\n", rows, K, box_rows);
    die_drv(r, "cuTensorMapEncodeTiled", __FILE__, __LINE__);
  }
  return m;
}

struct GemmRun {
  CUfunction f;
  CUtensorMap ta, tb, tc;  // tc: C for the epilogue's TMA stores, boxes of 16 x 64
  __nv_bfloat16* C;
  int M, N, K;
  cudaStream_t st;
  unsigned grid;  // CTAs; the kernel is persistent, any number works
  void operator()() {
    void* args[] = {&ta, &tb, &tc, &C, &M, &N, &K};
    launch(f, grid, BG_THREADS, BG_SMEM, st, args);
  }
  // poison fills C with NaN, so a tile never written fails.
  void poison() { CK(cudaMemsetAsync(C, 0xff, (size_t)M * N * 2, st)); }
};

// gemm_grid is the launch's CTA count: one per SM, or one per tile when the
// tiles are fewer.
static unsigned gemm_grid(int M, int N, int sms) {
  const int tiles = (M / BG_BM) * (N / BG_BN);
  return (unsigned)std::max(1, std::min(tiles, sms));
}

static float bf16_to_f(uint16_t h) {
  const uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// One shape's inputs and output on the device, and the fp64 reference of a
// sample of C: 2048 random entries, all of row 0 and of the last column.
struct GemmData {
  int M = 0, N = 0, K = 0;
  __nv_bfloat16 *A = nullptr, *B = nullptr, *C = nullptr;
  std::vector<std::pair<int, int>> idx;
  std::vector<double> ref;

  void alloc(int m, int n, int k, cudaStream_t st) {
    M = m, N = n, K = k;
    CK(cudaMalloc(&A, (size_t)M * K * 2));
    CK(cudaMalloc(&B, (size_t)N * K * 2));
    CK(cudaMalloc(&C, (size_t)M * N * 2));
    size_t na = (size_t)M * K, nb = (size_t)N * K;
    uint32_t sa = 11u, sb = 22u;
    void* aa[] = {&A, &na, &sa};
    void* ab[] = {&B, &nb, &sb};
    launch_own((const void*)fill_bf16, 2048, 256, st, aa);
    launch_own((const void*)fill_bf16, 2048, 256, st, ab);
    sync_watch(st, 30, "fill gemm inputs");
    std::vector<float> a((size_t)M * K), b((size_t)N * K);
    {
      std::vector<uint16_t> t((size_t)std::max(M, N) * K);
      CK(cudaMemcpy(t.data(), A, (size_t)M * K * 2, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < a.size(); ++i) a[i] = bf16_to_f(t[i]);
      CK(cudaMemcpy(t.data(), B, (size_t)N * K * 2, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < b.size(); ++i) b[i] = bf16_to_f(t[i]);
    }
    std::mt19937 rng(777);
    for (int s = 0; s < 2048; ++s) idx.push_back({(int)(rng() % M), (int)(rng() % N)});
    for (int j = 0; j < N; ++j) idx.push_back({0, j});
    for (int i = 0; i < M; ++i) idx.push_back({i, N - 1});
    ref.resize(idx.size());
    for (size_t s = 0; s < idx.size(); ++s) {
      const float* ar = &a[(size_t)idx[s].first * K];
      const float* br = &b[(size_t)idx[s].second * K];
      double r = 0;
      for (int kk = 0; kk < K; ++kk) r += (double)ar[kk] * br[kk];
      ref[s] = r;
    }
  }
  void release() {
    CK(cudaFree(A));
    CK(cudaFree(B));
    CK(cudaFree(C));
  }
  // run is a launch of f over this data: one CTA per SM (or per tile).
  GemmRun run(CUfunction f, int sms, cudaStream_t st) const {
    return GemmRun{f, make_tmap(A, M, K, BG_BM), make_tmap(B, N, K, BG_BN),
                   make_tmap(C, M, N, 16), C, M, N, K, st, gemm_grid(M, N, sms)};
  }
};

// Checks C of the launch that just finished: every output finite, the
// sample against the fp64 reference (tolerance 2^-8*|ref| + 2e-3*sqrt(K)).
// quiet: no line when correct.
static bool gemm_verify(const GemmData& d, const char* what, bool quiet = false) {
  const int N = d.N;
  std::vector<uint16_t> c((size_t)d.M * N);
  CK(cudaMemcpy(c.data(), d.C, c.size() * 2, cudaMemcpyDeviceToHost));
  bool ok = true;
  size_t nonfinite = 0, first_nf = 0;
  for (size_t i = 0; i < c.size(); ++i)
    if (!std::isfinite(bf16_to_f(c[i])))
      if (nonfinite++ == 0) first_nf = i;
  if (nonfinite) {
    fail("%s: %zu of %zu outputs not finite (never written?), first at row %zu col %zu",
         what, nonfinite, c.size(), first_nf / N, first_nf % N);
    ok = false;
  }
  const double abs_tol = 2e-3 * std::sqrt((double)d.K);
  size_t bad = 0;
  double worst = 0;
  int wi = 0, wj = 0;
  double wgot = 0, wwant = 0;
  for (size_t s = 0; s < d.idx.size(); ++s) {
    const int i = d.idx[s].first, j = d.idx[s].second;
    const double ref = d.ref[s];
    const double got = bf16_to_f(c[(size_t)i * N + j]);
    const double err = fabs(got - ref);
    const double tol = ref == ref ? std::ldexp(fabs(ref), -8) + abs_tol : 0;
    if (!(err <= tol)) {
      if (bad++ < 5)
        fail("%s: C[%d][%d] = %.6g, fp64 reference %.6g (error %.3g > tolerance %.3g)",
             what, i, j, got, ref, err, tol);
      ok = false;
    }
    if (!(err <= worst)) {
      worst = err;
      wi = i, wj = j, wgot = got, wwant = ref;
    }
  }
  if (bad) fail("%s: %zu of %zu sampled entries wrong", what, bad, d.idx.size());
  if (!ok || !quiet)
    printf("%s %s: %zu entries vs fp64, max error %.3g at [%d][%d] (%.6g vs %.6g), "
           "tolerance 2^-8*|ref| + %.3g\n",
           what, ok ? "correct" : "WRONG", d.idx.size(), worst, wi, wj, wgot, wwant, abs_tol);
  return ok;
}

// Runs once on a poisoned C and checks it.
static bool gemm_check_run(GemmRun& run, const GemmData& d, const char* label,
                           double limit_s) {
  run.poison();
  run();
  char what[160];
  snprintf(what, sizeof what, "gemm %-15s %5dx%5dx%5d grid %3u", label, run.M, run.N, run.K,
           run.grid);
  sync_watch(run.st, limit_s, what);
  return gemm_verify(d, what);
}

static double cublas_us(const Options& o, int size) {
  if (o.cublas.empty()) return 0;
  FILE* f = fopen(o.cublas.c_str(), "r");
  if (!f) return 0;
  int s;
  double us, found = 0;
  while (fscanf(f, "%d %lf", &s, &us) == 2)
    if (s == size) found = us;
  fclose(f);
  return found;
}

static CUfunction gemm_fn(const Module& m) {
  CUfunction f = m.fn("gemm");
  CU(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, BG_SMEM));
  return f;
}

static bool gemm_shape_ok(int M, int N, int K) {
  if (M > 0 && N > 0 && K > 0 && M % BG_BM == 0 && N % BG_BN == 0 && K % BG_BK == 0)
    return true;
  fprintf(stderr, "gemm %dx%dx%d: the shape must be positive multiples of %d x %d x %d\n", M, N,
          K, BG_BM, BG_BN, BG_BK);
  return false;
}

struct GemmShape {
  int M, N, K;
};

// check: every build at three shapes, on the full grid and on a grid of 7
// CTAs, so that every CTA walks several tiles and the ring's phases carry
// across tiles at every shape.
static void gemm_check_step(const Options& o, Device& dev, Timer& tm) {
  Module dbg, off, on;
  dbg.load(o.module("gemm", "dbg"));
  off.load(o.module("gemm", "off"));
  on.load(o.module("gemm", "on"));
  const std::vector<std::pair<const char*, CUfunction>> builds = {
      {"debug", gemm_fn(dbg)}, {"uninstrumented", gemm_fn(off)}, {"instrumented", gemm_fn(on)}};
  const std::vector<GemmShape> sizes = {{384, 768, 320}, {1024, 1024, 1024}, {4096, 4096, 4096}};
  for (const GemmShape& sh : sizes) {
    GemmData d;
    d.alloc(sh.M, sh.N, sh.K, tm.st);
    for (auto& b : builds) {
      GemmRun r = d.run(b.second, dev.sms, tm.st);
      const unsigned full = r.grid;
      r.grid = std::min(full, 7u);
      gemm_check_run(r, d, b.first, tm.limit_s);
      r.grid = full;
      gemm_check_run(r, d, b.first, tm.limit_s);
    }
    d.release();
  }
}

// time: the uninstrumented build against its control at the timed shapes,
// after a check of both, beside cuBLAS.
static void gemm_time_step(const Options& o, Device& dev, Timer& tm) {
  Module off, ctl;
  off.load(o.module("gemm", "off"));
  ctl.load(o.control_dir() + "/gemm_off.cubin");
  const CUfunction f_off = gemm_fn(off), f_ctl = gemm_fn(ctl);
  std::vector<GemmShape> sizes = {{4096, 4096, 4096}, {8192, 8192, 8192}};
  if (o.quick) sizes = {{2048, 2048, 2048}};
  for (const GemmShape& sh : sizes) {
    const int M = sh.M, N = sh.N, K = sh.K;
    GemmData d;
    d.alloc(M, N, K, tm.st);
    GemmRun r_off = d.run(f_off, dev.sms, tm.st);
    GemmRun r_ctl = r_off;
    r_ctl.f = f_ctl;
    bool ok = gemm_check_run(r_off, d, "uninstrumented", tm.limit_s);
    ok = gemm_check_run(r_ctl, d, "control", tm.limit_s) && ok;
    if (ok) {
      Samples s_off, s_ctl;
      tm.interleave({{r_off, &s_off}, {r_ctl, &s_ctl}}, o.warmup, o.rounds, "gemm timing");
      const double flops = 2.0 * M * N * K;
      const double tf = flops / (s_off.median() * 1e-6) / 1e12;
      const double cb = cublas_us(o, M == N && N == K ? M : -1);
      char size[64], perf[64], ref[128];
      snprintf(size, sizeof size, "%dx%dx%d bf16", M, N, K);
      snprintf(perf, sizeof perf, "%.1f TFLOP/s", tf);
      if (cb > 0)
        snprintf(ref, sizeof ref, "%.1f%% of cuBLAS (torch.mm %.1f us, %.1f TFLOP/s)",
                 100.0 * cb / s_off.median(), cb, flops / (cb * 1e-6) / 1e12);
      else
        snprintf(ref, sizeof ref, "no cuBLAS timing (run kernels/bench/torch_ref.py time)");
      g_rows.push_back({"gemm", size, perf, ref, s_off.median(), s_ctl.median(),
                        paired_ratio(s_off, s_ctl)});
      add_json("{\"kernel\":\"gemm\",\"m\":" + std::to_string(M) + ",\"n\":" +
               std::to_string(N) + ",\"k\":" + std::to_string(K) + ",\"tflops\":" +
               std::to_string(tf) + ",\"cublas_us\":" + std::to_string(cb) +
               ",\"latency\":" + timing_json(o, s_off, s_ctl, tm.flush_bytes) + "}");
    }
    d.release();
  }
}

// run: --launches launches of one build, each on a poisoned C after an L2
// flush, each waited for and (--check) checked; --dump writes the inputs
// and the last launch's C. False: bad usage.
static bool gemm_run_step(const Options& o, Device& dev, Timer& tm) {
  GemmShape sh = {4096, 4096, 4096};
  if (!o.size.empty()) {
    int n = 0;
    char extra = 0;
    if (sscanf(o.size.c_str(), "%dx%dx%d%c", &sh.M, &sh.N, &sh.K, &extra) == 3) {
      // MxNxK
    } else if (parse_int(o.size, 1, &n)) {
      sh = {n, n, n};
    } else {
      fprintf(stderr, "bench run: gemm --size %s: want N or MxNxK\n", o.size.c_str());
      return false;
    }
  }
  if (!gemm_shape_ok(sh.M, sh.N, sh.K)) return false;
  Module m;
  m.load(o.module("gemm", o.build));
  GemmData d;
  d.alloc(sh.M, sh.N, sh.K, tm.st);
  GemmRun r = d.run(gemm_fn(m), dev.sms, tm.st);
  printf("gemm run: %s, %dx%dx%d bf16, grid %u, %d launches, check %s, %s\n", m.path.c_str(),
         sh.M, sh.N, sh.K, r.grid, o.launches, o.check.c_str(),
         o.flush ? "L2 flushed before each" : "no L2 flush");
  int nchecked = 0, nbad = 0;
  for (int i = 0; i < o.launches; ++i) {
    r.poison();
    if (o.flush) tm.flush(i);
    r();
    char what[160];
    snprintf(what, sizeof what, "gemm %s %dx%dx%d launch %d", o.build.c_str(), sh.M, sh.N, sh.K,
             i);
    sync_watch(tm.st, tm.limit_s, what);
    if (checked(o, i, o.launches)) {
      ++nchecked;
      if (!gemm_verify(d, what, /*quiet=*/i != 0)) ++nbad;
    }
  }
  printf("gemm run: build %s, %d launches, %d checked, %d wrong\n", o.build.c_str(), o.launches,
         nchecked, nbad);
  if (!o.dump.empty()) {
    // torch_ref.py check reads PREFIX.{a,b,c_off,c_on}.bf16.
    const std::string& p = o.dump;
    const bool w = write_file(p + ".a.bf16", d.A, (size_t)sh.M * sh.K * 2) &&
                   write_file(p + ".b.bf16", d.B, (size_t)sh.N * sh.K * 2) &&
                   write_file(p + ".c_" + o.build + ".bf16", d.C, (size_t)sh.M * sh.N * 2);
    if (!w)
      fail("gemm run: could not write the dumps %s.*.bf16", p.c_str());
    else
      printf("gemm run: dumped A, B and the last launch's C to %s.{a,b,c_%s}.bf16\n", p.c_str(),
             o.build.c_str());
  }
  d.release();
  return true;
}
