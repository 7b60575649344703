package trace

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// sharedName is a CTA where both roles run "other" (a wait, as
// wait_for_data in kernels/examples/warp_roles.cu):
//
//	warp 0 (producer)  load [0,10)  other [10,20)
//	warp 1 (consumer)  other [0,20)               compute [20,30)
func sharedName() []tw {
	return []tw{
		{cta: 0, warp: 0, role: tProducer, last: 30, ranges: []rng{{tLoad, 0, 0, 10}, {tOther, 0, 10, 20}}},
		{cta: 0, warp: 1, role: tConsumer, last: 30, ranges: []rng{{tOther, 0, 0, 20}, {tCompute, 0, 20, 30}}},
	}
}

func TestSeriesSharedName(t *testing.T) {
	a := analyze(t, testMeta(t), sharedName()...)
	var rows []string
	for _, s := range a.Stats() {
		rows = append(rows, Series{Role: s.Role, Range: s.Range}.String())
	}
	// The all-roles row only for the name both roles ran.
	if diff := cmp.Diff([]string{"producer:load", "producer:other", "consumer:compute", "consumer:other", "other"}, rows); diff != "" {
		t.Errorf("Stats rows (-want +got):\n%s", diff)
	}
	names, _ := a.OverlapMatrix()
	if diff := cmp.Diff(rows, names); diff != "" {
		t.Errorf("matrix names (-want +got):\n%s", diff)
	}
	tests := []struct {
		x, y               string
		overlapped, active int64
	}{
		{"producer:other", "consumer:other", 10, 10},
		{"consumer:other", "producer:other", 10, 20},
		{"other", "load", 10, 20},          // every role's other: [0,20); load on warp 0 overlaps warp 1's
		{"load", "other", 10, 10},          // load is the producer's only: plain name
		{"producer:load", "other", 10, 10}, // same
		{"other", "other", 10, 20},         // both warps in other during [10,20)
		{"consumer:compute", "producer:other", 0, 10},
	}
	for _, tc := range tests {
		got, err := a.Overlap(tc.x, tc.y)
		if err != nil {
			t.Fatal(err)
		}
		if got.OverlappedNs != tc.overlapped || got.ActiveNs != tc.active {
			t.Errorf("overlap(%s, %s) = %d/%d, want %d/%d", tc.x, tc.y, got.OverlappedNs, got.ActiveNs, tc.overlapped, tc.active)
		}
	}
	s, err := a.RangeStat("", "consumer:other")
	if err != nil || s.Role != "consumer" || s.Count != 1 || s.MaxNs != 20 {
		t.Errorf("RangeStat(consumer:other) = %+v, %v", s, err)
	}
	if _, err := a.RangeStat("producer", "consumer:other"); err == nil {
		t.Error("RangeStat with two different roles: no error")
	}
	_, err = a.Overlap("nobody:load", "compute")
	var re *UnknownRoleError
	if !errors.As(err, &re) || err.Error() != `overlap(nobody:load, compute): no role named "nobody" in the launch's name table (roles: producer, consumer)` {
		t.Errorf("unknown role: %v", err)
	}
	// A declared role that never ran the range: an empty result.
	if o, err := a.Overlap("consumer:load", "compute"); err != nil || o.ActiveNs != 0 {
		t.Errorf("overlap(consumer:load, compute) = %+v, %v", o, err)
	}
}

