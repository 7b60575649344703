package trace

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Name ids of testMeta.
const (
	tProducer uint16 = iota + 1
	tConsumer
	tLoad
	tCompute
	tOther
	tMark
)

func testMeta(t testing.TB) *LaunchMeta {
	t.Helper()
	names, err := ParseNameTable("iket-names 1\nROLE producer\nROLE consumer\nRANGE load\nRANGE compute\nRANGE other\nMARK kick\n")
	if err != nil {
		t.Fatal(err)
	}
	return &LaunchMeta{Kernel: "k", WarpsPerCTA: 4, Capacity: 64, Mode: ModeStop, Names: names}
}

// rng is a range of a hand-built warp: name, payload, [start, end).
type rng struct {
	name       uint16
	payload    uint16
	start, end int64
}

// tw describes a hand-built warp.
type tw struct {
	cta         uint64
	warp        uint32
	role        uint16
	first, last int64
	ranges      []rng
	dropped     uint64
	saturated   bool // the warp's count saturated: Count and Dropped are lower bounds
	notStarted  bool
	flags       RangeFlags // applied to every range
}

// mkWarp builds a decoded warp; slot = cta*4 + warp, sm = cta.
func mkWarp(t testing.TB, d tw) *Warp {
	t.Helper()
	w := &Warp{
		Slot: d.cta*4 + uint64(d.warp), SM: uint32(d.cta), CTA: [3]uint32{uint32(d.cta), 0, 0},
		Warp: d.warp, CTALinear: d.cta, Role: d.role, Started: !d.notStarted, Finished: !d.notStarted,
		First: d.first, Last: d.last, Dropped: d.dropped, CountSaturated: d.saturated,
	}
	w.Stored = 2 * len(d.ranges)
	w.Count = uint64(w.Stored) + d.dropped
	for _, r := range d.ranges {
		w.Ranges = append(w.Ranges, Range{Name: r.name, Payload: r.payload, Start: r.start, End: r.end, Flags: d.flags})
	}
	slices.SortStableFunc(w.Ranges, cmpRange)
	return w
}

// analyze feeds the warps, reusing one Warp value as a decoder does.
func analyze(t testing.TB, meta *LaunchMeta, ws ...tw) *Analyzer {
	t.Helper()
	a := NewAnalyzer(meta)
	var w Warp
	for _, d := range ws {
		w = *mkWarp(t, d)
		a.Add(&w)
		// Scribble over w as a decoder reusing it would.
		for i := range w.Ranges {
			w.Ranges[i] = Range{Name: 9999, Start: -1, End: -7}
		}
	}
	return a
}

func ref(cta uint64, warp uint32) WarpRef {
	return WarpRef{Slot: cta*4 + uint64(warp), SM: uint32(cta), CTA: [3]uint32{uint32(cta), 0, 0}, Warp: warp}
}

func findRow(t *testing.T, rows []RangeStats, role, name string) RangeStats {
	t.Helper()
	for _, r := range rows {
		if r.Role == role && r.Range == name {
			return r
		}
	}
	t.Fatalf("no row for role %q range %q in %+v", role, name, rows)
	return RangeStats{}
}

