// bench_gemm.cuh: the GEMM kernel's part of bench.cu (included there, not a
// header of its own): tensor maps, correctness, timing and the traced launch.
//
// Constants mirror kernels/hopper/gemm.cu.
#define BG_BM 128
#define BG_BN 256
#define BG_BK 64
#define BG_THREADS 384
#define BG_WARPS 12
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

// Host copies of A and B (as float) for the fp64 reference.
struct GemmHost {
  int M = 0, N = 0, K = 0;
  std::vector<float> a, b;
};

static bool gemm_check_run(GemmRun& run, const GemmHost& h, const char* label,
                           double limit_s) {
  const int M = run.M, N = run.N, K = run.K;
  CK(cudaMemsetAsync(run.C, 0xff, (size_t)M * N * 2, run.st));  // NaN
  run();
  char what[160];
  snprintf(what, sizeof what, "gemm %s %dx%dx%d grid %u", label, M, N, K, run.grid);
  sync_watch(run.st, limit_s, what);
  std::vector<uint16_t> c((size_t)M * N);
  CK(cudaMemcpy(c.data(), run.C, c.size() * 2, cudaMemcpyDeviceToHost));
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
  // fp64 reference on a sample: 2048 random entries, all of row 0 and of
  // the last column.
  std::vector<std::pair<int, int>> idx;
  std::mt19937 rng(777);
  for (int s = 0; s < 2048; ++s) idx.push_back({(int)(rng() % M), (int)(rng() % N)});
  for (int j = 0; j < N; ++j) idx.push_back({0, j});
  for (int i = 0; i < M; ++i) idx.push_back({i, N - 1});
  const double abs_tol = 2e-3 * std::sqrt((double)K);
  size_t bad = 0;
  double worst = 0;
  int wi = 0, wj = 0;
  double wgot = 0, wwant = 0;
  for (auto [i, j] : idx) {
    const float* ar = &h.a[(size_t)i * K];
    const float* br = &h.b[(size_t)j * K];
    double ref = 0;
    for (int k = 0; k < K; ++k) ref += (double)ar[k] * br[k];
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
  if (bad) fail("%s: %zu of %zu sampled entries wrong", what, bad, idx.size());
  printf("gemm %-15s %5dx%5dx%5d grid %3u %s: %zu entries vs fp64, max error %.3g at [%d][%d] "
         "(%.6g vs %.6g), tolerance 2^-8*|ref| + %.3g\n",
         label, M, N, K, run.grid, ok ? "correct" : "WRONG", idx.size(), worst, wi, wj, wgot,
         wwant, abs_tol);
  return ok;
}

static bool write_file(const std::string& path, const void* d, size_t bytes) {
  std::vector<char> h(bytes);
  CK(cudaMemcpy(h.data(), d, bytes, cudaMemcpyDeviceToHost));
  FILE* f = fopen(path.c_str(), "wb");
  if (!f) {
    fprintf(stderr, "FAIL: create %s: %s\n", path.c_str(), strerror(errno));
    return false;
  }
  const bool ok = fwrite(h.data(), 1, bytes, f) == bytes;
  return fclose(f) == 0 && ok;
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

static void gemm_step(const Options& o, Device& dev, Timer& tm, bool check_only,
                      bool trace) {
  Module off, on, dbg, ctl;
  off.load(o.modules + "/gemm_off.cubin");
  on.load(o.modules + "/gemm_on.cubin");
  // The timing's control: the uninstrumented cubin loaded a second time, or
  // --control's (then checked like the others below).
  const bool timing = !check_only && !trace;
  if (timing) ctl.load(o.control_dir() + "/gemm_off.cubin");
  Trace tr;
  tr.attach(on);
  struct Shape {
    int M, N, K;
  };
  std::vector<Shape> sizes;
  if (trace)
    sizes = {{1024, 1024, 1024}};
  else if (check_only)
    sizes = {{384, 768, 320}, {1024, 1024, 1024}, {4096, 4096, 4096}};
  else if (o.quick)
    sizes = {{2048, 2048, 2048}};
  else
    sizes = {{4096, 4096, 4096}, {8192, 8192, 8192}};

  std::vector<std::pair<const char*, Module*>> builds = {{"uninstrumented", &off},
                                                         {"instrumented", &on}};
  if (check_only) {
    dbg.load(o.modules + "/gemm_dbg.cubin");
    builds.insert(builds.begin(), {"debug", &dbg});
  }
  if (timing && !o.control.empty()) builds.push_back({"control", &ctl});
  for (auto& b : builds)
    CU(cuFuncSetAttribute(b.second->fn("gemm"),
                          CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, BG_SMEM));
  if (timing)
    CU(cuFuncSetAttribute(ctl.fn("gemm"), CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                          BG_SMEM));

  for (const Shape& sh : sizes) {
    const int M = sh.M, N = sh.N, K = sh.K;
    if (M % BG_BM || N % BG_BN || K % BG_BK) {
      fail("gemm %dx%dx%d: shape must be multiples of %d x %d x %d", M, N, K, BG_BM,
           BG_BN, BG_BK);
      continue;
    }
    __nv_bfloat16 *A, *B, *C;
    CK(cudaMalloc(&A, (size_t)M * K * 2));
    CK(cudaMalloc(&B, (size_t)N * K * 2));
    CK(cudaMalloc(&C, (size_t)M * N * 2));
    fill_bf16<<<2048, 256, 0, tm.st>>>(A, (size_t)M * K, 11u);
    fill_bf16<<<2048, 256, 0, tm.st>>>(B, (size_t)N * K, 22u);
    CK(cudaGetLastError());
    sync_watch(tm.st, 30, "fill gemm inputs");
    GemmHost h;
    h.M = M, h.N = N, h.K = K;
    {
      std::vector<uint16_t> t((size_t)std::max(M, N) * K);
      CK(cudaMemcpy(t.data(), A, (size_t)M * K * 2, cudaMemcpyDeviceToHost));
      h.a.resize((size_t)M * K);
      for (size_t i = 0; i < h.a.size(); ++i) h.a[i] = bf16_to_f(t[i]);
      CK(cudaMemcpy(t.data(), B, (size_t)N * K * 2, cudaMemcpyDeviceToHost));
      h.b.resize((size_t)N * K);
      for (size_t i = 0; i < h.b.size(); ++i) h.b[i] = bf16_to_f(t[i]);
    }
    // Records per warp: per tile, at most 4 per k step (2 NEXT records; 4
    // with GEMM_NEXT=0's push/pop pairs) and a few at the tile's start and
    // end; the role and slack once.
    const int ktiles = K / BG_BK;
    const unsigned grid = gemm_grid(M, N, dev.sms);
    const int tiles = (M / BG_BM) * (N / BG_BN);
    const int per_cta = (tiles + (int)grid - 1) / (int)grid;
    const uint32_t cap =
        bench_cap() >= 0 ? (uint32_t)bench_cap() : (uint32_t)(per_cta * (4 * ktiles + 8) + 16);
    tr.alloc((uint64_t)grid * BG_WARPS, BG_WARPS, cap);
    GemmRun r_off{off.fn("gemm"), make_tmap(A, M, K, BG_BM), make_tmap(B, N, K, BG_BN),
                  make_tmap(C, M, N, 16), C, M, N, K, tm.st, grid};
    GemmRun r_on = r_off;
    r_on.f = on.fn("gemm");

    bool ok = true;
    if (check_only) {
      // A small grid makes every CTA walk several tiles, so the ring's
      // phases carry across tiles at every shape (the instrumented build's
      // buffers are sized for the real grid and run below).
      for (auto& b : builds) {
        if (b.second == &on) continue;
        GemmRun r = r_off;
        r.f = b.second->fn("gemm");
        r.grid = std::min(grid, 7u);
        ok = gemm_check_run(r, h, b.first, tm.limit_s) && ok;
      }
    }
    for (auto& b : builds) {
      GemmRun r = r_off;
      r.f = b.second->fn("gemm");
      ok = gemm_check_run(r, h, b.first, tm.limit_s) && ok;
    }
    {
      std::string msg;
      uint64_t events;
      uint32_t maxc;
      const bool hok = check_headers(tr.copy(), tr.warps, cap, &events, &maxc, &msg, true);
      printf("gemm instrumented %dx%dx%d trace: %s\n", M, N, K, msg.c_str());
      if (!hok) fail("gemm %dx%dx%d: trace buffers: %s", M, N, K, msg.c_str());
      ok = ok && hok;
    }

    if (ok && trace) {
      tr.clear();
      r_on();
      sync_watch(tm.st, tm.limit_s, "gemm traced launch");
      std::vector<unsigned char> bufs = tr.copy();
      std::string msg;
      uint64_t events;
      uint32_t maxc;
      if (!check_headers(bufs, tr.warps, cap, &events, &maxc, &msg, true)) {
        fail("gemm traced launch: %s", msg.c_str());
      } else {
        Samples s_off, s_on;
        tm.interleave({{r_off, &s_off}, {r_on, &s_on}}, o.warmup, o.rounds,
                      "gemm trace timing");
        LaunchInfo li;
        li.kernel = "gemm";
        li.source = "kernels/hopper/gemm.cu";
        li.names = tr.names;
        li.version = tr.version;
        li.grid[0] = grid;
        li.block[0] = BG_THREADS;
        li.shared_bytes = BG_SMEM;
        li.warps_per_cta = BG_WARPS;
        li.warps = tr.warps;
        li.capacity = cap;
        li.latency = latency_json(s_off, s_on, o.warmup, o.rounds, tm.flush_bytes);
        if (!write_capture(o.out + "/trace-gemm.iket", li, bufs)) g_failed = true;
      }
    } else if (ok && !check_only) {
      Samples s_off, s_on, s_ctl;
      GemmRun r_ctl = r_off;
      r_ctl.f = ctl.fn("gemm");
      tm.interleave({{r_off, &s_off}, {r_on, &s_on}, {r_ctl, &s_ctl}},
                    o.warmup, o.rounds, "gemm timing");
      std::string msg;
      uint64_t events;
      uint32_t maxc;
      if (!check_headers(tr.copy(), tr.warps, cap, &events, &maxc, &msg, true))
        fail("gemm timing: instrumented launch: %s", msg.c_str());
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
      g_rows.push_back(
          {"gemm", size, perf, ref, s_off.median(), s_on.median(), s_ctl.median(),
           paired_ratio(s_off, s_on)});
      add_json("{\"kernel\":\"gemm\",\"m\":" + std::to_string(M) + ",\"n\":" +
               std::to_string(N) + ",\"k\":" + std::to_string(K) +
               ",\"tflops\":" + std::to_string(tf) + ",\"cublas_us\":" +
               std::to_string(cb) + ",\"latency\":" +
               latency_json(s_off, s_on, o.warmup, o.rounds, tm.flush_bytes, &s_ctl) +
               ",\"trace\":\"" + json_escape(msg) + "\"}");
      // The full-matrix check against torch runs on these dumps.
      if (M == 4096 || o.quick) {
        const std::string d = o.work + "/gemm" + std::to_string(M);
        bool w = write_file(d + ".a.bf16", A, (size_t)M * K * 2) &&
                 write_file(d + ".b.bf16", B, (size_t)N * K * 2);
        r_off();
        sync_watch(tm.st, tm.limit_s, "gemm dump uninstrumented");
        w = w && write_file(d + ".c_off.bf16", C, (size_t)M * N * 2);
        r_on();
        sync_watch(tm.st, tm.limit_s, "gemm dump instrumented");
        w = w && write_file(d + ".c_on.bf16", C, (size_t)M * N * 2);
        if (!w)
          fail("gemm: could not write the dumps under %s", o.work.c_str());
        else
          printf("gemm %dx%dx%d: dumped A, B and both builds' C to %s.*.bf16\n", M, N,
                 K, d.c_str());
      }
    }
    tr.release();
    CK(cudaFree(A));
    CK(cudaFree(B));
    CK(cudaFree(C));
  }
}
