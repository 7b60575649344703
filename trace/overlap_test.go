package trace

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// workedExample is the example of docs/CI.md. CTA 0:
//
//	warp 0 (producer)  load    [0,10)        [20,30)
//	warp 1 (consumer)  compute      [5,25)
//	warp 2 (consumer)  compute                   [28,40)
//
// load is active 20 ns; compute runs on another warp during [5,10),
// [20,25) and [28,30): 12 ns, so overlap(load, compute) = 0.6 in CTA 0.
// CTA 1 overlaps fully for 10 ns: overall (12+10)/(20+10).
func workedExample() []tw {
	return []tw{
		{cta: 0, warp: 0, role: tProducer, first: 0, last: 40, ranges: []rng{{tLoad, 0, 0, 10}, {tLoad, 1, 20, 30}}},
		{cta: 0, warp: 1, role: tConsumer, first: 0, last: 40, ranges: []rng{{tCompute, 0, 5, 25}}},
		{cta: 0, warp: 2, role: tConsumer, first: 0, last: 40, ranges: []rng{{tCompute, 1, 28, 40}}},
		{cta: 1, warp: 0, role: tProducer, first: 100, last: 110, ranges: []rng{{tLoad, 0, 100, 110}}},
		{cta: 1, warp: 1, role: tConsumer, first: 100, last: 110, ranges: []rng{{tCompute, 0, 100, 110}}},
		{cta: 1, warp: 2, role: tConsumer, first: 100, last: 110},
	}
}

func cta(i uint64) [3]uint32 { return [3]uint32{uint32(i), 0, 0} }

func TestOverlapWorkedExample(t *testing.T) {
	a := analyze(t, testMeta(t), workedExample()...)
	c0 := CTAOverlap{CTA: cta(0), CTALinear: 0, OverlappedNs: 12, ActiveNs: 20, Share: 0.6}
	tests := []struct {
		x, y string
		want OverlapResult
	}{
		{"load", "compute", OverlapResult{X: "load", Y: "compute", Overall: 22.0 / 30, OverlappedNs: 22, ActiveNs: 30,
			CTAs: 2, MinCTA: 0.6, Worst: c0}},
		// compute is active [5,25) ∪ [28,40) = 32 ns in CTA 0.
		{"compute", "load", OverlapResult{X: "compute", Y: "load", Overall: 22.0 / 42, OverlappedNs: 22, ActiveNs: 42,
			CTAs: 2, MinCTA: 12.0 / 32, Worst: CTAOverlap{CTA: cta(0), CTALinear: 0, OverlappedNs: 12, ActiveNs: 32, Share: 12.0 / 32}}},
		// The two compute warps of CTA 0 never run together; in CTA 1 one warp computes.
		{"compute", "compute", OverlapResult{X: "compute", Y: "compute", ActiveNs: 42,
			CTAs: 2, Worst: CTAOverlap{CTA: cta(0), CTALinear: 0, ActiveNs: 32}}},
		// other never ran.
		{"other", "load", OverlapResult{X: "other", Y: "load"}},
		{"load", "other", OverlapResult{X: "load", Y: "other", ActiveNs: 30,
			CTAs: 2, Worst: CTAOverlap{CTA: cta(0), CTALinear: 0, ActiveNs: 20}}},
	}
	for _, tc := range tests {
		t.Run(tc.x+","+tc.y, func(t *testing.T) {
			got, err := a.Overlap(tc.x, tc.y)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(1e-12, 0)); diff != "" {
				t.Errorf("Overlap (-want +got):\n%s", diff)
			}
		})
	}
	names, m := a.OverlapMatrix()
	if diff := cmp.Diff([]string{"producer:load", "consumer:compute"}, names); diff != "" {
		t.Errorf("matrix names (-want +got):\n%s", diff)
	}
	wantM := [][]float64{{0, 22.0 / 30}, {22.0 / 42, 0}}
	if diff := cmp.Diff(wantM, m, cmpopts.EquateApprox(1e-12, 0)); diff != "" {
		t.Errorf("matrix (-want +got):\n%s", diff)
	}
}

