package report

import (
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/iket-trace/iket/trace"
)

// The synthetic launch has 13 events per warp: a producer has 6 loads, 6
// copies and a mark, a consumer 6 computes, 6 mmas and a mark.
func TestCollectorLimits(t *testing.T) {
	tests := []struct {
		name      string
		lim       Limits
		wantSlots []uint64
		wantOm    Omitted
		clipped   bool
	}{
		{"default keeps all", Limits{}, seq(0, 16), Omitted{}, false},
		{"first warps up to the event bound", Limits{MaxEvents: 13 + 13 + 13 + 13},
			[]uint64{0, 1, 2, 3}, Omitted{Warps: 12}, false},
		{"warp bound", Limits{MaxWarps: 5}, seq(0, 5), Omitted{Warps: 11, Events: 0}, false},
		{"CTA span", Limits{CTAs: &Span{First: 1, Last: 2}}, seq(4, 12), Omitted{Warps: 8, Filtered: 8}, false},
		{"SM span", Limits{SMs: &Span{First: 3, Last: 3}}, seq(12, 16), Omitted{Warps: 12, Filtered: 12}, false},
		{"first warp clipped", Limits{MaxEvents: 5}, []uint64{0}, Omitted{Warps: 15}, true},
	}
	c := synthCapture(t, 4, 4, 64)
	perWarp := eventsPerWarp(t, c)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := synthInput(t, c, tt.lim)
			var slots []uint64
			for _, w := range in.Warps {
				slots = append(slots, w.Slot)
			}
			if diff := cmp.Diff(tt.wantSlots, slots); diff != "" {
				t.Errorf("embedded slots (-want +got):\n%s", diff)
			}
			// Omitted events are the events of the warps left out (and the
			// clipped rest of the first).
			kept := map[uint64]bool{}
			for _, s := range slots {
				kept[s] = true
			}
			tt.wantOm.Events = 0
			for s, n := range perWarp {
				if !kept[uint64(s)] {
					tt.wantOm.Events += uint64(n)
				}
			}
			if tt.clipped {
				tt.wantOm.Events += uint64(perWarp[0] - tt.lim.MaxEvents)
			}
			if diff := cmp.Diff(tt.wantOm, in.Omitted); diff != "" {
				t.Errorf("omitted (-want +got):\n%s", diff)
			}
			if got := len(in.Warps) > 0 && in.Warps[0].Clipped; got != tt.clipped {
				t.Errorf("first warp clipped = %v, want %v", got, tt.clipped)
			}
			if tt.clipped {
				w := in.Warps[0]
				if n := len(w.Ranges) + len(w.Marks); n != tt.lim.MaxEvents {
					t.Errorf("clipped warp keeps %d events, want %d", n, tt.lim.MaxEvents)
				}
			}
			// Whatever is embedded, the strip and the drops cover all 16 warps.
			if d := in.drops; d.Warps != 16 || d.Started != 16 || d.Finished != 15 {
				t.Errorf("collected drops = %+v, want 16 warps, 16 started, 15 finished", *d)
			}
			if d := newTables(in.Analysis, nil, in.drops).Drops; d.Warps != 16 || d.Started != 16 || d.Finished != 15 {
				t.Errorf("drops shown = %+v, want 16 warps, 16 started, 15 finished", *d)
			}
			lo, hi, _ := in.Activity.Span()
			if lo > synthBaseNs || hi < synthBaseNs+3*250+16+7000 {
				t.Errorf("activity span [%d, %d) does not cover the launch", lo, hi)
			}
			page := render(t, in)
			p := extract(t, page)
			if p.Capped.MaxEvents != tt.lim.maxEvents() || p.Capped.MaxWarps != tt.lim.maxWarps() {
				t.Errorf("page states bounds %d events, %d warps; want the collector's %d, %d",
					p.Capped.MaxEvents, p.Capped.MaxWarps, tt.lim.maxEvents(), tt.lim.maxWarps())
			}
			if len(p.Warps) != len(tt.wantSlots) {
				t.Errorf("page embeds %d warps, want %d", len(p.Warps), len(tt.wantSlots))
			}
			notice := strings.Contains(page, `id="capped"`)
			if want := in.Omitted.Warps > 0 || tt.clipped; notice != want {
				t.Errorf("capped notice shown = %v, want %v", notice, want)
			}
		})
	}
}

