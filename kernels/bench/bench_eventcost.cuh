// bench_eventcost.cuh: the event-cost microbenchmark's part of bench.cu
// (included there, not a header of its own). See kernels/bench/eventcost.cu.
//
// Both builds of ev_loop are launched from one process, alternating, and
// each warp's %clock64 cycles around the loop come back in an array of the
// kernel's own. The instrumented build's events store their records only
// where iket gives its launches buffers (`iket run --kernel '^ev_loop$'
// --launch all --capacity ITERS+8 -- bench eventcost ...`): the
// uninstrumented build is not instrumented, so iket leaves its launches as
// they are. Run alone, the instrumented events execute with no buffers to
// record into, and the figure is not what a traced event costs.

// ev_run launches ev_loop once, waits, and returns the mean over warps of
// the loop's cycles.
static double ev_run(CUfunction f, unsigned grid, unsigned block, int iters, Timer& tm,
                     const char* what) {
  const size_t warps = (size_t)grid * block / 32;
  unsigned long long* cycles;
  float* sink;
  CK(cudaMalloc(&cycles, warps * 8));
  CK(cudaMalloc(&sink, (size_t)grid * block * 4));
  CK(cudaMemset(cycles, 0, warps * 8));
  void* args[] = {&cycles, &sink, &iters};
  launch(f, grid, block, 0, tm.st, args);
  sync_watch(tm.st, tm.limit_s, what);
  std::vector<unsigned long long> h(warps);
  CK(cudaMemcpy(h.data(), cycles, warps * 8, cudaMemcpyDeviceToHost));
  double s = 0;
  size_t zero = 0;
  for (auto c : h) {
    s += (double)c;
    zero += c == 0;
  }
  if (zero) fail("%s: %zu of %zu warps wrote no cycle count", what, zero, warps);
  CK(cudaFree(cycles));
  CK(cudaFree(sink));
  return s / warps;
}

static double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

static void eventcost_step(const Options& o, Device& dev, Timer& tm) {
  Module off, on;
  off.load(o.module("eventcost", "off"));
  on.load(o.module("eventcost", "on"));
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
    const char* key;
    unsigned grid, block;
    int iters;
  };
  const Case cases[] = {
      {"latency (1 warp)", "latency", 1, 32, 4096},
      {"throughput", "throughput", (unsigned)(dev.sms * blocks_per_sm), 1024,
       o.quick ? 256 : 1024},
  };
  std::string summary;
  for (const Case& c : cases) {
    if (o.ev_case != "all" && o.ev_case != c.key) continue;
    printf("eventcost %s: %u CTAs of %u threads, %d iterations: %d events per warp of the "
           "instrumented build\n",
           c.key, c.grid, c.block, c.iters, c.iters + 1);
    std::vector<double> d_off, d_on;
    for (int rep = 0; rep < 5; ++rep) {
      d_off.push_back(ev_run(f_off, c.grid, c.block, c.iters, tm, "ev_loop uninstrumented"));
      d_on.push_back(ev_run(f_on, c.grid, c.block, c.iters, tm, "ev_loop instrumented"));
    }
    const double off_c = median_of(d_off), on_c = median_of(d_on);
    const bool tput = c.block > 32;
    // Latency: extra cycles of one warp per event. Throughput: extra SM
    // cycles per event, with warps_per_sm warps sharing the SM.
    const double per = (on_c - off_c) / c.iters / (tput ? warps_per_sm : 1);
    char b[512];
    snprintf(b, sizeof b,
             "event cost, %-16s: %.2f %s per event (%d iterations; loop %.0f -> %.0f "
             "cycles per warp%s)\n",
             c.name, per, tput ? "SM cycles" : "cycles", c.iters, off_c, on_c,
             tput ? (", " + std::to_string(warps_per_sm) + " warps per SM").c_str() : "");
    summary += b;
    add_json(std::string("{\"eventcost\":\"") + c.key + "\",\"iters\":" +
             std::to_string(c.iters) + ",\"grid\":" + std::to_string(c.grid) +
             ",\"block\":" + std::to_string(c.block) +
             ",\"warps_per_sm\":" + std::to_string(tput ? warps_per_sm : 1) +
             ",\"cycles_per_warp_off\":" + std::to_string(off_c) +
             ",\"cycles_per_warp_on\":" + std::to_string(on_c) +
             ",\"cycles_per_event\":" + std::to_string(per) + "}");
  }
  printf("\n%s", summary.c_str());
  write_text(o.out + "/eventcost-" + o.ev_case + ".txt", summary);
}
