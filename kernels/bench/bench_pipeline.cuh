// bench_pipeline.cuh: the pipeline kernel's part of bench.cu (included there,
// not a header of its own): correctness, timing, and the plain run.
//
// Constants mirror kernels/hopper/pipeline.cu.
#define BP_ROW 4096
#define BP_THREADS 160
#define BP_SMEM (8 * 4096 * 4)

struct PipelineRun {
  CUfunction f;
  float *in, *out, *rowsum;
  int rows, grid;
  cudaStream_t st;
  float scale = 1.5f, bias = -0.25f;
  void operator()() {
    void* args[] = {&in, &out, &rowsum, &rows, &scale, &bias};
    launch(f, grid, BP_THREADS, BP_SMEM, st, args);
  }
  // poison fills the outputs with NaN, so a row never written fails.
  void poison() {
    CK(cudaMemsetAsync(out, 0xff, (size_t)rows * BP_ROW * 4, st));
    CK(cudaMemsetAsync(rowsum, 0xff, (size_t)rows * 4, st));
  }
};

// Checks the outputs of the launch that just finished: every element and row
// sum on the device, a sample of rows on the host in double. quiet: no line
// when correct.
static bool pipeline_verify(PipelineRun& run, const char* what, double limit_s,
                            bool quiet = false) {
  const size_t n = (size_t)run.rows * BP_ROW;
  unsigned long long* d;
  CK(cudaMalloc(&d, 4 * sizeof(unsigned long long)));
  unsigned long long init[4] = {0, 0, ~0ull, ~0ull};
  CK(cudaMemcpy(d, init, sizeof init, cudaMemcpyHostToDevice));
  long long rows64 = run.rows;
  int cols = BP_ROW;
  unsigned long long* first = d + 2;
  void* args[] = {&run.in, &run.out, &run.rowsum, &rows64, &cols, &run.scale, &run.bias, &d, &first};
  launch_own((const void*)pipeline_check, 1024, 256, run.st, args);
  sync_watch(run.st, limit_s, "pipeline_check");
  unsigned long long r[4];
  CK(cudaMemcpy(r, d, sizeof r, cudaMemcpyDeviceToHost));
  CK(cudaFree(d));
  bool ok = true;
  if (r[0] || r[1]) {
    fail("%s: %llu of %zu elements wrong (first at index %llu = row %llu col "
         "%llu), %llu of %d row sums wrong (first row %llu)",
         what, r[0], n, r[0] ? r[2] : 0ull, r[0] ? r[2] / BP_ROW : 0ull,
         r[0] ? r[2] % BP_ROW : 0ull, r[1], run.rows, r[1] ? r[3] : 0ull);
    ok = false;
  }
  // Host sample: first, last and 30 random rows, in double.
  std::vector<int> rows = {0, run.rows - 1};
  std::mt19937 rng(12345);
  for (int i = 0; i < 30; ++i) rows.push_back((int)(rng() % (unsigned)run.rows));
  std::vector<float> hin(BP_ROW), hout(BP_ROW);
  int bad = 0;
  for (int row : rows) {
    float hs;
    CK(cudaMemcpy(hin.data(), run.in + (size_t)row * BP_ROW, BP_ROW * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hout.data(), run.out + (size_t)row * BP_ROW, BP_ROW * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&hs, run.rowsum + row, 4, cudaMemcpyDeviceToHost));
    double sum = 0;
    for (int c = 0; c < BP_ROW; ++c) {
      const double want = (double)hin[c] * run.scale + run.bias;
      sum += want;
      if (!(fabs(hout[c] - want) <= 1e-6 * fabs(want) + 1e-7)) {
        if (bad++ < 5)
          fail("%s: host check row %d col %d: got %.9g want %.9g", what, row, c,
               hout[c], want);
        ok = false;
      }
    }
    if (!(fabs(hs - sum) <= 1e-4 * BP_ROW)) {
      fail("%s: host check row %d: row sum %.9g want %.9g", what, row, hs, sum);
      ok = false;
    }
  }
  if (!ok || !quiet)
    printf("%s: %s\n", what,
           ok ? "correct (all elements and row sums on the device, 32 rows on the host)"
              : "WRONG");
  return ok;
}

// Runs once on poisoned outputs and checks everything.
static bool pipeline_check_run(PipelineRun& run, const char* label, double limit_s) {
  run.poison();
  run();
  char what[128];
  snprintf(what, sizeof what, "pipeline %-14s rows=%-7d", label, run.rows);
  sync_watch(run.st, limit_s, what);
  return pipeline_verify(run, what, limit_s);
}

struct PipelineData {
  float *in = nullptr, *out = nullptr, *rowsum = nullptr;
  void alloc(int rows, cudaStream_t st) {
    CK(cudaMalloc(&in, (size_t)rows * BP_ROW * 4));
    CK(cudaMalloc(&out, (size_t)rows * BP_ROW * 4));
    CK(cudaMalloc(&rowsum, (size_t)rows * 4));
    size_t n = (size_t)rows * BP_ROW;
    uint32_t seed = 1u;
    void* args[] = {&in, &n, &seed};
    launch_own((const void*)fill_f32, 4096, 256, st, args);
    sync_watch(st, 30, "fill pipeline input");
  }
  void release() {
    CK(cudaFree(in));
    CK(cudaFree(out));
    CK(cudaFree(rowsum));
  }
};

static CUfunction pipeline_fn(const Module& m) {
  CUfunction f = m.fn("pipeline");
  CU(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, BP_SMEM));
  return f;
}