func TestOverlapErrors(t *testing.T) {
	a := analyze(t, testMeta(t), workedExample()...)
	for _, tc := range []struct{ x, y, want string }{
		{"nope", "load", `overlap(nope, load): no range named "nope" in the launch's name table (ranges: load, compute, other)`},
		{"load", "kick", `overlap(load, kick): no range named "kick" in the launch's name table (ranges: load, compute, other)`},
		{"load", "producer", `overlap(load, producer): no range named "producer" in the launch's name table (ranges: load, compute, other)`},
	} {
		_, err := a.Overlap(tc.x, tc.y)
		var ue *UnknownRangeError
		if err == nil || err.Error() != tc.want || !errors.As(err, &ue) {
			t.Errorf("Overlap(%s, %s) error = %v, want %q as *UnknownRangeError", tc.x, tc.y, err, tc.want)
		}
	}
}

// TestOverlapSameWarp checks that a warp's own ranges never overlap its
// other ranges, and that nested or repeated ranges of one name count once.
func TestOverlapSameWarp(t *testing.T) {
	tests := []struct {
		name               string
		ws                 []tw
		overlapped, active int64
	}{
		{"one-warp", []tw{
			{warp: 0, ranges: []rng{{tLoad, 0, 0, 10}, {tCompute, 0, 0, 10}}},
		}, 0, 10},
		{"other-warp-joins", []tw{
			{warp: 0, ranges: []rng{{tLoad, 0, 0, 10}, {tCompute, 0, 0, 10}}},
			{warp: 1, ranges: []rng{{tCompute, 0, 4, 6}}},
		}, 2, 10},
		{"x-on-two-warps-y-on-one", []tw{
			{warp: 0, ranges: []rng{{tLoad, 0, 0, 10}, {tCompute, 0, 0, 10}}},
			{warp: 1, ranges: []rng{{tLoad, 0, 3, 5}}},
		}, 2, 10},
		{"nested-and-async-count-once", []tw{
			{warp: 0, ranges: []rng{{tLoad, 0, 0, 10}, {tLoad, 1, 2, 4}, {tLoad, 2, 8, 15}}},
			{warp: 1, ranges: []rng{{tCompute, 0, 0, 20}, {tCompute, 1, 1, 3}}},
		}, 15, 15},
		{"touching-ranges-merge", []tw{
			{warp: 0, ranges: []rng{{tLoad, 0, 0, 5}, {tLoad, 0, 5, 10}}},
			{warp: 1, ranges: []rng{{tCompute, 0, 5, 5}, {tCompute, 0, 9, 12}}},
		}, 1, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.ws {
				tc.ws[i].last = 100
			}
			a := analyze(t, testMeta(t), tc.ws...)
			got, err := a.Overlap("load", "compute")
			if err != nil {
				t.Fatal(err)
			}
			if got.OverlappedNs != tc.overlapped || got.ActiveNs != tc.active {
				t.Errorf("overlapped %d active %d, want %d %d", got.OverlappedNs, got.ActiveNs, tc.overlapped, tc.active)
			}
		})
	}
}

// bruteOverlap computes overlap(x, y) of one CTA nanosecond by nanosecond
// (bruteCTA over every role).
func bruteOverlap(ws []tw, x, y uint16, horizon int64) (overlapped, active int64) {
	overlapped, active, _ = bruteCTA(ws, [2]uint16{x, 0}, [2]uint16{y, 0}, horizon)
	return overlapped, active
}

