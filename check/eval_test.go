package check

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/iket-trace/iket/trace"
)

// Name ids of the test launch.
const (
	idProducer uint16 = iota + 1
	idConsumer
	idLoad
	idCompute
	idIdle
)

func testMeta(t *testing.T) *trace.LaunchMeta {
	t.Helper()
	names, err := trace.ParseNameTable("iket-names 1\nROLE producer\nROLE consumer\nRANGE producer_load\nRANGE consumer_compute\nRANGE idle\n")
	if err != nil {
		t.Fatal(err)
	}
	return &trace.LaunchMeta{Kernel: "k", WarpsPerCTA: 4, Capacity: 16, Mode: trace.ModeStop, Names: names}
}

type rg struct {
	name       uint16
	payload    uint16
	start, end int64
}

type wp struct {
	cta       uint64
	warp      uint32
	role      uint16
	dropped   uint64
	saturated bool // the warp's event counter saturated: counts are lower bounds
	ranges    []rg
}

// analyzer adds hand-built warps (slot cta*4+warp, alive [0, 200)).
func analyzer(t *testing.T, meta *trace.LaunchMeta, ws ...wp) *trace.Analyzer {
	t.Helper()
	a := trace.NewAnalyzer(meta)
	for _, d := range ws {
		w := trace.Warp{Slot: d.cta*4 + uint64(d.warp), SM: uint32(d.cta), CTA: [3]uint32{uint32(d.cta), 0, 0},
			Warp: d.warp, CTALinear: d.cta, Role: d.role, Started: true, Finished: true, Last: 200,
			Stored: 2 * len(d.ranges), Dropped: d.dropped, CountSaturated: d.saturated}
		w.Count = uint64(w.Stored) + d.dropped
		for _, r := range d.ranges {
			w.Ranges = append(w.Ranges, trace.Range{Name: r.name, Payload: r.payload, Start: r.start, End: r.end})
		}
		slices.SortStableFunc(w.Ranges, func(p, q trace.Range) int { return int(p.Start - q.Start) })
		a.Add(&w)
	}
	return a
}

// pipeline is the worked example of docs/CI.md: in CTA 0, load is active
// 20 ns and compute runs on another warp during 12 of them (0.6); CTA 1
// overlaps fully for 10 ns; overall 22/30. Compute durations are 20, 12 and
// 10 ns; consumer warps run 1, 1, 1 and 0 computes. Every compute starts
// before its load ends: by 5, 2 and 10 ns.
func pipeline() []wp {
	return []wp{
		{cta: 0, warp: 0, role: idProducer, ranges: []rg{{idLoad, 0, 0, 10}, {idLoad, 1, 20, 30}}},
		{cta: 0, warp: 1, role: idConsumer, ranges: []rg{{idCompute, 0, 5, 25}}},
		{cta: 0, warp: 2, role: idConsumer, ranges: []rg{{idCompute, 1, 28, 40}}},
		{cta: 1, warp: 0, role: idProducer, ranges: []rg{{idLoad, 0, 100, 110}}},
		{cta: 1, warp: 1, role: idConsumer, ranges: []rg{{idCompute, 0, 100, 110}}},
		{cta: 1, warp: 2, role: idConsumer},
	}
}

// ordered is a pipeline where every compute starts when its load ends.
func ordered() []wp {
	return []wp{
		{cta: 0, warp: 0, role: idProducer, ranges: []rg{{idLoad, 0, 0, 10}, {idLoad, 1, 10, 20}, {idLoad, 0, 20, 30}}},
		{cta: 0, warp: 1, role: idConsumer, ranges: []rg{{idCompute, 0, 10, 20}, {idCompute, 1, 20, 30}, {idCompute, 0, 30, 40}}},
		{cta: 0, warp: 2, role: idConsumer, ranges: []rg{{idCompute, 0, 11, 20}, {idCompute, 1, 21, 30}, {idCompute, 0, 31, 40}}},
	}
}