func seq(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

// eventsPerWarp decodes c and returns each slot's ranges plus marks.
func eventsPerWarp(t *testing.T, c *trace.Capture) []int {
	t.Helper()
	d, err := trace.NewDecoder(c.Launch(0), trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	var w trace.Warp
	for {
		err := d.Next(&w)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, len(w.Ranges)+len(w.Marks))
	}
}

// TestWriteCollectsItself: given warps and no activity, Write bounds them
// as a Collector would and shows the notice.
func TestWriteCollectsItself(t *testing.T) {
	var warps []WarpView
	for s := range uint64(10) {
		warps = append(warps, WarpView{Slot: s, CTALinear: s, Started: true, Finished: true,
			First: 1000, Last: 2000, Count: 3, Dropped: s % 2, Stored: 2,
			Ranges: []RangeView{{Name: "a", Start: 1100, End: 1200}, {Name: "b", Start: 1300, End: 1900, Flags: trace.RangeUnclosed}},
			Marks:  []MarkView{{Name: "m", Time: 1500}}})
	}
	in := &Input{Warps: warps, Limits: Limits{MaxEvents: 9}}
	page := render(t, in)
	p := extract(t, page)
	want := pcapped{EmbeddedWarps: 3, EmbeddedEvents: 9, OmittedWarps: 7, OmittedEvents: 21, MaxEvents: 9, MaxWarps: DefaultMaxWarps}
	if diff := cmp.Diff(want, p.Capped); diff != "" {
		t.Errorf("capped (-want +got):\n%s", diff)
	}
	if !strings.Contains(page, "The timeline embeds 3 of 10 warps (9 events; the bound is 9 events and 4096 warps). 21 events of the warps left out appear only in the activity strip") {
		t.Errorf("page lacks the capped notice:\n%s", section(t, page+"</section>", "timeline-section"))
	}
	if got := section(t, page, "drops"); !strings.Contains(got, "dropped 5 warps that dropped 5 most dropped by one warp 1") {
		t.Errorf("drops section: %s", got)
	}
	// Every warp's ranges are in the strip: 10 × 100 ns of a.
	if p.Activity == nil {
		t.Fatal("no activity")
	}
	var total float64
	for s, n := range p.Activity.Names {
		if p.Names[n] == "a" {
			for _, v := range p.Activity.Series[s] {
				total += v * float64(p.Activity.Width)
			}
		}
	}
	if total < 999 || total > 1001 {
		t.Errorf("strip holds %g ns of range a, want 1000", total)
	}
	if in.Warps[0].Ranges[1].Flags != trace.RangeUnclosed || len(in.Warps) != 10 {
		t.Error("Write modified its input")
	}
}

func TestWarpViewFrom(t *testing.T) {
	meta := &synthMeta(1, 1, 8).Launches[0]
	w := &trace.Warp{Slot: 7, SM: 3, CTA: [3]uint32{1, 2, 0}, CTALinear: 9, Warp: 2, Role: idConsumer,
		Started: true, First: 100, Last: 900, Count: 5, Stored: 4, Dropped: 1,
		Ranges: []trace.Range{
			{Name: idCompute, Payload: 3, Start: 150, End: 800, Depth: 0},
			{Name: idMMA, Payload: 3, Start: 200, End: 300, Depth: 1},
			{Name: idCopy, Payload: 1, Start: 210, End: 900, Async: true, Lane: 1, Flags: trace.RangeUnclosed},
			{Name: 99, Start: 100, End: 120, Flags: trace.RangeTruncated},
		},
		Marks: []trace.Mark{{Name: idStart, Payload: 4, Time: 110}}}
	want := WarpView{Slot: 7, SM: 3, CTA: [3]uint32{1, 2, 0}, CTALinear: 9, Warp: 2, Role: "consumer",
		Started: true, First: 100, Last: 900, Count: 5, Stored: 4, Dropped: 1,
		Ranges: []RangeView{
			{Name: "compute", Payload: 3, Start: 150, End: 800},
			{Name: "mma", Payload: 3, Start: 200, End: 300, Depth: 1},
			{Name: "copy", Payload: 1, Start: 210, End: 900, Async: true, Lane: 1, Flags: trace.RangeUnclosed},
			{Name: "#99", Start: 100, End: 120, Flags: trace.RangeTruncated},
		},
		Marks: []MarkView{{Name: "kernel_start", Payload: 4, Time: 110}}}
	got := WarpViewFrom(w, meta)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WarpViewFrom (-want +got):\n%s", diff)
	}
	// The view shares nothing with the warp.
	w.Ranges[0].Start, w.Marks[0].Time = -1, -1
	if got.Ranges[0].Start != 150 || got.Marks[0].Time != 110 {
		t.Error("the view aliases the warp's slices")
	}
	if v := WarpViewFrom(&trace.Warp{Role: 2, Ranges: []trace.Range{{Name: 3}}}, nil); v.Role != "#2" || v.Ranges[0].Name != "#3" {
		t.Errorf("without meta: role %q range %q, want #2 and #3", v.Role, v.Ranges[0].Name)
	}
}