// check: every build at a size that leaves CTAs with different row counts
// and at the timed size.
static void pipeline_check_step(const Options& o, Device& dev, Timer& tm) {
  Module dbg, off, on;
  dbg.load(o.module("pipeline", "dbg"));
  off.load(o.module("pipeline", "off"));
  on.load(o.module("pipeline", "on"));
  const std::vector<std::pair<const char*, CUfunction>> builds = {
      {"debug", pipeline_fn(dbg)}, {"uninstrumented", pipeline_fn(off)},
      {"instrumented", pipeline_fn(on)}};
  const int grid = dev.sms;
  const std::vector<int> sizes = {grid * 3 + 5, o.quick ? 8192 : 131072};
  PipelineData d;
  d.alloc(*std::max_element(sizes.begin(), sizes.end()), tm.st);
  for (int rows : sizes)
    for (auto& b : builds) {
      PipelineRun r{b.second, d.in, d.out, d.rowsum, rows, grid, tm.st};
      pipeline_check_run(r, b.first, tm.limit_s);
    }
  d.release();
}

// time: the uninstrumented build against its control, after a check of
// both, beside the copy engine's device-to-device bandwidth.
static void pipeline_time_step(const Options& o, Device& dev, Timer& tm) {
  Module off, ctl;
  off.load(o.module("pipeline", "off"));
  ctl.load(o.control_dir() + "/pipeline_off.cubin");
  const int grid = dev.sms;
  const int rows = o.quick ? 8192 : 131072;
  PipelineData d;
  d.alloc(rows, tm.st);
  PipelineRun r_off{pipeline_fn(off), d.in, d.out, d.rowsum, rows, grid, tm.st};
  PipelineRun r_ctl = r_off;
  r_ctl.f = pipeline_fn(ctl);
  bool ok = pipeline_check_run(r_off, "uninstrumented", tm.limit_s);
  ok = pipeline_check_run(r_ctl, "control", tm.limit_s) && ok;
  if (ok) {
    const size_t bytes = (size_t)rows * BP_ROW * 4;
    Samples s_cp, s_cp2;
    auto copy = [&]() {
      CK(cudaMemcpyAsync(d.out, d.in, bytes, cudaMemcpyDeviceToDevice, tm.st));
    };
    tm.interleave({{copy, &s_cp}, {copy, &s_cp2}}, 1, 5, "device copy timing");
    Samples s_off, s_ctl;
    tm.interleave({{r_off, &s_off}, {r_ctl, &s_ctl}}, o.warmup, o.rounds, "pipeline timing");
    const double tb_s = 2.0 * bytes / (s_off.median() * 1e-6) / 1e12;
    const double cp_tb_s = 2.0 * bytes / (s_cp.median() * 1e-6) / 1e12;
    char size[64], perf[64], ref[128];
    snprintf(size, sizeof size, "%dx%d fp32", rows, BP_ROW);
    snprintf(perf, sizeof perf, "%.3f TB/s", tb_s);
    snprintf(ref, sizeof ref, "%.1f%% of 4.28 TB/s (memcpy here %.3f TB/s: %.1f%%)",
             100.0 * tb_s / 4.28, cp_tb_s, 100.0 * tb_s / cp_tb_s);
    g_rows.push_back({"pipeline", size, perf, ref, s_off.median(), s_ctl.median(),
                      paired_ratio(s_off, s_ctl)});
    add_json("{\"kernel\":\"pipeline\",\"rows\":" + std::to_string(rows) +
             ",\"cols\":" + std::to_string(BP_ROW) + ",\"bytes_moved\":" +
             std::to_string(2 * bytes) + ",\"tb_per_s\":" + std::to_string(tb_s) +
             ",\"memcpy\":" + samples_json(s_cp) +
             ",\"latency\":" + timing_json(o, s_off, s_ctl, tm.flush_bytes) + "}");
  }
  d.release();
}

// run: --launches launches of one build, each on poisoned outputs after an
// L2 flush, each waited for and (--check) checked. False: bad usage.
static bool pipeline_run_step(const Options& o, Device& dev, Timer& tm) {
  int rows = 131072;
  if (!o.size.empty() && !parse_int(o.size, 1, &rows)) {
    fprintf(stderr, "bench run: pipeline --size %s: want a number of rows\n", o.size.c_str());
    return false;
  }
  Module m;
  m.load(o.module("pipeline", o.build));
  const int grid = dev.sms;
  PipelineData d;
  d.alloc(rows, tm.st);
  PipelineRun r{pipeline_fn(m), d.in, d.out, d.rowsum, rows, grid, tm.st};
  printf("pipeline run: %s, %d rows x %d floats, grid %d, %d launches, check %s, %s\n",
         m.path.c_str(), rows, BP_ROW, grid, o.launches, o.check.c_str(),
         o.flush ? "L2 flushed before each" : "no L2 flush");
  int nchecked = 0, nbad = 0;
  for (int i = 0; i < o.launches; ++i) {
    r.poison();
    if (o.flush) tm.flush(i);
    r();
    char what[128];
    snprintf(what, sizeof what, "pipeline %s rows=%d launch %d", o.build.c_str(), rows, i);
    sync_watch(tm.st, tm.limit_s, what);
    if (checked(o, i, o.launches)) {
      ++nchecked;
      if (!pipeline_verify(r, what, tm.limit_s, /*quiet=*/i != 0)) ++nbad;
    }
  }
  printf("pipeline run: build %s, %d launches, %d checked, %d wrong\n", o.build.c_str(), o.launches,
         nchecked, nbad);
  d.release();
  return true;
}