func mustRule(t *testing.T, expr string) Rule {
	t.Helper()
	r, err := ParseExpr(expr)
	if err != nil {
		t.Fatalf("ParseExpr(%q): %v", expr, err)
	}
	return r
}

// TestEvaluate sees every rule kind pass and fail with bounds just either
// side of the measured value.
func TestEvaluate(t *testing.T) {
	meta := testMeta(t)
	withLatency := *meta
	withLatency.Latency = &trace.Latency{Ratio: 1.05,
		Uninstrumented: trace.Samples{MedianUS: 10, RoundsUS: []float64{10, 10}}, Instrumented: trace.Samples{MedianUS: 10.5}}
	withDormant := withLatency
	withDormant.Latency = &trace.Latency{Ratio: 1.05, Uninstrumented: withLatency.Latency.Uninstrumented, Instrumented: withLatency.Latency.Instrumented,
		Dormant: &trace.Samples{MedianUS: 10.2, RoundsUS: []float64{10.1, 10.3}}, DormantRatio: 1.02,
		Control: &trace.Samples{MedianUS: 9.9, RoundsUS: []float64{9.8, 10.0}}, ControlRatio: 0.99}
	pipe := &trace.Analysis{Meta: meta, Analyzer: analyzer(t, meta, pipeline()...)}
	ord := &trace.Analysis{Meta: meta, Analyzer: analyzer(t, meta, ordered()...)}
	lat := &trace.Analysis{Meta: &withLatency, Analyzer: pipe.Analyzer}
	dorm := &trace.Analysis{Meta: &withDormant, Analyzer: pipe.Analyzer}
	dropped := analyzer(t, meta, wp{cta: 0, warp: 0, dropped: 1}, wp{cta: 0, warp: 1, dropped: 0})
	saturated := analyzer(t, meta, wp{cta: 0, warp: 0, dropped: 3, saturated: true})
	clean := &trace.Analysis{Meta: meta, Analyzer: pipe.Analyzer, Summary: trace.Summary{Warps: 6,
		Violations: map[trace.ViolationKind]int{trace.DroppedEvents: 4}}}
	bad := &trace.Analysis{Meta: meta, Analyzer: pipe.Analyzer, Summary: trace.Summary{Warps: 6, WarpErrors: 1,
		Violations: map[trace.ViolationKind]int{trace.PopMismatch: 1, trace.DroppedEvents: 4}},
		Violations: []trace.Violation{
			{Kind: trace.DroppedEvents, Slot: 1, Index: -1, Detail: "dropped"},
			{Kind: trace.PopMismatch, Slot: 3, Index: 4, Detail: `pop of "a" closes "b"`}}}
	listed := &trace.Analysis{Meta: meta, Analyzer: pipe.Analyzer, Violations: []trace.Violation{{Kind: trace.UnclosedRange, Slot: 2, Index: 1, Detail: "open"}}}

	tests := []struct {
		expr  string
		in    *trace.Analysis
		pass  bool
		value float64
		worst string // substring
		msg   string // substring
	}{
		// strict: drops do not count; pairing violations and corrupt slots do.
		{"strict", clean, true, 0, "", "no pairing violations in 6 warps"},
		{"strict", bad, false, 2, `warp 3 (sm 0, cta 0,0,0, warp 0): event 4: pop of "a" closes "b"`, "1 violations (1 pop-mismatch) and 1 corrupt warp slots"},
		{"strict", listed, false, 1, "open", "1 violations (1 unclosed)"},
		// no_drops
		{"no_drops", pipe, true, 0, "", "no events dropped"},
		{"no_drops", &trace.Analysis{Meta: meta, Analyzer: dropped}, false, 1, "warp 0 (sm 0, cta 0,0,0, warp 0) dropped 1 of 1 events", "1 of 1 events dropped in 1 warps (capacity 16, stop mode)"},
		{"no_drops", &trace.Analysis{Meta: meta, Analyzer: saturated}, false, 3, "warp 0 (sm 0, cta 0,0,0, warp 0) dropped at least 3 of at least 3 events", "at least 3 of at least 3 events dropped in 1 warps (capacity 16, stop mode)"},
		// overlap: 22/30 = 0.7333.
		{"overlap(producer_load, consumer_compute) >= 0.73", pipe, true, 22.0 / 30, "cta 0,0,0: 0.600 (12 of 20 ns)", "73.3% of producer_load's time"},
		{"overlap(producer_load, consumer_compute) >= 0.74", pipe, false, 22.0 / 30, "cta 0,0,0", ""},
		{"overlap(producer_load, consumer_compute) <= 74%", pipe, true, 22.0 / 30, "", ""},
		{"overlap(producer_load, consumer_compute) <= 73%", pipe, false, 22.0 / 30, "", ""},
		{"overlap(producer_load, idle) >= 0", pipe, true, 0, "", ""},
		{"overlap(idle, producer_load) >= 0", pipe, false, 0, "", "range idle never ran"},
		{"overlap(nope, producer_load) >= 0", pipe, false, 0, "", `no range named "nope"`},
		// overlap_min_cta: CTA 0 has 0.6.
		{"overlap_min_cta(producer_load, consumer_compute) >= 0.6", pipe, true, 0.6, "cta 0,0,0", "lowest CTA overlap 0.600 (overall 0.733 over 2 CTAs)"},
		{"overlap_min_cta(producer_load, consumer_compute) >= 0.61", pipe, false, 0.6, "cta 0,0,0", "lowest CTA overlap 0.600"},
		// durations 10, 12, 20 ns: p50 = 12, p99 = 20.
		{"p99(consumer_compute) <= 20ns", pipe, true, 20, "longest 20ns on warp 1 (sm 0, cta 0,0,0, warp 1)", "p99 of 3 consumer_compute ranges is 20ns"},
		{"p99(consumer_compute) <= 0.019us", pipe, false, 20, "", ""},
		{"p50(consumer_compute, role=consumer) >= 12ns", pipe, true, 12, "", "on role consumer"},
		{"p50(consumer_compute, role=consumer) > 12ns", pipe, false, 12, "", ""},
		{"mean(consumer_compute) == 14ns", pipe, true, 14, "", ""},
		{"min(consumer_compute) > 10ns", pipe, false, 10, "", ""},
		{"max(producer_load) <= 10ns", pipe, true, 10, "", ""},
		{"p90(producer_load, role=consumer) <= 1ms", pipe, false, 0, "", "no producer_load ranges on role consumer"},
		{"p90(producer_load, role=warper) <= 1ms", pipe, false, 0, "", `no warp has role "warper"`},
		// count: consumers ran 1, 1, 1 and 0; 3 in all.
		{"count(consumer_compute) == 3", pipe, true, 3, "", "3 consumer_compute ranges in 3 warps"},
		{"count(consumer_compute) == 4", pipe, false, 3, "", ""},
		{"count(consumer_compute, role=consumer) >= 0", pipe, true, 0, "", "the 4 warps of role consumer ran 0 to 1 consumer_compute ranges each"},
		{"count(consumer_compute, role=consumer) >= 1", pipe, false, 0, "warp 6 (sm 1, cta 1,0,0, warp 2) ran 0", ""},
		{"count(consumer_compute, role=consumer) <= 1", pipe, true, 1, "", ""},
		{"count(consumer_compute, role=consumer) < 1", pipe, false, 1, "warp 1 (sm 0, cta 0,0,0, warp 1) ran 1", ""},
		{"count(consumer_compute, role=consumer) == 1", pipe, false, 0, "ran 0", ""},
		{"count(consumer_compute, role=consumer) == 0", pipe, false, 1, "ran 1", ""},
		{"count(consumer_compute, role=consumer) == 3", ord, true, 3, "", ""},
		{"count(consumer_compute, role=consumer) == 2", ord, false, 3, "", ""},
		// before
		{"before(producer_load, consumer_compute)", ord, true, 0, "", "0 of 6 consumer_compute ranges started before their matching producer_load ended"},
		{"before(producer_load, consumer_compute)", pipe, false, 3, "cta 1,0,0 payload 0: range 1 of warp 5 (sm 1, cta 1,0,0, warp 1) starts 10 ns before range 1 of warp 4 (sm 1, cta 1,0,0, warp 0) ends", "3 of 3"},
		{"before(consumer_compute, idle)", ord, false, 0, "", "range idle never ran"},
		{"before(producer_load, producer_load)", ord, false, 0, "", "needs two different ranges"},
		// latency_ratio
		{"latency_ratio <= 1.05", lat, true, 1.05, "", "instrumented 10.500 us / uninstrumented 10.000 us (medians of 2 rounds) = 1.0500"},
		{"latency_ratio <= 1.049", lat, false, 1.05, "", ""},
		{"latency_ratio <= 2", pipe, false, 0, "", "the capture has no latency measurement"},
		// dormant_ratio
		{"dormant_ratio <= 1.02", dorm, true, 1.02, "", "instrumented, not traced 10.200 us / uninstrumented 10.000 us (medians of 2 launches) = 1.0200"},
		{"dormant_ratio < 1.02", dorm, false, 1.02, "", ""},
		{"dormant_ratio <= 2", lat, false, 0, "", "the capture has no untraced times of the instrumented build"},
		// control_ratio
		{"control_ratio >= 0.99", dorm, true, 0.99, "", "uninstrumented again 9.900 us / uninstrumented 10.000 us (medians of 2 rounds) = 0.9900"},
		{"control_ratio > 0.99", dorm, false, 0.99, "", ""},
		{"control_ratio <= 2", lat, false, 0, "", "the capture has no control times"},
		// role-qualified series
		{"p99(consumer:consumer_compute) <= 20ns", pipe, true, 20, "", "p99 of 3 consumer:consumer_compute ranges is 20ns"},
		{"overlap(producer:producer_load, consumer:consumer_compute) >= 0.73", pipe, true, 22.0 / 30, "", ""},
		{"overlap(consumer:producer_load, consumer_compute) >= 0", pipe, false, 0, "", "range consumer:producer_load never ran"},
		{"count(nobody:producer_load) >= 0", pipe, false, 0, "", `no warp has role "nobody"`},
		// lag: in ord, warp 1 starts each compute as its load ends (0)
		// and warp 2 1 ns later; in pipe every compute starts early.
		{"p99(lag(producer:producer_load, consumer:consumer_compute)) <= 1ns", ord, true, 1, "stage 0: warp 2 (sm 0, cta 0,0,0, warp 2) started 1ns after", "over 6 stages' ranges is 1ns (0 started early, 0 unmatched)"},
		{"p99(lag(producer_load, consumer_compute)) < 1ns", ord, false, 1, "", ""},
		{"p50(lag(producer_load, consumer_compute)) == 0ns", ord, true, 0, "", ""},
		{"max(lag(producer_load, consumer_compute)) < 0ns", pipe, true, -2, "", "3 started early"},
		{"mean(lag(idle, consumer_compute)) < 0ns", pipe, false, 0, "", "no consumer_compute range matched a idle range of its stage (3 unmatched)"},
		// bubble: in CTA 0 compute runs without load during [10,20) and
		// [30,40); CTA 1 none; each CTA spans [0,200).
		{"bubble(producer_load, consumer_compute) <= 0.05", pipe, true, 0.05, "", "during 5.0% of the CTAs' time (20 of 400 ns"},
		{"bubble(producer_load, consumer_compute) < 5%", pipe, false, 0.05, "cta 0,0,0: 0.100 (20 of 200 ns)", ""},
		{"bubble(idle, idle) < 5%", pipe, false, 0, "", "neither idle nor idle ran"},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			r := mustRule(t, tc.expr)
			got := Evaluate([]Rule{r}, tc.in, nil)
			if len(got) != 1 {
				t.Fatalf("Evaluate returned %d results, want 1", len(got))
			}
			res := got[0]
			if res.Pass != tc.pass {
				t.Errorf("Pass = %v, want %v (value %g, message %q)", res.Pass, tc.pass, res.Value, res.Message)
			}
			if diff := res.Value - tc.value; diff > 1e-12 || diff < -1e-12 {
				t.Errorf("Value = %g, want %g", res.Value, tc.value)
			}
			if res.Bound != r.Bound {
				t.Errorf("Bound = %g, want %g", res.Bound, r.Bound)
			}
			if !strings.Contains(res.Worst, tc.worst) {
				t.Errorf("Worst = %q, want it to contain %q", res.Worst, tc.worst)
			}
			if !strings.Contains(res.Message, tc.msg) {
				t.Errorf("Message = %q, want it to contain %q", res.Message, tc.msg)
			}
		})
	}
}