func TestStats(t *testing.T) {
	meta := testMeta(t)
	// Consumers: warp 1 runs compute 10 times (durations 1..10), warp 2
	// twice (100, 200), warp 3 never. Producer warp 0 runs load with
	// durations 5 and 7. A warp with no role runs "other" once.
	var c1 []rng
	for i := int64(1); i <= 10; i++ {
		c1 = append(c1, rng{tCompute, 0, 1000 * i, 1000*i + i})
	}
	a := analyze(t, meta,
		tw{cta: 0, warp: 0, role: tProducer, first: 0, last: 100, ranges: []rng{{tLoad, 0, 10, 15}, {tLoad, 1, 20, 27}}},
		tw{cta: 0, warp: 1, role: tConsumer, first: 0, last: 20000, ranges: c1},
		tw{cta: 0, warp: 2, role: tConsumer, first: 0, last: 3000, ranges: []rng{{tCompute, 0, 0, 100}, {tCompute, 0, 1000, 1200}}},
		tw{cta: 0, warp: 3, role: tConsumer, first: 0, last: 50},
		tw{cta: 1, warp: 0, first: 0, last: 10, ranges: []rng{{tOther, 0, 0, 4}}},
		tw{cta: 1, warp: 1, notStarted: true, ranges: []rng{{tOther, 0, 0, 4}}},
	)
	got := a.Stats()
	want := []RangeStats{
		{Role: NoRole, Range: "other", Count: 1, TotalNs: 4, MeanNs: 4, P50Ns: 4, P90Ns: 4, P99Ns: 4, MinNs: 4, MaxNs: 4,
			Exact: true, Share: 0.4, Warps: 1, RoleWarps: 1, MinPerWarp: 1, MaxPerWarp: 1, MinWarp: ref(1, 0), MaxWarp: ref(1, 0), LongestWarp: ref(1, 0)},
		{Role: "producer", Range: "load", Count: 2, TotalNs: 12, MeanNs: 6, P50Ns: 5, P90Ns: 7, P99Ns: 7, MinNs: 5, MaxNs: 7,
			Exact: true, Share: 0.12, Warps: 1, RoleWarps: 1, MinPerWarp: 2, MaxPerWarp: 2, MinWarp: ref(0, 0), MaxWarp: ref(0, 0), LongestWarp: ref(0, 0)},
		// 12 durations 1..10, 100, 200: p50 = 6th = 6, p90 = ceil(10.8) = 11th = 100, p99 = 12th = 200.
		{Role: "consumer", Range: "compute", Count: 12, TotalNs: 355, MeanNs: 355.0 / 12, P50Ns: 6, P90Ns: 100, P99Ns: 200, MinNs: 1, MaxNs: 200,
			Exact: true, Share: 355.0 / 23000, Warps: 2, RoleWarps: 3, MinPerWarp: 0, MaxPerWarp: 10, MinWarp: ref(0, 3), MaxWarp: ref(0, 1), LongestWarp: ref(0, 2)},
		// No all-roles rows: each name ran on one role only.
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(1e-12, 0)); diff != "" {
		t.Errorf("Stats (-want +got):\n%s", diff)
	}
	if added, started := a.Warps(); added != 6 || started != 5 {
		t.Errorf("Warps() = %d, %d, want 6, 5", added, started)
	}
	if diff := cmp.Diff([]string{NoRole, "producer", "consumer"}, a.Roles()); diff != "" {
		t.Errorf("Roles (-want +got):\n%s", diff)
	}
}

func TestRangeStat(t *testing.T) {
	meta := testMeta(t)
	a := analyze(t, meta,
		tw{cta: 0, warp: 0, role: tProducer, first: 0, last: 100, ranges: []rng{{tLoad, 0, 10, 15}}},
		tw{cta: 0, warp: 1, role: tConsumer, first: 0, last: 100},
	)
	tests := []struct {
		role, name string
		want       RangeStats
		err        string
	}{
		{role: "producer", name: "load", want: RangeStats{Role: "producer", Range: "load", Count: 1, TotalNs: 5, MeanNs: 5,
			P50Ns: 5, P90Ns: 5, P99Ns: 5, MinNs: 5, MaxNs: 5, Exact: true, Share: 0.05, Warps: 1, RoleWarps: 1,
			MinPerWarp: 1, MaxPerWarp: 1, MinWarp: ref(0, 0), MaxWarp: ref(0, 0), LongestWarp: ref(0, 0)}},
		{role: "consumer", name: "load", want: RangeStats{Role: "consumer", Range: "load", Exact: true, RoleWarps: 1,
			MinWarp: ref(0, 1), MaxWarp: ref(0, 1)}},
		{role: "nobody", name: "load", err: `range stats of "load": no warp has role "nobody" (roles: producer, consumer)`},
		{role: "", name: "kick", err: `no range named "kick" in the launch's name table (ranges: load, compute, other)`},
	}
	for _, tc := range tests {
		t.Run(tc.role+"/"+tc.name, func(t *testing.T) {
			got, err := a.RangeStat(tc.role, tc.name)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("RangeStat error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("RangeStat (-want +got):\n%s", diff)
			}
		})
	}
	_, err := a.RangeStat("", "nope")
	var ue *UnknownRangeError
	if !errors.As(err, &ue) || ue.Name != "nope" {
		t.Errorf("RangeStat(nope) error %v is not an *UnknownRangeError for nope", err)
	}
}