// TestOverlapRandom compares the sweep with the brute force on random CTAs.
func TestOverlapRandom(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	const horizon = 200
	for iter := range 200 {
		nw := 1 + rnd.IntN(4)
		var ws []tw
		for wi := range nw {
			d := tw{cta: 0, warp: uint32(wi), role: uint16(1 + rnd.IntN(2)), last: horizon}
			for range rnd.IntN(6) {
				s := rnd.Int64N(horizon)
				d.ranges = append(d.ranges, rng{tLoad + uint16(rnd.IntN(2)), uint16(rnd.IntN(3)), s, s + rnd.Int64N(40)})
			}
			ws = append(ws, d)
		}
		a := analyze(t, testMeta(t), ws...)
		for _, p := range [][2]uint16{{tLoad, tCompute}, {tCompute, tLoad}, {tLoad, tLoad}, {tCompute, tCompute}} {
			x, y := a.meta.NameText(p[0]), a.meta.NameText(p[1])
			got, err := a.Overlap(x, y)
			if err != nil {
				t.Fatal(err)
			}
			wo, wa := bruteOverlap(ws, p[0], p[1], horizon+40)
			if got.OverlappedNs != wo || got.ActiveNs != wa {
				t.Fatalf("iteration %d overlap(%s, %s) = %d/%d, brute force %d/%d; warps %+v", iter, x, y, got.OverlappedNs, got.ActiveNs, wo, wa, ws)
			}
		}
	}
}

// TestQueryMidStream checks that querying while a CTA is open neither
// changes nor loses it.
func TestQueryMidStream(t *testing.T) {
	ws := workedExample()
	whole := analyze(t, testMeta(t), ws...)
	want, err := whole.Overlap("load", "compute")
	if err != nil {
		t.Fatal(err)
	}
	wantOrder, err := whole.Order("load", "compute")
	if err != nil {
		t.Fatal(err)
	}
	a := NewAnalyzer(testMeta(t))
	for _, d := range ws {
		a.Add(mkWarp(t, d))
		if _, err := a.Overlap("load", "compute"); err != nil {
			t.Fatal(err)
		}
		a.OverlapMatrix()
		if _, err := a.Order("load", "compute"); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := a.Overlap("load", "compute")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Overlap after mid-stream queries (-want +got):\n%s", diff)
	}
	gotOrder, _ := a.Order("load", "compute")
	if diff := cmp.Diff(wantOrder, gotOrder); diff != "" {
		t.Errorf("Order after mid-stream queries (-want +got):\n%s", diff)
	}
}