// TestEvaluateBaseline checks rules whose bound is a factor of the same
// measure on a baseline capture.
func TestEvaluateBaseline(t *testing.T) {
	meta := testMeta(t)
	base := &trace.Analysis{Meta: meta, Analyzer: analyzer(t, meta, pipeline()...)} // compute p50 12 ns
	in := &trace.Analysis{Meta: meta, Analyzer: analyzer(t, meta, ordered()...)}
	tests := []struct {
		expr         string
		base         *trace.Analysis
		pass         bool
		value, bound float64
		msg          string
	}{
		{"p50(consumer:consumer_compute) <= 1.05 * baseline", base, true, 9, 12.6, ""},
		{"p50(consumer_compute) <= 0.5 * baseline", base, false, 9, 6, ""},
		{"count(consumer_compute) >= baseline", base, true, 6, 3, ""},
		{"p50(consumer_compute) <= baseline", nil, false, 0, 0, "relative to a baseline and none was given"},
		{"overlap(idle, producer_load) >= baseline", base, false, 0, 0, "on the baseline: range idle never ran"},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			res := Evaluate([]Rule{mustRule(t, tc.expr)}, in, tc.base)[0]
			if res.Pass != tc.pass || res.Value != tc.value || math.Abs(res.Bound-tc.bound) > 1e-9 || !strings.Contains(res.Message, tc.msg) {
				t.Errorf("got pass %v value %g bound %g message %q; want %v %g %g %q", res.Pass, res.Value, res.Bound, res.Message, tc.pass, tc.value, tc.bound, tc.msg)
			}
		})
	}
}