// TestMissingWarp checks which warp is named as having run none of a range,
// wherever the gap is among the role's warps.
func TestMissingWarp(t *testing.T) {
	meta := testMeta(t)
	has := tw{role: tConsumer, first: 0, last: 10, ranges: []rng{{tCompute, 0, 1, 2}}}
	none := tw{role: tConsumer, first: 0, last: 10}
	tests := []struct {
		name    string
		pattern []bool // warp i runs compute
		want    uint32 // warp named as MinWarp
	}{
		{"first", []bool{false, true, true}, 0},
		{"middle", []bool{true, false, true}, 1},
		{"last", []bool{true, true, false}, 2},
		{"two-gaps", []bool{true, false, true, false}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ws []tw
			for i, p := range tc.pattern {
				d := none
				if p {
					d = has
				}
				d.warp = uint32(i)
				ws = append(ws, d)
			}
			a := analyze(t, meta, ws...)
			s := findRow(t, a.Stats(), "consumer", "compute")
			if s.MinPerWarp != 0 || s.MinWarp != ref(0, tc.want) {
				t.Errorf("MinPerWarp %d MinWarp %v, want 0 and %v", s.MinPerWarp, s.MinWarp, ref(0, tc.want))
			}
		})
	}
}

func TestIncomplete(t *testing.T) {
	a := analyze(t, testMeta(t),
		tw{cta: 0, warp: 0, role: tProducer, first: 0, last: 100, flags: RangeUnclosed, ranges: []rng{{tLoad, 0, 10, 15}, {tLoad, 0, 10, 9}}})
	s := findRow(t, a.Stats(), "producer", "load")
	// An inverted range counts with duration 0.
	if s.Count != 2 || s.Incomplete != 2 || s.MinNs != 0 || s.TotalNs != 5 {
		t.Errorf("got count %d incomplete %d min %g total %d, want 2 2 0 5", s.Count, s.Incomplete, s.MinNs, s.TotalNs)
	}
}

// TestSketch lowers the exact limit so durations switch to the histogram,
// and checks every quantile against the exact nearest-rank value.
func TestSketch(t *testing.T) {
	meta := testMeta(t)
	var exact []int64
	a := NewAnalyzer(meta)
	a.exact = 50
	for wi := range 8 {
		var rs []rng
		for i := range 100 {
			d := int64(1 + (i*7919+wi*104729)%100000) // spread over 1..1e5 ns
			if i%17 == 0 {
				d = 0
			}
			exact = append(exact, d)
			rs = append(rs, rng{tCompute, 0, int64(i) * 200000, int64(i)*200000 + d})
		}
		role := tConsumer
		if wi%2 == 0 {
			role = tProducer
		}
		a.Add(mkWarp(t, tw{cta: 0, warp: uint32(wi), role: role, first: 0, last: 1 << 30, ranges: rs}))
	}
	slices.Sort(exact)
	rank := func(p float64) float64 { return float64(exact[nearestRank(p, uint64(len(exact)))-1]) }
	s := findRow(t, a.Stats(), "", "compute")
	if s.Exact {
		t.Fatal("aggregate row claims exact quantiles past the limit")
	}
	if s.Count != 800 || s.MinNs != float64(exact[0]) || s.MaxNs != float64(exact[799]) {
		t.Errorf("count %d min %g max %g, want 800 %d %d", s.Count, s.MinNs, s.MaxNs, exact[0], exact[799])
	}
	for _, q := range []struct {
		p   float64
		got float64
	}{{0.5, s.P50Ns}, {0.9, s.P90Ns}, {0.99, s.P99Ns}} {
		want := rank(q.p)
		if math.Abs(q.got-want) > SketchRelativeError*want+1e-9 {
			t.Errorf("p%g = %g, exact %g: error beyond %g relative", 100*q.p, q.got, want, SketchRelativeError)
		}
	}
	// Each role has 400 durations, past the limit of 50 too.
	if r := findRow(t, a.Stats(), "producer", "compute"); r.Exact {
		t.Error("per-role row claims exact quantiles past the limit")
	}
}