func TestLag(t *testing.T) {
	// Producer warp 0 loads stages 0-3, [10s, 10s+5); consumer warps 1 and
	// 2 compute each stage s from 10s+5+s (lag s), warp 2 stage 3 before
	// its load ended (lag -2), and warp 1 a stage 9 that no load has.
	prod := tw{cta: 0, warp: 0, role: tProducer, last: 100}
	c1 := tw{cta: 0, warp: 1, role: tConsumer, last: 100}
	c2 := tw{cta: 0, warp: 2, role: tConsumer, last: 100}
	for s := int64(0); s < 4; s++ {
		prod.ranges = append(prod.ranges, rng{tLoad, uint16(s), 10 * s, 10*s + 5})
		c1.ranges = append(c1.ranges, rng{tCompute, uint16(s), 10*s + 5 + s, 10*s + 9})
		if s < 3 {
			c2.ranges = append(c2.ranges, rng{tCompute, uint16(s), 10*s + 5 + s, 10*s + 9})
		}
	}
	c2.ranges = append(c2.ranges, rng{tCompute, 3, 33, 34})
	c1.ranges = append(c1.ranges, rng{tCompute, 9, 60, 61})
	a := analyze(t, testMeta(t), prod, c1, c2)
	got, err := a.Lag("producer:load", "consumer:compute")
	if err != nil {
		t.Fatal(err)
	}
	// Lags: 0 1 2 3 (warp 1), 0 1 2 -2 (warp 2): sorted -2 0 0 1 1 2 2 3.
	want := LagResult{X: "producer:load", Y: "consumer:compute", Count: 8, Unmatched: 1, Early: 1,
		MeanNs: 7.0 / 8, P50Ns: 1, P90Ns: 3, P99Ns: 3, MinNs: -2, MaxNs: 3, Exact: true,
		Worst: LagSample{CTA: cta(0), Payload: 3, Occurrence: 1, X: ref(0, 0), XEnd: 35, Y: ref(0, 1), YStart: 38, LagNs: 3},
		Stages: []StageLag{
			{Payload: 0, Count: 2, MeanNs: 0, MinNs: 0, MaxNs: 0},
			{Payload: 1, Count: 2, MeanNs: 1, MinNs: 1, MaxNs: 1},
			{Payload: 2, Count: 2, MeanNs: 2, MinNs: 2, MaxNs: 2},
			{Payload: 3, Count: 2, MeanNs: 0.5, MinNs: -2, MaxNs: 3},
		}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Lag (-want +got):\n%s", diff)
	}
	// The pipeline lists the pair (and not the way back, whose median is negative).
	p := a.Pipeline()
	if len(p.Lags) != 1 || p.Lags[0].X != "producer:load" || p.Lags[0].Y != "consumer:compute" {
		t.Errorf("Pipeline lags = %+v", p.Lags)
	}
	if _, err := a.Lag("load", "load"); err == nil {
		t.Error("lag of a range with itself: no error")
	}
	// No x at all: every y range is unmatched.
	if l, err := a.Lag("other", "compute"); err != nil || l.Count != 0 || l.Unmatched != 9 {
		t.Errorf("Lag(other, compute) = %+v, %v", l, err)
	}
}

// TestPipelineUnstaged: a range that carries no stage (payload 0 on every
// one, an epilogue) is not paired by stage with one that has stages.
func TestPipelineUnstaged(t *testing.T) {
	prod := tw{cta: 0, warp: 0, role: tProducer, last: 100}
	cons := tw{cta: 0, warp: 1, role: tConsumer, last: 100}
	for s := int64(0); s < 4; s++ {
		prod.ranges = append(prod.ranges, rng{tLoad, uint16(s), 10 * s, 10*s + 5})
		cons.ranges = append(cons.ranges, rng{tCompute, uint16(s), 10*s + 6, 10*s + 9})
	}
	cons.ranges = append(cons.ranges, rng{tOther, 0, 60, 90}) // the epilogue
	p := analyze(t, testMeta(t), prod, cons).Pipeline()
	var pairs []string
	for _, l := range p.Lags {
		pairs = append(pairs, l.X+" -> "+l.Y)
	}
	if diff := cmp.Diff([]string{"producer:load -> consumer:compute"}, pairs); diff != "" {
		t.Errorf("Pipeline lags (-want +got):\n%s", diff)
	}
	found := false
	for _, b := range p.Bubbles {
		found = found || b.X == "producer:load" && b.Y == "consumer:other"
	}
	if !found {
		t.Errorf("Pipeline bubbles %+v: want load -> other's still there", p.Bubbles)
	}
}