func TestEvaluateNoAnalyzer(t *testing.T) {
	rs := Evaluate([]Rule{mustRule(t, "no_drops"), mustRule(t, "strict")}, nil, nil)
	if rs[0].Pass || rs[0].Message != "no analysis to check no_drops against" {
		t.Errorf("no_drops without analyzer: %+v", rs[0])
	}
	if !rs[1].Pass {
		t.Errorf("strict on an empty input failed: %+v", rs[1])
	}
	// The latency rules read the capture's metadata alone.
	in := &trace.Analysis{Meta: &trace.LaunchMeta{}}
	in.Meta.Latency = &trace.Latency{Ratio: 1.1, DormantRatio: 1.05, ControlRatio: 1.01,
		Dormant: &trace.Samples{}, Control: &trace.Samples{}}
	for _, expr := range []string{"latency_ratio <= 1.1", "dormant_ratio <= 1.05", "control_ratio <= 1.01"} {
		if r := Evaluate([]Rule{mustRule(t, expr)}, in, nil)[0]; !r.Pass {
			t.Errorf("%s without an analyzer: %+v", expr, r)
		}
	}
}

func TestFormatNs(t *testing.T) {
	for _, tc := range []struct {
		ns   float64
		want string
	}{{950, "950ns"}, {12.345, "12.35ns"}, {2310, "2.31us"}, {1.5e6, "1.50ms"}, {2e9, "2.000s"}, {-3000, "-3.00us"}} {
		if got := FormatNs(tc.ns); got != tc.want {
			t.Errorf("FormatNs(%g) = %q, want %q", tc.ns, got, tc.want)
		}
	}
}
