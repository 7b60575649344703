package trace_test

import (
	"io"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/trace"
)

// synthetic returns a stop-mode launch of warps*capacity events that streams
// from a generator: each warp sets its role, then repeats a 2-deep push/pop
// nest, a mark and a start/end pair, filling its buffer exactly.
func synthetic(warps uint32, capacity uint32) *emu.Launch {
	const wpc = 8
	l := &emu.Launch{
		Kernel: "synthetic", Grid: [3]uint32{warps / wpc, 1, 1}, Block: [3]uint32{32 * wpc, 1, 1},
		Capacity: capacity, Names: emu.MustNames("ROLE producer", "RANGE load", "RANGE inner", "MARK tick", "RANGE async"),
	}
	l.Generate = func(w *emu.Warp) {
		c := l.Clock(w.SM).Cycle0 + 10_000 + w.Slot%97*1_000
		w.Role("producer", c)
		n := 1
		for i := 0; n+8 <= int(capacity); i++ {
			c += 37
			w.Push("load", uint16(i), c).Push("inner", 0, c+5).Pop(c+9).Pop(c+20).
				Mark("tick", uint16(i), c+21).Start("async", uint16(i), c+22).End("async", uint16(i), c+30).Mark("tick", 0, c+33)
			c += 33
			n += 8
		}
		for ; n < int(capacity); n++ {
			c++
			w.Mark("tick", 1, c)
		}
	}
	return l
}

// pass decodes every warp with d, failing on any error or violation.
func pass(tb testing.TB, d *trace.Decoder, w *trace.Warp) {
	for {
		err := d.Next(w)
		if err == io.EOF {
			return
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkDecodeValidate decodes and strictly validates a 2M-event capture
// from a temp file: one op is a whole pass, NewDecoder's index included.
func BenchmarkDecodeValidate(b *testing.B) {
	const warps, capacity = 512, 4096
	c := emu.OpenTemp(b, synthetic(warps, capacity))
	benchDecode(b, c.Launch(0), warps*capacity, nil)
}

// benchDecode times whole strict passes over l (NewDecoder's index
// included; prep, when not nil, adjusts each new Decoder) and reports
// events M per second and per CPU-second. The CPU rate is the process's
// CPU time: on a shared machine, wall time includes waiting for a core.
// Meaningful with -cpu 1 (one core does the work).
func benchDecode(b *testing.B, l *trace.Launch, events int, prep func(*trace.Decoder)) {
	var w trace.Warp
	b.ReportAllocs()
	var cpu time.Duration
	for b.Loop() {
		cpu0 := cpuTime()
		d, err := trace.NewDecoder(l, trace.Options{Strict: true})
		if err != nil {
			b.Fatal(err)
		}
		if prep != nil {
			prep(d)
		}
		pass(b, d, &w)
		if err := d.Err(); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - cpu0
	}
	ev := float64(events) * float64(b.N)
	b.ReportMetric(ev/b.Elapsed().Seconds()/1e6, "Mevents/s")
	if cpu > 0 {
		b.ReportMetric(ev/cpu.Seconds()/1e6, "Mevents/cpu-s")
	}
}

// cpuTime returns the process's user+system CPU time (0 if unavailable).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestDecodeAllocs proves the steady state allocates nothing per event: a
// whole second pass with a reused Decoder and Warp allocates nothing.
func TestDecodeAllocs(t *testing.T) {
	c := emu.MustRead(t, synthetic(64, 512))
	d, err := trace.NewDecoder(c.Launch(0), trace.Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	var w trace.Warp
	pass(t, d, &w)
	if s := d.Summary(); s.Stored != 64*512 || s.TotalViolations() != 0 {
		t.Fatalf("summary %+v", s)
	}
	allocs := testing.AllocsPerRun(5, func() {
		d.Reset()
		pass(t, d, &w)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per pass of %d events, want 0", allocs, 64*512)
	}
}

// BenchmarkStream1e8 streams a 10^8-event capture (an 800 MB temp file)
// through a Decoder and reports the peak heap, which must stay far below
// the file's size. Skipped with -short.
func BenchmarkStream1e8(b *testing.B) {
	if testing.Short() {
		b.Skip("writes an 800 MB temp file")
	}
	const capacity = 4096
	const warps = (100_000_000 + capacity - 1) / capacity / 8 * 8
	c := emu.OpenTemp(b, synthetic(warps, capacity))
	l := c.Launch(0)
	b.ReportAllocs()
	b.ResetTimer()
	var peak uint64
	var ms runtime.MemStats
	for b.Loop() {
		runtime.GC()
		d, err := trace.NewDecoder(l, trace.Options{Strict: true})
		if err != nil {
			b.Fatal(err)
		}
		var w trace.Warp
		for i := 0; ; i++ {
			err := d.Next(&w)
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if i%512 == 0 {
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
			}
		}
		if err := d.Err(); err != nil {
			b.Fatal(err)
		}
		if s := d.Summary(); s.Stored != warps*capacity {
			b.Fatalf("stored %d", s.Stored)
		}
	}
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(ms.HeapSys)/(1<<20), "heap-sys-MB")
	b.ReportMetric(float64(warps*capacity)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mevents/s")
	if peak > 512<<20 {
		b.Errorf("peak heap %d MB, want < 512", peak>>20)
	}
}
