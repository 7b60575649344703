// bench_eventcost.cuh: the event-cost microbenchmark's part of bench.cu
// (included there, not a header of its own). See kernels/bench/eventcost.cu.

struct LoopResult {
  double mean_cycles = 0;  // per warp, over warps
  double us = 0;           // CUDA-event time of the launch
};

static LoopResult ev_run(CUfunction f, unsigned grid, unsigned block, int iters,
                         Timer& tm, const char* what) {
  const size_t warps = (size_t)grid * block / 32;
  unsigned long long* cycles;
  float* sink;
  CK(cudaMalloc(&cycles, warps * 8));
  CK(cudaMalloc(&sink, (size_t)grid * block * 4));
  CK(cudaMemset(cycles, 0, warps * 8));
  void* args[] = {&cycles, &sink, &iters};
  LoopResult r;
  r.us = tm.once([&]() { launch(f, grid, block, 0, tm.st, args); }, 0, what);
  std::vector<unsigned long long> h(warps);
  CK(cudaMemcpy(h.data(), cycles, warps * 8, cudaMemcpyDeviceToHost));
  double s = 0;
  for (auto c : h) s += (double)c;
  r.mean_cycles = s / warps;
  CK(cudaFree(cycles));
  CK(cudaFree(sink));
  return r;
}

static double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

