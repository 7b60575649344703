// bench_pipeline.cuh: the pipeline kernel's part of bench.cu (included there,
// not a header of its own): correctness, timing and the traced launch.
//
// Constants mirror kernels/hopper/pipeline.cu.
#define BP_ROW 4096
#define BP_THREADS 160
#define BP_WARPS 5
#define BP_SMEM (8 * 4096 * 4)

struct PipelineRun {
  CUfunction f;
  float *in, *out, *rowsum;
  int rows, grid;
  float scale = 1.5f, bias = -0.25f;
  cudaStream_t st;
  void operator()() {
    void* args[] = {&in, &out, &rowsum, &rows, &scale, &bias};
    launch(f, grid, BP_THREADS, BP_SMEM, st, args);
  }
};

// Capacity so that no warp drops: the producer records 1 + 4 events per row
// of its CTA, a consumer 1 + 6 per row it owns.
static uint32_t pipeline_capacity(int rows, int grid) {
  const int local = (rows + grid - 1) / grid;
  return (uint32_t)(4 * local + 16);
}

// Runs once on fresh (NaN-poisoned) outputs and checks everything: every
// element and row sum on the device, a sample of rows on the host in double.
static bool pipeline_check_run(PipelineRun& run, const char* label,
                               double limit_s) {
  const size_t n = (size_t)run.rows * BP_ROW;
  CK(cudaMemsetAsync(run.out, 0xff, n * 4, run.st));
  CK(cudaMemsetAsync(run.rowsum, 0xff, (size_t)run.rows * 4, run.st));
  run();
  char what[128];
  snprintf(what, sizeof what, "pipeline %s rows=%d", label, run.rows);
  sync_watch(run.st, limit_s, what);

  unsigned long long* d;
  CK(cudaMalloc(&d, 4 * sizeof(unsigned long long)));
  unsigned long long init[4] = {0, 0, ~0ull, ~0ull};
  CK(cudaMemcpy(d, init, sizeof init, cudaMemcpyHostToDevice));
  pipeline_check<<<1024, 256, 0, run.st>>>(run.in, run.out, run.rowsum,
                                            run.rows, BP_ROW, run.scale,
                                            run.bias, d, d + 2);
  CK(cudaGetLastError());
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
  printf("pipeline %-13s rows=%-7d %s\n", label, run.rows,
         ok ? "correct (all elements and row sums on the device, 32 rows on the host)"
            : "WRONG");
  return ok;
}