// TestPipelineUneven: unstaged ranges pair by occurrence only where both
// sides run as many of them per warp: a producer's four loads against the
// consumers' four computes, not against one epilogue. A warp that runs one
// fewer (a short last tile) keeps the pair, and so do stop-mode consumers
// that dropped events and kept the first two computes of four.
func TestPipelineUneven(t *testing.T) {
	// ctaOf is CTA c: a producer loading 4 times, two consumers computing
	// 4 times (warp 2: n2) and one epilogue each, dropping dropped events.
	ctaOf := func(c uint64, n2 int64, dropped uint64) []tw {
		base := int64(c) * 1000
		ws := []tw{{cta: c, warp: 0, role: tProducer, first: base, last: base + 100}}
		for w := uint32(1); w <= 2; w++ {
			cons := tw{cta: c, warp: w, role: tConsumer, first: base, last: base + 100, dropped: dropped}
			n := int64(4)
			if w == 2 {
				n = n2
			}
			for s := int64(0); s < n; s++ {
				cons.ranges = append(cons.ranges, rng{tCompute, 0, base + 10*s + 6, base + 10*s + 9})
			}
			if dropped == 0 {
				cons.ranges = append(cons.ranges, rng{tOther, 0, base + 60, base + 90}) // the epilogue
			}
			ws = append(ws, cons)
		}
		for s := int64(0); s < 4; s++ {
			ws[0].ranges = append(ws[0].ranges, rng{tLoad, 0, base + 10*s, base + 10*s + 5})
		}
		return ws
	}
	cut := func(n int) []tw { // both consumers keep the first n computes
		ws := ctaOf(0, int64(n), 2)
		ws[1].ranges = ws[1].ranges[:n]
		return ws
	}
	tests := []struct {
		name     string
		ws       []tw
		epilogue bool
	}{
		{"even", ctaOf(0, 4, 0), true},
		{"one warp short", append(ctaOf(0, 4, 0), ctaOf(1, 3, 0)...), true},
		{"stop mode, events dropped", cut(2), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := analyze(t, testMeta(t), tc.ws...)
			var pairs []string
			for _, l := range a.Pipeline().Lags {
				pairs = append(pairs, l.X+" -> "+l.Y)
			}
			if diff := cmp.Diff([]string{"producer:load -> consumer:compute"}, pairs); diff != "" {
				t.Errorf("Pipeline lags (-want +got):\n%s", diff)
			}
			if !tc.epilogue {
				return
			}
			// Asked for, the uneven pair is measured: the first load's end to
			// each epilogue's start.
			if l, err := a.Lag("producer:load", "consumer:other"); err != nil || l.Count == 0 || l.MinNs != 55 {
				t.Errorf("Lag(producer:load, consumer:other) = %+v, %v", l, err)
			}
		})
	}
}

// TestLagSketch checks the quantiles of negative and positive lags past the
// exact limit against the exact values.
func TestLagSketch(t *testing.T) {
	var d, e signedDurations
	rnd := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		v := rnd.Int64N(20000) - 5000
		d.add(v, 100)
		e.add(v, 1<<30)
	}
	q, exact := d.quantiles()
	qe, _ := e.quantiles()
	if exact {
		t.Fatal("past the limit the quantiles say exact")
	}
	for _, p := range []float64{0.01, 0.1, 0.2, 0.5, 0.9, 0.99} {
		got, want := q(p), qe(p)
		if diff := got - want; diff > SketchRelativeError*abs(want)+1 || -diff > SketchRelativeError*abs(want)+1 {
			t.Errorf("p%g: sketch %g, exact %g", 100*p, got, want)
		}
	}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

func TestBubble(t *testing.T) {
	// CTA 0 spans [0,40): the producer waits (other) [10,30), the consumer
	// computes [0,15) and [25,40): bubble(consumer:compute, producer:other)
	// = [15,25) = 10 of 40. CTA 1 spans [100,110): no wait.
	ws := []tw{
		{cta: 0, warp: 0, role: tProducer, first: 0, last: 40, ranges: []rng{{tOther, 0, 10, 30}}},
		{cta: 0, warp: 1, role: tConsumer, first: 0, last: 40, ranges: []rng{{tCompute, 0, 0, 15}, {tCompute, 1, 25, 40}}},
		{cta: 1, warp: 0, role: tProducer, first: 100, last: 110, ranges: []rng{{tLoad, 0, 100, 105}}},
		{cta: 1, warp: 1, role: tConsumer, first: 100, last: 110, ranges: []rng{{tCompute, 0, 105, 110}}},
	}
	a := analyze(t, testMeta(t), ws...)
	got, err := a.Bubble("consumer:compute", "producer:other")
	if err != nil {
		t.Fatal(err)
	}
	want := BubbleResult{X: "consumer:compute", Y: "producer:other", Overall: 10.0 / 50, OfY: 0.5, BubbleNs: 10, SpanNs: 50, YActiveNs: 20,
		Worst: CTABubble{CTA: cta(0), BubbleNs: 10, SpanNs: 40, Share: 0.25}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Bubble (-want +got):\n%s", diff)
	}
	// The other way round: the consumer computes while the producer
	// does not wait: [0,10) and [30,40) in CTA 0, all of CTA 1's.
	got, _ = a.Bubble("producer:other", "consumer:compute")
	if got.BubbleNs != 25 || got.SpanNs != 50 {
		t.Errorf("Bubble(producer:other, consumer:compute) = %+v", got)
	}
}