func TestLogSketchZeroAndEmpty(t *testing.T) {
	var s logSketch
	if got := s.quantile(0.5); got != 0 {
		t.Errorf("empty sketch quantile = %g, want 0", got)
	}
	s.add(0)
	s.add(0)
	s.add(1000)
	if got := s.quantile(0.5); got != 0 {
		t.Errorf("p50 of {0,0,1000} = %g, want 0", got)
	}
	if got := s.quantile(1); math.Abs(got-1000) > 1000*SketchRelativeError {
		t.Errorf("p100 of {0,0,1000} = %g, want about 1000", got)
	}
}

func TestDrops(t *testing.T) {
	a := analyze(t, testMeta(t),
		tw{cta: 0, warp: 0, first: 0, last: 1, dropped: 5},
		tw{cta: 0, warp: 1, first: 0, last: 1},
		tw{cta: 1, warp: 2, first: 0, last: 1, dropped: 9, ranges: []rng{{tLoad, 0, 0, 1}}},
	)
	got := a.Drops()
	want := Drops{Total: 14, Attempted: 16, WarpsDropping: 2, Warps: []WarpDrops{
		{WarpRef: ref(0, 0), Count: 5, Dropped: 5},
		{WarpRef: ref(1, 2), Count: 11, Stored: 2, Dropped: 9},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Drops (-want +got):\n%s", diff)
	}
	if w, ok := got.Worst(); !ok || w.WarpRef != ref(1, 2) {
		t.Errorf("Worst = %v, %v; want warp %v", w, ok, ref(1, 2))
	}
	if _, ok := (&Drops{}).Worst(); ok {
		t.Error("Worst of no drops reports one")
	}

	// A saturated count makes the drops lower bounds.
	a = analyze(t, testMeta(t),
		tw{cta: 0, warp: 0, first: 0, last: 1, dropped: 5},
		tw{cta: 0, warp: 1, first: 0, last: 1, dropped: 7, saturated: true},
	)
	want = Drops{Total: 12, Attempted: 12, AtLeast: true, WarpsDropping: 2, Warps: []WarpDrops{
		{WarpRef: ref(0, 0), Count: 5, Dropped: 5},
		{WarpRef: ref(0, 1), Count: 7, Dropped: 7, AtLeast: true},
	}}
	if diff := cmp.Diff(want, a.Drops()); diff != "" {
		t.Errorf("saturated Drops (-want +got):\n%s", diff)
	}
}

func TestWarpRefString(t *testing.T) {
	if got, want := ref(7, 1).String(), "warp 29 (sm 7, cta 7,0,0, warp 1)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// benchWarps builds ctas CTAs of 4 warps (1 producer, 3 consumers), each warp
// with n ranges.
func benchWarps(b testing.TB, ctas, n int) []*Warp {
	b.Helper()
	var ws []*Warp
	for c := range ctas {
		for wi := range 4 {
			d := tw{cta: uint64(c), warp: uint32(wi), role: tConsumer, first: 0, last: int64(n) * 100}
			name := tCompute
			if wi == 0 {
				d.role, name = tProducer, tLoad
			}
			for i := range n {
				s := int64(i)*100 + int64(wi)*30
				d.ranges = append(d.ranges, rng{name, uint16(i % 4), s, s + 60 + int64(i%7)})
			}
			ws = append(ws, mkWarp(b, d))
		}
	}
	return ws
}

func BenchmarkAnalyzerAdd(b *testing.B) {
	meta := testMeta(b)
	ws := benchWarps(b, 64, 256)
	ranges := 0
	for _, w := range ws {
		ranges += len(w.Ranges)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		a := NewAnalyzer(meta)
		for _, w := range ws {
			a.Add(w)
		}
		if _, err := a.Overlap("load", "compute"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*ranges), "ns/range")
}
