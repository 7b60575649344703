package perfetto

import (
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/iket-trace/iket/trace"
)

// benchWarps builds one CTA of warpsPerCTA warps, each with iters pipeline
// iterations: the producer pushes a load range (payload = stage), the
// consumers a compute range with a nested range inside, plus one async
// range and one mark per iteration. It returns the warps and their number
// of decoded events (2 per range, 1 per mark).
func benchWarps(warpsPerCTA, iters int) ([]trace.Warp, int) {
	ws := make([]trace.Warp, warpsPerCTA)
	events := 0
	for w := range ws {
		wp := &ws[w]
		wp.Warp, wp.Started, wp.Finished = uint32(w), true, true
		wp.Role = nConsumer
		if w == 0 {
			wp.Role = nProducer
		}
		wp.First, wp.Last = t0, t0+int64(iters)*1000+500
		for i := range iters {
			base := int64(i) * 1000
			stage := uint16(i % 4)
			if w == 0 {
				wp.Ranges = append(wp.Ranges, rng(nLoad, stage, base+10, base+400, 0))
			} else {
				wp.Ranges = append(wp.Ranges,
					rng(nCompute, stage, base+420, base+900, 0),
					rng(nInner, stage, base+430, base+800, 1),
					async(nTMA, stage, base+440, base+950, 0))
			}
			wp.Marks = append(wp.Marks, trace.Mark{Name: nKernelStart, Payload: stage, Time: t0 + base + 5, Cycles: uint64(base)})
		}
		events += 2*len(wp.Ranges) + len(wp.Marks)
		wp.Stored = 2*len(wp.Ranges) + len(wp.Marks)
		wp.Count = uint64(wp.Stored)
		wp.Events = []trace.Event{trace.NewEvent(trace.KindMark, 0, 0, 0, wp.First+5), trace.NewEvent(trace.KindPop, 0, 0, 0, wp.Last-100)}
	}
	return ws, events
}

// BenchmarkWriter measures decoded events to bytes: warps are added CTA
// after CTA to a Writer writing to io.Discard. events/s counts decoded
// events (range begins and ends, marks).
func BenchmarkWriter(b *testing.B) {
	for _, bc := range []struct {
		name string
		opt  Options
	}{
		{"default", Options{}}, // iket export's: slices, marks, launch summary
		{"no-summary", Options{NoSummary: true}},
		{"counters+flows", Options{Counters: true, Flows: true}},
		{"compressed", Options{Compress: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ws, perCTA := benchWarps(4, 64)
			meta := testMeta()
			meta.Launches[0].Warps = 1 << 40
			meta.Launches[0].WarpsPerCTA = 4
			cw := &countWriter{}
			w := NewWriter(cw, bc.opt)
			if err := w.BeginLaunch(meta, 0, &meta.Launches[0], LaunchInfo{}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			slot := uint64(0)
			for i := 0; i < b.N; i++ {
				for j := range ws {
					ws[j].Slot = slot
					ws[j].CTALinear = slot / 4
					ws[j].SM = uint32(slot/4) % 132
					slot++
					if err := w.AddWarp(&ws[j]); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			cpu := cpuTime() - cpu0
			ev := float64(perCTA) * float64(b.N)
			b.ReportMetric(ev/b.Elapsed().Seconds(), "events/s")
			// CPU time of the process: on a shared machine, wall time
			// includes waiting for a core.
			b.ReportMetric(ev/cpu.Seconds(), "events/cpu-s")
			b.ReportMetric(float64(cw.n)/ev, "B/event")
		})
	}
}

// cpuTime returns the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

var _ = io.Discard

// BenchmarkExportGEMM exports the bundled GEMM capture (one launch of 384
// warps, 10,400 recorded events) with the default options and with
// counters and flows: decoding included, events/s counts recorded events
// (records the warps stored), B/event the output per recorded event.
func BenchmarkExportGEMM(b *testing.B) {
	c, events := gemmCapture(b)
	for _, bc := range []struct {
		name string
		opt  Options
	}{
		{"default", Options{}},
		{"counters+flows", Options{Counters: true, Flows: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cw := &countWriter{}
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				cw.n = 0
				if err := ExportCapture(cw, c, bc.opt); err != nil {
					b.Fatal(err)
				}
			}
			cpu := cpuTime() - cpu0
			ev := float64(events) * float64(b.N)
			b.ReportMetric(ev/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(ev/cpu.Seconds(), "events/cpu-s")
			b.ReportMetric(float64(cw.n)/float64(events), "B/event")
		})
	}
}