// bruteCTA measures overlap and bubble of selections (name, role or 0 for
// every role) over one CTA, nanosecond by nanosecond.
func bruteCTA(ws []tw, x, y [2]uint16, horizon int64) (overlapped, active, bubble int64) {
	in := func(w tw, sel [2]uint16, t int64) bool {
		if sel[1] != 0 && w.role != sel[1] {
			return false
		}
		for _, r := range w.ranges {
			if r.name == sel[0] && r.start <= t && t < r.end {
				return true
			}
		}
		return false
	}
	for t := int64(0); t < horizon; t++ {
		anyX, anyY, hit := false, false, false
		for i, w := range ws {
			anyY = anyY || in(w, y, t)
			if !in(w, x, t) {
				continue
			}
			anyX = true
			for j, v := range ws {
				if i != j && in(v, y, t) {
					hit = true
				}
			}
		}
		if anyX {
			active++
		}
		if hit {
			overlapped++
		}
		if anyY && !anyX {
			bubble++
		}
	}
	return overlapped, active, bubble
}

// TestSeriesRandom compares role-qualified overlap and bubble with the
// brute force on random CTAs whose warps run both names on both roles.
func TestSeriesRandom(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	const horizon = 200
	sels := []struct {
		text string
		sel  [2]uint16
	}{{"load", [2]uint16{tLoad, 0}}, {"compute", [2]uint16{tCompute, 0}},
		{"producer:load", [2]uint16{tLoad, tProducer}}, {"consumer:load", [2]uint16{tLoad, tConsumer}},
		{"producer:compute", [2]uint16{tCompute, tProducer}}, {"consumer:compute", [2]uint16{tCompute, tConsumer}}}
	for iter := range 200 {
		nw := 1 + rnd.IntN(4)
		var ws []tw
		for wi := range nw {
			d := tw{cta: 0, warp: uint32(wi), role: uint16(1 + rnd.IntN(2)), last: horizon + 40}
			for range rnd.IntN(6) {
				s := rnd.Int64N(horizon)
				d.ranges = append(d.ranges, rng{tLoad + uint16(rnd.IntN(2)), uint16(rnd.IntN(3)), s, s + rnd.Int64N(40)})
			}
			ws = append(ws, d)
		}
		a := analyze(t, testMeta(t), ws...)
		for _, x := range sels {
			for _, y := range sels {
				o, err := a.Overlap(x.text, y.text)
				if err != nil {
					t.Fatal(err)
				}
				b, err := a.Bubble(x.text, y.text)
				if err != nil {
					t.Fatal(err)
				}
				wo, wa, wb := bruteCTA(ws, x.sel, y.sel, horizon+40)
				if o.OverlappedNs != wo || o.ActiveNs != wa || b.BubbleNs != wb {
					t.Fatalf("iteration %d (%s, %s): overlap %d/%d bubble %d, brute force %d/%d %d; warps %+v",
						iter, x.text, y.text, o.OverlappedNs, o.ActiveNs, b.BubbleNs, wo, wa, wb, ws)
				}
			}
		}
	}
}

// TestSeriesLater checks a series that first runs after other series' CTAs
// closed: overlap, bubble, order and lag still account those CTAs.
func TestSeriesLater(t *testing.T) {
	ws := []tw{
		{cta: 0, warp: 0, role: tProducer, last: 10, ranges: []rng{{tLoad, 0, 0, 10}}},
		{cta: 1, warp: 0, role: tProducer, first: 100, last: 120, ranges: []rng{{tLoad, 0, 100, 110}}},
		{cta: 1, warp: 1, role: tConsumer, first: 100, last: 120, ranges: []rng{{tCompute, 0, 105, 120}}},
	}
	a := analyze(t, testMeta(t), ws...)
	o, _ := a.Overlap("load", "compute")
	if diff := cmp.Diff(OverlapResult{X: "load", Y: "compute", Overall: 0.25, OverlappedNs: 5, ActiveNs: 20, CTAs: 2,
		Worst: CTAOverlap{CTA: cta(0), ActiveNs: 10}}, o, cmpopts.EquateApprox(1e-12, 0)); diff != "" {
		t.Errorf("Overlap (-want +got):\n%s", diff)
	}
	b, _ := a.Bubble("compute", "load")
	if b.BubbleNs != 15 || b.SpanNs != 30 || b.Worst.CTALinear != 0 {
		t.Errorf("Bubble(compute, load) = %+v", b)
	}
	ord, _ := a.Order("compute", "load")
	if ord.Checked != 2 || ord.Violations != 2 || ord.Worst == nil || !ord.Worst.NoA || ord.Worst.CTALinear != 0 {
		t.Errorf("Order(compute, load) = %+v", ord)
	}
	l, _ := a.Lag("compute", "load")
	if l.Count != 1 || l.Unmatched != 1 || l.MinNs != -20 { // CTA 0 has no compute; in CTA 1 load starts 20 ns before compute ends
		t.Errorf("Lag(compute, load) = %+v", l)
	}
}
