package trace_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/iket-trace/iket/check"
	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/perfetto"
	"github.com/iket-trace/iket/report"
	"github.com/iket-trace/iket/trace"
)

// analyzeNames are the names of FuzzAnalyze's launches: two roles, so that
// overlap, order, lag and bubble pair warps of one CTA.
var analyzeNames = []string{"ROLE p", "ROLE c", "RANGE load", "RANGE compute", "RANGE sync", "MARK m"}

// analyzeRules are rules of every kind, over analyzeNames.
var analyzeRules = []string{
	"strict", "no_drops",
	"overlap(p:load, c:compute) >= 0.5", "overlap_min_cta(load, compute) >= 0.5",
	"p50(compute) <= 1us", "p99(load, role=p) <= 1us", "mean(sync) <= 1us", "max(compute) < 10us", "min(load) >= 0ns",
	"count(compute, role=c) == 3", "before(load, compute)",
	"p99(lag(p:load, c:compute)) <= 2us", "min(lag(load, compute)) >= 0ns", "bubble(c:compute, p:load) <= 0.1",
	"p50(compute) <= 1.05 * baseline",
}

// analyzeCapture wraps warp buffers in a capture of two-warp CTAs (see
// wrapWarps).
func analyzeCapture(data []byte) (*trace.Capture, error) {
	return wrapWarps(data, 2, analyzeNames...)
}

// analyzeLaunches are two-CTA pipelines: a producer loading stages, a
// consumer syncing and computing them, in both modes and formats.
func analyzeLaunches() []*emu.Launch {
	var ls []*emu.Launch
	for _, version := range []int{2, 3} {
		for _, mode := range []trace.Mode{trace.ModeStop, trace.ModeWrap} {
			l := &emu.Launch{Kernel: "fuzz", Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{64, 1, 1}, Capacity: fuzzCapacity,
				Mode: mode, Names: emu.MustNames(analyzeNames...), Version: version}
			for c := uint32(0); c < 2; c++ {
				t0 := 1e9 + uint64(c)*1000
				p := l.Warp([3]uint32{c, 0, 0}, 0).Role("p", t0)
				q := l.Warp([3]uint32{c, 0, 0}, 1).Role("c", t0)
				for s := uint64(0); s < 3; s++ {
					p.Push("load", uint16(s), t0+10+100*s).Pop(t0 + 50 + 100*s)
					q.Push("sync", 0, t0+10+100*s).Pop(t0+55+100*s).Push("compute", uint16(s), t0+60+100*s).Pop(t0 + 90 + 100*s)
				}
				q.Mark("m", 1, t0+400)
			}
			ls = append(ls, l)
		}
	}
	return ls
}

// analyzeSeeds are analyzeLaunches' warp buffers, after their mode byte.
func analyzeSeeds(tb testing.TB) [][]byte {
	var seeds [][]byte
	for _, l := range analyzeLaunches() {
		sel := byte(0)
		if l.Mode == trace.ModeWrap {
			sel = 1
		}
		if l.Version == 3 {
			sel |= 4
		}
		seeds = append(seeds, append([]byte{sel}, warpBuffers(tb, l)...))
	}
	return seeds
}

// FuzzAnalyze runs every analysis, rules of every kind, the report and both
// exports on changed warp buffers: none may panic or fail, the figures stay
// numbers in their ranges, every rule result explains itself, and the
// exports stay valid.
func FuzzAnalyze(f *testing.F) {
	for _, seed := range analyzeSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := analyzeCapture(data)
		if err != nil {
			t.Fatalf("wrap fuzz input: %v", err)
		}
		fuzzAll(t, c)
	})
}

// FuzzWhole runs what FuzzAnalyze does on whole captures, resealed after
// the change (so the metadata, its names, grid and capacity, change as
// well as the warps), and merges the capture with itself.
func FuzzWhole(f *testing.F) {
	for _, l := range analyzeLaunches() {
		f.Add(withHostClock(f, l))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := emu.ReadResealed(data)
		if err != nil {
			return // not a capture, or one its reader refuses
		}
		fuzzAll(t, c)
		// Merged, the capture goes on the host's clock: it may lack one,
		// or hold one that does not place it, but no other error.
		var m bytes.Buffer
		err = perfetto.ExportMerged(&m, []*trace.Capture{c, c}, perfetto.Options{})
		switch {
		case err == nil:
			if err := perfetto.CheckValid(bytes.NewReader(m.Bytes())); err != nil {
				t.Fatalf("merged: CheckValid: %v", err)
			}
		case errors.Is(err, trace.ErrNoHostClock), strings.Contains(err.Error(), "host clock:"), strings.Contains(err.Error(), "no warp started"):
		default:
			t.Fatalf("merged: %v", err)
		}
	})
}