static void eventcost_step(const Options& o, Device& dev, Timer& tm) {
  Module off, on;
  off.load(o.modules + "/eventcost_off.cubin");
  on.load(o.modules + "/eventcost_on.cubin");
  Trace tr;
  tr.attach(on);
  CUfunction f_off = off.fn("ev_loop"), f_on = on.fn("ev_loop");

  int blocks_per_sm = 0;
  CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, f_on, 1024, 0));
  const int warps_per_sm = blocks_per_sm * 32;
  if (blocks_per_sm < 1) {
    fail("eventcost: ev_loop with 1024 threads fits no CTA on an SM (occupancy %d)",
         blocks_per_sm);
    return;
  }

  struct Case {
    const char* name;
    unsigned grid, block;
    int iters;
  };
  const Case cases[] = {
      {"latency (1 warp)", 1, 32, 4096},
      {"throughput", (unsigned)(dev.sms * std::max(blocks_per_sm, 1)), 1024,
       o.quick ? 256 : 1024},
  };
  std::string summary;
  for (const Case& c : cases) {
    const uint32_t cap = (uint32_t)c.iters + 8;
    tr.alloc((uint64_t)c.grid * c.block / 32, c.block / 32, cap);
    std::vector<double> d_off, d_on, t_off, t_on;
    for (int rep = 0; rep < 5; ++rep) {
      LoopResult a = ev_run(f_off, c.grid, c.block, c.iters, tm, "ev_loop uninstrumented");
      LoopResult b = ev_run(f_on, c.grid, c.block, c.iters, tm, "ev_loop instrumented");
      d_off.push_back(a.mean_cycles);
      d_on.push_back(b.mean_cycles);
      t_off.push_back(a.us);
      t_on.push_back(b.us);
    }
    // Every warp recorded its role and one mark per iteration, none dropped.
    std::vector<unsigned char> h = tr.copy();
    size_t wrong = 0;
    for (uint64_t w = 0; w < tr.warps; ++w) {
      uint32_t count;
      memcpy(&count, h.data() + w * stride_of(cap) + 56, 4);
      if (count != (uint32_t)c.iters + 1) ++wrong;
    }
    if (wrong)
      fail("eventcost %s: %zu of %llu warps did not record %d events", c.name, wrong,
           (unsigned long long)tr.warps, c.iters + 1);
    const double off_c = median_of(d_off), on_c = median_of(d_on);
    const bool tput = c.block > 32;
    // Latency: extra cycles of one warp per event. Throughput: extra SM
    // cycles per event, with warps_per_sm warps sharing the SM.
    const double per = (on_c - off_c) / c.iters / (tput ? warps_per_sm : 1);
    char b[512];
    snprintf(b, sizeof b,
             "event cost, %-16s: %.2f %s per event (%d iterations; loop %.0f -> %.0f "
             "cycles per warp%s; kernel %.1f -> %.1f us)\n",
             c.name, per, tput ? "SM cycles" : "cycles", c.iters, off_c, on_c,
             tput ? (", " + std::to_string(warps_per_sm) + " warps per SM").c_str() : "",
             median_of(t_off), median_of(t_on));
    summary += b;
    add_json(std::string("{\"eventcost\":\"") + (tput ? "throughput" : "latency") +
             "\",\"iters\":" + std::to_string(c.iters) +
             ",\"warps_per_sm\":" + std::to_string(tput ? warps_per_sm : 1) +
             ",\"cycles_per_warp_off\":" + std::to_string(off_c) +
             ",\"cycles_per_warp_on\":" + std::to_string(on_c) +
             ",\"cycles_per_event\":" + std::to_string(per) + "}");
  }
  // Stop mode past capacity: 101 events into 16 slots per warp must keep the
  // first 16, count all 101, and write nothing outside the warp's slot (the
  // neighbouring headers stay intact).
  {
    const uint32_t cap = 16;
    const int iters = 100;
    tr.alloc(4, 2, cap);
    ev_run(f_on, 2, 64, iters, tm, "ev_loop overflow");
    std::vector<unsigned char> h = tr.copy();
    int bad = 0;
    for (uint64_t w = 0; w < tr.warps; ++w) {
      const unsigned char* p = h.data() + w * stride_of(cap);
      uint32_t magic, count, flags;
      memcpy(&magic, p, 4);
      memcpy(&count, p + 56, 4);
      memcpy(&flags, p + 60, 4);
      uint64_t scratch;
      memcpy(&scratch, p + 64 + 8 * cap, 8);
      if (magic != 0x57454b49u || (flags & 0xfu) != 3u || count != (uint32_t)iters + 1 ||
          scratch != 0) {
        if (bad++ < 3)
          fail("eventcost overflow: warp slot %llu: magic 0x%08x flags %u count %u "
               "scratch slot 0x%llx, want 0x57454b49, 3, %d, 0 (stop mode stores "
               "nothing past capacity)",
               (unsigned long long)w, magic, flags, count, (unsigned long long)scratch,
               iters + 1);
        continue;
      }
      // Version 2 records hold tag + the clock's high word in their high
      // word: unwrap each event's cycle count forward from the start anchor.
      uint64_t clk;
      memcpy(&clk, p + 32, 8);
      for (uint32_t i = 0; i < cap; ++i) {
        uint64_t rec;
        memcpy(&rec, p + 64 + 8 * i, 8);
        clk += (uint32_t)((uint32_t)rec - (uint32_t)clk);
        const uint32_t tag = (uint32_t)(rec >> 32) - (tr.version >= 2 ? (uint32_t)(clk >> 32) : 0u);
        const uint32_t kind = tag >> 29, payload = tag & 0xffff;
        const uint32_t want_kind = i == 0 ? 6u : 1u, want_payload = i == 0 ? 0u : i - 1;
        if (kind != want_kind || payload != want_payload) {
          if (bad++ < 3)
            fail("eventcost overflow: warp slot %llu record %u: kind %u payload %u, want "
                 "kind %u payload %u",
                 (unsigned long long)w, i, kind, payload, want_kind, want_payload);
          break;
        }
      }
    }
    char b[256];
    snprintf(b, sizeof b,
             "stop mode past capacity (%d events, capacity %u): %s\n", iters + 1, cap,
             bad ? "WRONG" : "first 16 kept, all counted, neighbours intact");
    summary += b;
  }
  tr.release();
  printf("\n%s", summary.c_str());
  const std::string p = o.out + "/eventcost.txt";
  if (FILE* f = fopen(p.c_str(), "w")) {
    fputs(summary.c_str(), f);
    fclose(f);
  }
}