func TestOrder(t *testing.T) {
	// Producer warp 0 loads stage 0 then 1 then 0 again; consumers compute
	// on them.
	prod := tw{cta: 0, warp: 0, role: tProducer, last: 100, ranges: []rng{{tLoad, 0, 0, 10}, {tLoad, 1, 10, 20}, {tLoad, 0, 20, 30}}}
	tests := []struct {
		name string
		ws   []tw
		want OrderResult
	}{
		{"in-order", []tw{prod,
			{cta: 0, warp: 1, role: tConsumer, last: 100, ranges: []rng{{tCompute, 0, 10, 15}, {tCompute, 1, 20, 25}, {tCompute, 0, 30, 35}}},
			{cta: 0, warp: 2, role: tConsumer, last: 100, ranges: []rng{{tCompute, 0, 12, 14}, {tCompute, 1, 21, 22}}},
		}, OrderResult{A: "load", B: "compute", Checked: 5}},
		{"one-ns-early", []tw{prod,
			{cta: 0, warp: 1, role: tConsumer, last: 100, ranges: []rng{{tCompute, 0, 10, 15}, {tCompute, 1, 20, 25}}},
			{cta: 0, warp: 2, role: tConsumer, last: 100, ranges: []rng{{tCompute, 0, 12, 14}, {tCompute, 1, 19, 22}}},
		}, OrderResult{A: "load", B: "compute", Checked: 4, Violations: 1, Worst: &OrderViolation{
			CTA: cta(0), Payload: 1, Occurrence: 1, B: ref(0, 2), BStart: 19, A: ref(0, 0), AEnd: 20}}},
		{"second-occurrence-early", []tw{prod,
			{cta: 0, warp: 1, role: tConsumer, last: 100, ranges: []rng{{tCompute, 0, 10, 15}, {tCompute, 0, 25, 35}}},
		}, OrderResult{A: "load", B: "compute", Checked: 2, Violations: 1, Worst: &OrderViolation{
			CTA: cta(0), Payload: 0, Occurrence: 2, B: ref(0, 1), BStart: 25, A: ref(0, 0), AEnd: 30}}},
		{"more-computes-than-loads", []tw{prod,
			{cta: 0, warp: 1, role: tConsumer, last: 100, ranges: []rng{{tCompute, 1, 20, 25}, {tCompute, 1, 40, 45}}},
		}, OrderResult{A: "load", B: "compute", Checked: 2, Violations: 1, Worst: &OrderViolation{
			CTA: cta(0), Payload: 1, Occurrence: 2, B: ref(0, 1), BStart: 40, A: ref(0, 0), Missing: true}}},
		{"payload-never-loaded", []tw{prod,
			{cta: 0, warp: 1, role: tConsumer, last: 100, ranges: []rng{{tCompute, 7, 50, 55}}},
		}, OrderResult{A: "load", B: "compute", Checked: 1, Violations: 1, Worst: &OrderViolation{
			CTA: cta(0), Payload: 7, Occurrence: 1, B: ref(0, 1), BStart: 50, Missing: true, NoA: true}}},
		{"cta-without-loads", []tw{prod,
			{cta: 0, warp: 1, role: tConsumer, last: 100, ranges: []rng{{tCompute, 0, 10, 15}}},
			{cta: 1, warp: 1, role: tConsumer, last: 100, ranges: []rng{{tCompute, 3, 10, 15}, {tCompute, 3, 20, 25}}},
		}, OrderResult{A: "load", B: "compute", Checked: 3, Violations: 2, Worst: &OrderViolation{
			CTA: cta(1), CTALinear: 1, Payload: 3, Occurrence: 1, B: ref(1, 1), BStart: 10, Missing: true, NoA: true}}},
		{"two-producers-worst-is-latest", []tw{prod,
			{cta: 0, warp: 3, role: tProducer, last: 100, ranges: []rng{{tLoad, 0, 0, 14}}},
			{cta: 0, warp: 1, role: tConsumer, last: 100, ranges: []rng{{tCompute, 0, 11, 15}}},
		}, OrderResult{A: "load", B: "compute", Checked: 1, Violations: 1, Worst: &OrderViolation{
			CTA: cta(0), Payload: 0, Occurrence: 1, B: ref(0, 1), BStart: 11, A: ref(0, 3), AEnd: 14}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := analyze(t, testMeta(t), tc.ws...)
			got, err := a.Order("load", "compute")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Order (-want +got):\n%s", diff)
			}
		})
	}
	a := analyze(t, testMeta(t), prod)
	if _, err := a.Order("load", "load"); err == nil || err.Error() != "before(load, load): needs two different ranges" {
		t.Errorf("Order(load, load) error = %v", err)
	}
	var ue *UnknownRangeError
	if _, err := a.Order("load", "x"); !errors.As(err, &ue) {
		t.Errorf("Order(load, x) error = %v, want *UnknownRangeError", err)
	}
}

