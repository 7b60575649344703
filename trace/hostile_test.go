package trace_test

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/trace"
)

// Hostile inputs must cost time linear in the events and memory bounded by
// the series that ran: each case below decodes and analyses within
// hostileTime and allocates at most hostileBytes in all.
const (
	hostileTime  = 2 * time.Second
	hostileBytes = 64 << 20
)

// within runs f and fails when it takes longer than hostileTime or
// allocates more than hostileBytes.
func within(t *testing.T, f func()) {
	t.Helper()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	f()
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%v, %d MB allocated", took, alloc>>20)
	if took > hostileTime || alloc > hostileBytes {
		t.Errorf("took %v and allocated %d MB; want at most %v and %d MB", took, alloc>>20, hostileTime, hostileBytes>>20)
	}
}

// analyzeAll decodes launch 0 into an Analyzer and asks for everything the
// CLI prints.
func analyzeAll(t *testing.T, c *trace.Capture) (*trace.Analyzer, trace.Summary, []trace.Warp) {
	t.Helper()
	l := c.Launch(0)
	d, err := trace.NewDecoder(l, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := trace.NewAnalyzer(l.Meta)
	var kept []trace.Warp
	var w trace.Warp
	for {
		err := d.Next(&w)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		a.Add(&w)
		if len(kept) < 4 {
			kept = append(kept, trace.Warp{Violations: append([]trace.Violation(nil), w.Violations...), MoreViolations: w.MoreViolations})
		}
	}
	a.Stats()
	a.OverlapMatrix()
	a.Pipeline()
	return a, d.Summary(), kept
}

// TestHostileUnknownNames: every record names an id the table lacks (a
// corrupt buffer), thousands of them in each warp of one CTA.
func TestHostileUnknownNames(t *testing.T) {
	l := &emu.Launch{Kernel: "k", Block: [3]uint32{128, 1, 1}, Capacity: 1 << 15, Names: emu.MustNames("ROLE p", "RANGE a")}
	for wi := uint32(0); wi < 4; wi++ {
		w := l.Warp([3]uint32{}, wi)
		c := uint64(1e9)
		for id := uint16(100); id < 8192; id++ {
			w.Raw(trace.KindPush, id, 0, c).Raw(trace.KindPop, 0, 0, c+5)
			c += 10
		}
	}
	c := emu.OpenTemp(t, l)
	within(t, func() {
		a, sum, warps := analyzeAll(t, c)
		if got := len(a.Stats()); got != 8092 {
			t.Errorf("%d stats rows, want 8092 (one per id)", got)
		}
		if names, _ := a.OverlapMatrix(); len(names) != 0 {
			t.Errorf("overlap matrix over %d undeclared names", len(names))
		}
		if n := sum.Violations[trace.UnknownName]; n != 4*8092 {
			t.Errorf("%d unknown-name violations counted, want %d", n, 4*8092)
		}
		if w := warps[0]; len(w.Violations) != trace.MaxWarpViolations || w.MoreViolations != 8092-trace.MaxWarpViolations {
			t.Errorf("a warp kept %d violations and counted %d more, want %d and %d", len(w.Violations), w.MoreViolations, trace.MaxWarpViolations, 8092-trace.MaxWarpViolations)
		}
	})
}

// TestHostileDeclaredNames: a table of thousands of RANGE names, all of
// them run by two roles in one CTA: the pair analysis stops at
// MaxTrackedSeries series.
func TestHostileDeclaredNames(t *testing.T) {
	spec := []string{"ROLE p", "ROLE q"}
	for i := range 4000 {
		spec = append(spec, fmt.Sprintf("RANGE r%d", i))
	}
	l := &emu.Launch{Kernel: "k", Block: [3]uint32{64, 1, 1}, Capacity: 1 << 14, Names: emu.MustNames(spec...)}
	for wi, role := range []string{"p", "q"} {
		w := l.Warp([3]uint32{}, uint32(wi))
		c := uint64(1e9)
		w.Role(role, c)
		for i := range 4000 {
			w.Push(fmt.Sprintf("r%d", i), uint16(i%7), c+1).Pop(c + 8)
			c += 10
		}
	}
	c := emu.OpenTemp(t, l)
	within(t, func() {
		a, _, _ := analyzeAll(t, c)
		if got := len(a.Stats()); got != 3*4000 {
			t.Errorf("%d stats rows, want %d", got, 3*4000)
		}
		if names, _ := a.OverlapMatrix(); len(names) > trace.MaxTrackedSeries {
			t.Errorf("overlap matrix of %d series, over the bound %d", len(names), trace.MaxTrackedSeries)
		}
		if _, err := a.Overlap("r3999", "r0"); !errors.Is(err, trace.ErrUntracked) {
			t.Errorf("overlap of a series past the bound: %v, want ErrUntracked", err)
		}
		if _, err := a.Overlap("p:r0", "p:r1"); err != nil {
			t.Errorf("overlap of tracked series: %v", err)
		}
	})
}

// TestHostileManyCTAs: 400,000 warps in 200,000 CTAs; the
// analyzer's memory must not grow with the CTAs.
func TestHostileManyCTAs(t *testing.T) {
	names, err := trace.ParseNameTable("iket-names 1\nROLE producer\nROLE consumer\nRANGE load\nRANGE wait\nRANGE compute\n")
	if err != nil {
		t.Fatal(err)
	}
	meta := &trace.LaunchMeta{Kernel: "k", WarpsPerCTA: 2, Capacity: 64, Mode: trace.ModeStop, Names: names}
	const ctas = 200_000
	within(t, func() {
		a := trace.NewAnalyzer(meta)
		w := trace.Warp{Ranges: make([]trace.Range, 2)}
		for cta := uint64(0); cta < ctas; cta++ {
			for wi := uint32(0); wi < 2; wi++ {
				b := int64(cta) * 100
				w = trace.Warp{Slot: 2*cta + uint64(wi), CTA: [3]uint32{uint32(cta), 0, 0}, Warp: wi, CTALinear: cta,
					Role: uint16(1 + wi), Started: true, Finished: true, First: b, Last: b + 100, Ranges: w.Ranges[:2]}
				if wi == 0 {
					w.Ranges[0] = trace.Range{Name: 3, Start: b, End: b + 40}
				} else {
					w.Ranges[0] = trace.Range{Name: 5, Start: b + 40, End: b + 90}
				}
				w.Ranges[1] = trace.Range{Name: 4, Start: b + 90, End: b + 100}
				a.Add(&w)
			}
		}
		o, err := a.Overlap("load", "compute")
		if err != nil || o.CTAs != ctas {
			t.Errorf("overlap = %+v, %v", o, err)
		}
		l, err := a.Lag("producer:load", "consumer:compute")
		if err != nil || l.Count != ctas || l.P50Ns != 0 {
			t.Errorf("lag = %+v, %v", l.Count, err)
		}
	})
}