func TestTables(t *testing.T) {
	sum := trace.Summary{Warps: 8, Started: 8, Finished: 7, Stored: 90, Attempted: 100, Dropped: 10, Trimmed: 2,
		Violations: map[trace.ViolationKind]int{trace.UnclosedRange: 2, trace.PopEmpty: 1, trace.NotFinished: 0}}
	col := &drops{WarpsDropping: 3, MaxPerWarp: 5}
	tb := newTables(&trace.Analysis{Summary: sum}, []string{"note"}, col)
	if diff := cmp.Diff(&drops{Warps: 8, Started: 8, Finished: 7, Attempted: 100, Stored: 90, Dropped: 10, Trimmed: 2, WarpsDropping: 3, MaxPerWarp: 5}, tb.Drops); diff != "" {
		t.Errorf("drops (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]violationRow{{"pop-empty", 1}, {"unclosed", 2}}, tb.Violations); diff != "" {
		t.Errorf("violation rows (-want +got):\n%s", diff)
	}
	if tb := newTables(nil, []string{"note"}, col); tb.Drops != col || tb.Stats != nil || len(tb.Problems) != 1 {
		t.Errorf("tables without an analysis: %+v", tb)
	}
	stats := []trace.RangeStats{
		{Role: "producer", Range: "load", Count: 24, Incomplete: 1, TotalNs: 14400, MeanNs: 600, P50Ns: 590, P90Ns: 650, P99Ns: 700, MinNs: 500, MaxNs: 710, Share: 0.5, Warps: 4},
		{Role: "", Range: "load", Count: 24, MeanNs: 600, P50Ns: 590, P99Ns: 700, MaxNs: 710, Share: 0.25},
	}
	wantStats := []statRow{
		{Role: "producer", Range: "load", Count: 24, Incomplete: 1, MeanNs: 600, P50Ns: 590, P90Ns: 650, P99Ns: 700, MaxNs: 710, Share: 0.5},
		{Role: "all roles", Range: "load", Count: 24, MeanNs: 600, P50Ns: 590, P99Ns: 700, MaxNs: 710, Share: 0.25},
	}
	if diff := cmp.Diff(wantStats, statRows(stats)); diff != "" {
		t.Errorf("statRows (-want +got):\n%s", diff)
	}
	fits := []trace.ClockFit{{SM: 4, MHz: 1980.5, Points: 12, ResidualRMSNs: 3.5, ResidualMaxNs: 9, Fallback: ""},
		{SM: 9, MHz: 1980, Points: 1, Fallback: "single distinct anchor: used median"}}
	want := []clockRow{{SM: 4, MHz: 1980.5, Points: 12, ResidualRMSNs: 3.5, ResidualMaxNs: 9},
		{SM: 9, MHz: 1980, Points: 1, Fallback: "single distinct anchor: used median"}}
	if diff := cmp.Diff(want, clockRows(fits)); diff != "" {
		t.Errorf("clockRows (-want +got):\n%s", diff)
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		ns   float64
		want string
	}{
		{0, "0 ns"}, {12.34, "12.3 ns"}, {999, "999 ns"}, {1000, "1 µs"}, {10250, "10.25 µs"},
		{10875, "10.88 µs"}, {123456, "123.5 µs"}, {2.5e6, "2.5 ms"}, {3.25e9, "3.25 s"}, {-1500, "-1.5 µs"},
	}
	for _, tt := range tests {
		if got := fmtNs(tt.ns); got != tt.want {
			t.Errorf("fmtNs(%g) = %q, want %q", tt.ns, got, tt.want)
		}
	}
	if got := dims([3]uint32{132, 1, 1}); got != "132" {
		t.Errorf("dims = %q", got)
	}
	if got := dims([3]uint32{4, 2, 1}); got != "4×2" {
		t.Errorf("dims = %q", got)
	}
}

// TestActivitySeriesMerged: past maxSeries names, the smallest series merge
// into one (name -1) and no time is lost.
func TestActivitySeriesMerged(t *testing.T) {
	const n = maxSeries + 6
	var ranges []RangeView
	var want float64
	for i := range n {
		d := int64(100 + 10*i) // name i lasts longer for larger i
		ranges = append(ranges, RangeView{Name: "r" + itoa(uint64(i)), Start: 1000, End: 1000 + d})
		want += float64(d)
	}
	p := extract(t, render(t, &Input{Warps: []WarpView{{Started: true, First: 1000, Last: 2000, Ranges: ranges}}}))
	a := p.Activity
	if len(a.Names) != maxSeries+1 || a.Names[maxSeries] != -1 {
		t.Fatalf("activity names %v, want %d named then -1", a.Names, maxSeries)
	}
	var got float64
	kept := map[string]bool{}
	for s, idx := range a.Names {
		if idx >= 0 {
			kept[p.Names[idx]] = true
		}
		for _, v := range a.Series[s] {
			got += v * float64(a.Width)
		}
	}
	if got < want-1 || got > want+1 {
		t.Errorf("strip holds %g ns, want %g", got, want)
	}
	for i := range 6 { // the six shortest were merged
		if kept["r"+itoa(uint64(i))] {
			t.Errorf("r%d kept, want it merged", i)
		}
	}
}

func TestRoundsChart(t *testing.T) {
	tests := []struct {
		name  string
		u, in []float64
		nil   bool
	}{
		{"none", nil, nil, true},
		{"nan", []float64{1, math.NaN()}, []float64{1}, true},
		{"flat", []float64{5, 5}, []float64{5}, false},
		{"ragged", []float64{10.25, 10.5, 11}, []float64{10.5, 12}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newRoundsChart(tt.u, tt.in)
			if (c == nil) != tt.nil {
				t.Fatalf("chart nil = %v, want %v", c == nil, tt.nil)
			}
			if c == nil {
				return
			}
			if len(c.U) != len(tt.u) || len(c.I) != len(tt.in) {
				t.Fatalf("%d and %d points, want %d and %d", len(c.U), len(c.I), len(tt.u), len(tt.in))
			}
			// Higher values are drawn higher (smaller y), inside the plot.
			all := append(append([]float64(nil), tt.u...), tt.in...)
			pts := append(append([]chartPt(nil), c.U...), c.I...)
			for i := range all {
				if pts[i].Y < 0 || pts[i].Y > c.Bottom || pts[i].X < c.Left || pts[i].X > float64(c.W) {
					t.Errorf("point %d %+v outside the plot", i, pts[i])
				}
				for j := range all {
					if all[i] > all[j] && pts[i].Y >= pts[j].Y {
						t.Errorf("value %g drawn at y %g, not above %g at y %g", all[i], pts[i].Y, all[j], pts[j].Y)
					}
				}
			}
			if got := strings.Count(c.UPath, ","); got != len(tt.u) {
				t.Errorf("uninstrumented polyline has %d points, want %d", got, len(tt.u))
			}
		})
	}
}