func TestOrderViolationString(t *testing.T) {
	tests := []struct {
		v    OrderViolation
		want string
	}{
		{OrderViolation{CTA: cta(2), Payload: 1, Occurrence: 3, B: ref(2, 1), BStart: 10, A: ref(2, 0), AEnd: 15},
			"cta 2,0,0 payload 1: range 3 of warp 9 (sm 2, cta 2,0,0, warp 1) starts 5 ns before range 3 of warp 8 (sm 2, cta 2,0,0, warp 0) ends"},
		{OrderViolation{CTA: cta(2), Payload: 1, Occurrence: 3, B: ref(2, 1), A: ref(2, 0), Missing: true},
			"cta 2,0,0 payload 1: range 3 of warp 9 (sm 2, cta 2,0,0, warp 1): warp 8 (sm 2, cta 2,0,0, warp 0) has no range 3 with this payload"},
		{OrderViolation{CTA: cta(2), Payload: 1, Occurrence: 1, B: ref(2, 1), Missing: true, NoA: true},
			"cta 2,0,0 payload 1: range 1 of warp 9 (sm 2, cta 2,0,0, warp 1): no A range with this payload in the CTA"},
	}
	for _, tc := range tests {
		if got := tc.v.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

func TestOccupancy(t *testing.T) {
	ws := workedExample()[:3]
	ws = append(ws, tw{cta: 0, warp: 3, role: tConsumer, last: 40, ranges: []rng{{tCompute, 0, 10, 28}, {tCompute, 1, 12, 14}}})
	a := analyze(t, testMeta(t), ws...)
	got, err := a.Occupancy(0)
	if err != nil {
		t.Fatal(err)
	}
	consumer := []OccupancyPoint{{5, 1}, {10, 2}, {25, 1}, {40, 0}}
	want := &Occupancy{CTA: cta(0), Series: []OccupancySeries{
		{Role: "producer", Range: "load", Points: []OccupancyPoint{{0, 1}, {10, 0}, {20, 1}, {30, 0}}},
		{Role: "consumer", Range: "compute", Points: consumer},
		{Role: "", Range: "load", Points: []OccupancyPoint{{0, 1}, {10, 0}, {20, 1}, {30, 0}}},
		{Role: "", Range: "compute", Points: consumer},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Occupancy (-want +got):\n%s", diff)
	}
	// Warp 3 leaves at 28 and warp 2 enters at 28: the count stays 1, so
	// the step function has no point there; the overlap sweep still sees
	// the warp change (compute on w2 vs load on w0 during [28,30)).
	if _, err := a.Occupancy(1); err == nil || err.Error() != "occupancy of cta 1: the analyzer holds only cta 0, the last one added" {
		t.Errorf("Occupancy(1) error = %v", err)
	}
	if _, err := NewAnalyzer(testMeta(t)).Occupancy(0); err == nil {
		t.Error("Occupancy on an empty analyzer: no error")
	}
	// Streaming: the previous CTA is asked for before the next one's warps.
	b := NewAnalyzer(testMeta(t))
	var series int
	for i, d := range workedExample() {
		w := mkWarp(t, d)
		if i > 0 && w.CTALinear != uint64(workedExample()[i-1].cta) {
			occ, err := b.Occupancy(w.CTALinear - 1)
			if err != nil {
				t.Fatal(err)
			}
			series += len(occ.Series)
		}
		b.Add(w)
	}
	occ, err := b.Occupancy(1)
	if err != nil {
		t.Fatal(err)
	}
	series += len(occ.Series)
	if series != 8 {
		t.Errorf("streamed %d series, want 8 (4 per CTA)", series)
	}
}

// TestAnalyzerAllocs checks that adding the warps of a CTA does not allocate
// per range once the scratch buffers have grown.
func TestAnalyzerAllocs(t *testing.T) {
	meta := testMeta(t)
	ws := benchWarps(t, 4, 64)
	a := NewAnalyzer(meta)
	for _, w := range ws {
		a.Add(w)
	}
	a.exact = 1 << 30
	// Re-add the same CTAs (as new CTAs after a different one) and count.
	allocs := testing.AllocsPerRun(5, func() {
		for _, w := range ws {
			a.Add(w)
		}
	})
	// Per pass: the per-CTA result slices and the duration slices grow
	// (amortised); far below one allocation per range (4*4*64 = 1024).
	if allocs > 64 {
		t.Errorf("%g allocations per pass of 1024 ranges", allocs)
	}
}