// withHostClock is l's capture with a host clock on its launch, as iket run
// -- CMD records one, so that the merge places it.
func withHostClock(tb testing.TB, l *emu.Launch) []byte {
	c := emu.MustRead(tb, l)
	meta := c.Meta
	meta.Launches = slices.Clone(meta.Launches)
	meta.Launches[0].HostClock = &trace.HostClock{RealtimeBefore: 1.7e18, RealtimeAfter: 1.7e18 + 5e6, MonotonicBefore: 5e12, MonotonicAfter: 5e12 + 5e6}
	data, err := io.ReadAll(c.Launch(0).SectionReader())
	if err != nil {
		tb.Fatal(err)
	}
	var b bytes.Buffer
	if err := trace.WriteCapture(&b, &meta, []io.Reader{bytes.NewReader(data)}); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// fuzzAll runs every analysis, the rules and the report on every launch
// of c, and both exports.
func fuzzAll(t *testing.T, c *trace.Capture) {
	for i := range c.NumLaunches() {
		analyzeLaunch(t, c, i)
	}
	// The exports read the same capture: a trace the UI loads, and
	// JSON that parses.
	var pf, js bytes.Buffer
	if err := perfetto.ExportCapture(&pf, c, perfetto.Options{Flows: true, Counters: true}); err != nil {
		t.Fatalf("ExportCapture: %v", err)
	}
	if err := perfetto.CheckValid(bytes.NewReader(pf.Bytes())); err != nil {
		t.Fatalf("CheckValid: %v", err)
	}
	if err := perfetto.WriteJSON(&js, c); err != nil {
		t.Fatalf("WriteJSON: %v", err)
	}
	if !json.Valid(js.Bytes()) {
		t.Fatalf("WriteJSON wrote invalid JSON")
	}
}

// analyzeLaunch runs every analysis, the rules and the report on launch i
// of c (see FuzzAnalyze).
func analyzeLaunch(t *testing.T, c *trace.Capture, i int) {
	col := report.NewCollector(c.Launch(i).Meta, report.Limits{})
	an, err := trace.Analyze(context.Background(), c.Launch(i), trace.Options{}, col.Add)
	if err != nil {
		return // a slot that cannot be read: an error, not a panic
	}
	in := &report.Input{Title: "fuzz", Meta: &c.Meta, Launch: i, Analysis: an}
	col.Fill(in)
	if err := report.Write(io.Discard, in); err != nil {
		t.Fatalf("report: %v", err)
	}
	a := an.Analyzer
	for _, s := range a.Stats() {
		if s.Count > 0 && (math.IsNaN(s.Share) || s.Share < 0 || s.MinNs > s.P50Ns || s.P50Ns > s.MaxNs) {
			t.Fatalf("stats row %+v", s)
		}
	}
	names, m := a.OverlapMatrix()
	for i := range m {
		for j, v := range m[i] {
			if math.IsNaN(v) || v < 0 || v > 1+1e-9 {
				t.Fatalf("overlap(%s, %s) = %g", names[i], names[j], v)
			}
		}
	}
	for _, l := range a.Pipeline().Lags {
		if l.MinNs > l.P50Ns || l.P50Ns > l.MaxNs {
			t.Fatalf("pipeline lag %+v", l)
		}
	}
	for _, x := range names {
		for _, y := range names {
			_, _ = a.Overlap(x, y)
			_, _ = a.Order(x, y)
			_, _ = a.Lag(x, y)
			_, _ = a.Bubble(x, y)
		}
	}
	_ = a.Drops()
	for cta := uint64(0); cta < min(uint64(an.Meta.Grid[0]), 4); cta++ {
		_, _ = a.Occupancy(cta)
	}
	// Rules of every kind evaluate, pass or fail, each with its message,
	// and their table, JSON and JUnit are written.
	rules := make([]check.Rule, len(analyzeRules))
	for i, r := range analyzeRules {
		if rules[i], err = check.ParseExpr(r); err != nil {
			t.Fatalf("rule %q: %v", r, err)
		}
	}
	results := check.Evaluate(rules, an, an)
	for i, res := range results {
		if res.Message == "" {
			t.Fatalf("rule %q: no message (%+v)", analyzeRules[i], res)
		}
	}
	if err := errors.Join(check.WriteTable(io.Discard, results), check.WriteJSON(io.Discard, results),
		check.WriteJUnit(io.Discard, "fuzz", results)); err != nil {
		t.Fatalf("rule results: %v", err)
	}
}