static void pipeline_step(const Options& o, Device& dev, Timer& tm,
                          bool check_only, bool trace) {
  Module off, on, dbg, ctl;
  off.load(o.modules + "/pipeline_off.cubin");
  on.load(o.modules + "/pipeline_on.cubin");
  // The timing's control: the uninstrumented cubin loaded a second time, or
  // --control's (then checked like the others below).
  const bool timing = !check_only && !trace;
  if (timing) ctl.load(o.control_dir() + "/pipeline_off.cubin");
  Trace tr;
  tr.attach(on);
  const int grid = dev.sms;
  std::vector<int> sizes;
  if (trace)
    sizes = {grid * 8};
  else if (check_only)
    sizes = {grid * 3 + 5, o.quick ? 8192 : 131072};
  else
    sizes = {o.quick ? 8192 : 131072};
  const int max_rows = *std::max_element(sizes.begin(), sizes.end());

  float *in, *out, *rowsum;
  CK(cudaMalloc(&in, (size_t)max_rows * BP_ROW * 4));
  CK(cudaMalloc(&out, (size_t)max_rows * BP_ROW * 4));
  CK(cudaMalloc(&rowsum, (size_t)max_rows * 4));
  fill_f32<<<4096, 256, 0, tm.st>>>(in, (size_t)max_rows * BP_ROW, 1u);
  CK(cudaGetLastError());
  sync_watch(tm.st, 30, "fill pipeline input");

  std::vector<std::pair<const char*, Module*>> builds = {{"uninstrumented", &off},
                                                         {"instrumented", &on}};
  if (check_only) {
    dbg.load(o.modules + "/pipeline_dbg.cubin");
    builds.insert(builds.begin(), {"debug", &dbg});
  }
  if (timing && !o.control.empty()) builds.push_back({"control", &ctl});
  for (auto& b : builds)
    CU(cuFuncSetAttribute(b.second->fn("pipeline"),
                          CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, BP_SMEM));
  if (timing)
    CU(cuFuncSetAttribute(ctl.fn("pipeline"),
                          CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, BP_SMEM));

  for (int rows : sizes) {
    const uint32_t cap = trace ? 64u : pipeline_capacity(rows, grid);
    if (trace && pipeline_capacity(rows, grid) > cap) {
      fail("pipeline trace: capacity %u too small for %d rows", cap, rows);
      return;
    }
    tr.alloc((uint64_t)grid * BP_WARPS, BP_WARPS, cap);
    PipelineRun r_off{off.fn("pipeline"), in, out, rowsum, rows, grid};
    PipelineRun r_on{on.fn("pipeline"), in, out, rowsum, rows, grid};
    r_off.st = r_on.st = tm.st;

    // Correctness of every build first.
    bool ok = true;
    for (auto& b : builds) {
      PipelineRun r = r_off;
      r.f = b.second->fn("pipeline");
      ok = pipeline_check_run(r, b.first, tm.limit_s) && ok;
    }
    {
      std::string msg;
      uint64_t events;
      uint32_t maxc;
      const bool hok = check_headers(tr.copy(), tr.warps, cap, &events, &maxc, &msg);
      printf("pipeline instrumented rows=%d trace: %s\n", rows, msg.c_str());
      if (!hok) fail("pipeline rows=%d: trace buffers: %s", rows, msg.c_str());
      ok = ok && hok;
    }
    if (check_only || !ok) continue;

    if (trace) {
      // The committed capture: one clean traced launch, then its latency.
      tr.clear();
      r_on();
      sync_watch(tm.st, tm.limit_s, "pipeline traced launch");
      std::vector<unsigned char> bufs = tr.copy();
      std::string msg;
      uint64_t events;
      uint32_t maxc;
      if (!check_headers(bufs, tr.warps, cap, &events, &maxc, &msg)) {
        fail("pipeline traced launch: %s", msg.c_str());
        continue;
      }
      Samples s_off, s_on;
      tm.interleave({{r_off, &s_off}, {r_on, &s_on}}, o.warmup, o.rounds,
                    "pipeline trace timing");
      LaunchInfo li;
      li.kernel = "pipeline";
      li.source = "kernels/hopper/pipeline.cu";
      li.names = tr.names;
      li.version = tr.version;
      li.grid[0] = grid;
      li.block[0] = BP_THREADS;
      li.shared_bytes = BP_SMEM;
      li.warps_per_cta = BP_WARPS;
      li.warps = tr.warps;
      li.capacity = cap;
      li.latency = latency_json(s_off, s_on, o.warmup, o.rounds, tm.flush_bytes);
      if (!write_capture(o.out + "/trace-pipeline.iket", li, bufs))
        g_failed = true;
      continue;
    }

    // Timing: the copy engine's device-to-device bandwidth with the same
    // method, then both builds interleaved.
    const size_t bytes = (size_t)rows * BP_ROW * 4;
    Samples s_cp, s_cp2;
    auto copy = [&]() { CK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice, tm.st)); };
    tm.interleave({{copy, &s_cp}, {copy, &s_cp2}}, 1, 5, "device copy timing");
    Samples s_off, s_on, s_ctl;
    PipelineRun r_ctl = r_off;
    r_ctl.f = ctl.fn("pipeline");
    tm.interleave({{r_off, &s_off}, {r_on, &s_on}, {r_ctl, &s_ctl}},
                    o.warmup, o.rounds, "pipeline timing");
    // The timed launches must not have dropped anything either.
    std::string msg;
    uint64_t events;
    uint32_t maxc;
    if (!check_headers(tr.copy(), tr.warps, cap, &events, &maxc, &msg))
      fail("pipeline timing: instrumented launch: %s", msg.c_str());
    const double tb_s = 2.0 * bytes / (s_off.median() * 1e-6) / 1e12;
    const double cp_tb_s = 2.0 * bytes / (s_cp.median() * 1e-6) / 1e12;
    char size[64], perf[64], ref[128];
    snprintf(size, sizeof size, "%dx%d fp32", rows, BP_ROW);
    snprintf(perf, sizeof perf, "%.3f TB/s", tb_s);
    snprintf(ref, sizeof ref, "%.1f%% of 4.28 TB/s (memcpy here %.3f TB/s: %.1f%%)",
             100.0 * tb_s / 4.28, cp_tb_s, 100.0 * tb_s / cp_tb_s);
    g_rows.push_back(
        {"pipeline", size, perf, ref, s_off.median(), s_on.median(), s_ctl.median(),
           paired_ratio(s_off, s_on)});
    add_json("{\"kernel\":\"pipeline\",\"rows\":" + std::to_string(rows) +
             ",\"cols\":" + std::to_string(BP_ROW) + ",\"bytes_moved\":" +
             std::to_string(2 * bytes) + ",\"tb_per_s\":" + std::to_string(tb_s) +
             ",\"memcpy\":" + samples_json(s_cp) + ",\"latency\":" +
             latency_json(s_off, s_on, o.warmup, o.rounds, tm.flush_bytes, &s_ctl) +
             ",\"trace\":\"" + json_escape(msg) + "\"}");
  }
  tr.release();
  CK(cudaFree(in));
  CK(cudaFree(out));
  CK(cudaFree(rowsum));
}
