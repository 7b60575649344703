package report

import (
	"errors"
	"io"
	"testing"

	"github.com/iket-trace/iket/trace"
)

// TestPageSizeBounded: a launch far above the bounds gives a page whose
// size follows the bounds, not the launch.
func TestPageSizeBounded(t *testing.T) {
	c := synthCapture(t, 512, 8, 64) // 4096 warps, 53248 events
	tests := []struct {
		lim      Limits
		maxBytes int
	}{
		{Limits{MaxEvents: 1000}, 150_000},
		{Limits{MaxEvents: 4000}, 300_000},
		{Limits{MaxWarps: 50}, 150_000},
	}
	for _, tt := range tests {
		in := synthInput(t, c, tt.lim)
		page := render(t, in)
		p := extract(t, page)
		if p.Capped.EmbeddedEvents > tt.lim.maxEvents() || p.Capped.EmbeddedWarps > tt.lim.maxWarps() {
			t.Errorf("%+v: embedded %d events in %d warps, over the bounds", tt.lim, p.Capped.EmbeddedEvents, p.Capped.EmbeddedWarps)
		}
		if got := uint64(p.Capped.EmbeddedWarps) + p.Capped.OmittedWarps; got != 4096 {
			t.Errorf("%+v: embedded + omitted warps = %d, want 4096", tt.lim, got)
		}
		if len(page) > tt.maxBytes {
			t.Errorf("%+v: page is %d bytes, want at most %d", tt.lim, len(page), tt.maxBytes)
		}
	}
}

// benchCapture is a launch of 2048 CTAs of 8 warps (16384 warps, 212992
// ranges and marks: just above DefaultMaxEvents).
func benchCapture(b *testing.B) *trace.Capture {
	b.Helper()
	return synthCapture(b, 2048, 8, 64)
}

// BenchmarkCollect measures decoding a large launch into a Collector (the
// decoder's own cost included; see trace's benchmarks for it alone).
func BenchmarkCollect(b *testing.B) {
	c := benchCapture(b)
	b.ReportAllocs()
	for b.Loop() {
		d, err := trace.NewDecoder(c.Launch(0), trace.Options{})
		if err != nil {
			b.Fatal(err)
		}
		col := NewCollector(&c.Meta.Launches[0], Limits{})
		var w trace.Warp
		for {
			if err := d.Next(&w); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				b.Fatal(err)
			}
			col.Add(&w)
		}
	}
}

// BenchmarkWrite measures writing the page of a large launch, collected
// once, and reports the page's size.
func BenchmarkWrite(b *testing.B) {
	in := synthInput(b, benchCapture(b), Limits{})
	n := &countWriter{}
	b.ReportAllocs()
	for b.Loop() {
		n.n = 0
		if err := Write(n, in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n.n), "page-bytes")
}

type countWriter struct{ n int }

func (c *countWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }

// BenchmarkActivityAddRange measures adding one range to the strip.
func BenchmarkActivityAddRange(b *testing.B) {
	var a Activity
	a.AddRange("warm", 0, 1_000_000)
	b.ReportAllocs()
	i := int64(0)
	for b.Loop() {
		s := (i * 7919) % 1_000_000
		a.AddRange("load", s, s+500)
		i++
	}
}
