package perfetto

import (
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"

	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/trace"
)

// heapWriter counts bytes and samples the live heap every 16 writes (the
// Writer writes about 1 MiB at a time).
type heapWriter struct {
	n      int64
	writes int
	peak   uint64
	ms     runtime.MemStats
}

func (h *heapWriter) Write(p []byte) (int, error) {
	h.n += int64(len(p))
	if h.writes++; h.writes%16 == 0 {
		h.sample()
	}
	return len(p), nil
}

func (h *heapWriter) sample() {
	runtime.ReadMemStats(&h.ms)
	h.peak = max(h.peak, h.ms.HeapAlloc)
}

// liveHeap returns the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// smallWarps returns the warps of one CTA of a launch with tiny warps (one
// pipeline iteration each: 3 events in the producer, 7 per consumer), the
// shape in which tracks per event are most numerous.
func smallWarps() []trace.Warp {
	ws, _ := benchWarps(4, 1)
	return ws
}

// TestMemoryConstantInWarps writes 100,000 small warps (25,000 CTAs, with
// counters and flows) and checks that the live heap does not grow between
// the first quarter and the end: nothing the Writer keeps may grow with the
// number of warps, tracks or events.
func TestMemoryConstantInWarps(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100,000 warps")
	}
	meta := testMeta()
	meta.Launches[0].Warps = 1 << 40
	meta.Launches[0].WarpsPerCTA = 4
	w := NewWriter(&countWriter{}, Options{Counters: true, Flows: true})
	if err := w.BeginLaunch(meta, 0, &meta.Launches[0], LaunchInfo{}); err != nil {
		t.Fatal(err)
	}
	ws := smallWarps()
	const ctas = 25_000
	var quarter uint64
	slot := uint64(0)
	for c := range ctas {
		if c == ctas/4 {
			quarter = liveHeap()
		}
		for j := range ws {
			ws[j].Slot, ws[j].CTALinear, ws[j].SM = slot, slot/4, uint32(slot/4)%132
			slot++
			if err := w.AddWarp(&ws[j]); err != nil {
				t.Fatal(err)
			}
		}
	}
	end := liveHeap()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Tracks < 4*ctas {
		t.Fatalf("wrote %d tracks, want at least %d", st.Tracks, 4*ctas)
	}
	// 75,000 more warps and about 200,000 more tracks: a byte per track
	// would show.
	if end > quarter+64<<10 {
		t.Errorf("live heap grew from %d to %d bytes over 75,000 warps", quarter, end)
	}
}

// BenchmarkExport1e8 exports 10^8-event captures with counters and flows
// and reports the peak live heap (sampled every 16 MiB of output) and the
// process's peak resident memory, which must stay below 512 MB whatever the
// number of warps. Skipped with -short.
//
//   - capture-4096: ExportCapture of a 10^8-event capture (24,416 warps of
//     4,096 events, an 800 MB temp file), decoder included;
//   - capture-32: the same with 32-event warps (3.1 million warps, 390,000
//     CTAs, 1.2 GB file): many tracks per event;
//   - warps-7: the Writer alone fed 14.3 million tiny warps (3 or 7 events)
//     of 3.6 million CTAs, the shape with the most tracks per event.
func BenchmarkExport1e8(b *testing.B) {
	if testing.Short() {
		b.Skip("10^8 events")
	}
	const events = 100_000_000
	for _, capa := range []uint32{4096, 32} {
		b.Run("capture-"+strconv.Itoa(int(capa)), func(b *testing.B) {
			warps := uint32((events + capa - 1) / capa / 8 * 8)
			c := emu.OpenTemp(b, pipeline(warps, capa))
			b.ReportAllocs()
			resetPeakRSS()
			b.ResetTimer()
			var hw heapWriter
			for b.Loop() {
				runtime.GC()
				hw = heapWriter{}
				if err := ExportCapture(&hw, c, Options{Counters: true, Flows: true}); err != nil {
					b.Fatal(err)
				}
				hw.sample()
			}
			report(b, float64(warps)*float64(capa), hw.peak, hw.n)
		})
	}
	b.Run("warps-7", func(b *testing.B) {
		ws := smallWarps()
		perCTA := 0
		for i := range ws {
			perCTA += 2*len(ws[i].Ranges) + len(ws[i].Marks)
		}
		ctas := (events + perCTA - 1) / perCTA
		b.ReportAllocs()
		resetPeakRSS()
		b.ResetTimer()
		var hw heapWriter
		for b.Loop() {
			runtime.GC()
			hw = heapWriter{}
			meta := testMeta()
			meta.Launches[0].Warps = 1 << 40
			meta.Launches[0].WarpsPerCTA = 4
			w := NewWriter(&hw, Options{Counters: true, Flows: true})
			if err := w.BeginLaunch(meta, 0, &meta.Launches[0], LaunchInfo{}); err != nil {
				b.Fatal(err)
			}
			slot := uint64(0)
			for range ctas {
				for j := range ws {
					ws[j].Slot, ws[j].CTALinear, ws[j].SM = slot, slot/4, uint32(slot/4)%132
					slot++
					if err := w.AddWarp(&ws[j]); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			hw.sample()
		}
		report(b, float64(ctas)*float64(perCTA), hw.peak, hw.n)
	})
}

func report(b *testing.B, events float64, peak uint64, out int64) {
	b.Helper()
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	rss := peakRSS()
	b.ReportMetric(float64(rss)/(1<<20), "peak-rss-MB")
	b.ReportMetric(events*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(out)/events, "B/event")
	if peak > 512<<20 || rss > 512<<20 {
		b.Errorf("peak heap %d MB, peak RSS %d MB, want both below 512", peak>>20, rss>>20)
	}
}

// resetPeakRSS resets the process's peak resident set to its current one
// (Linux 4.0 and later), so that each benchmark reports its own peak.
func resetPeakRSS() {
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS returns the process's peak resident set (VmHWM), 0 if unknown.
func peakRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			kb, _ := strconv.ParseUint(string(bytes.TrimSuffix(bytes.TrimSpace(v), []byte(" kB"))), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// pipeline is an emulated stop-mode launch of CTAs of 8 warps, warp 0 a
// producer, the others consumers, each filling its buffer of capacity
// records: the producer loads stage i, the consumers compute it (with a
// nested range and an async copy), plus marks.
func pipeline(warps, capacity uint32) *emu.Launch {
	const wpc = 8
	l := &emu.Launch{
		Kernel: "pipeline", Grid: [3]uint32{warps / wpc, 1, 1}, Block: [3]uint32{32 * wpc, 1, 1}, Capacity: capacity,
		Names: emu.MustNames("ROLE producer", "ROLE consumer", "RANGE load", "RANGE compute", "RANGE inner", "RANGE copy", "MARK tick"),
	}
	l.Generate = func(w *emu.Warp) {
		c := l.Clock(w.SM).Cycle0 + 10_000 + w.Slot/wpc%97*1_000
		n := 1
		if w.Warp == 0 {
			w.Role("producer", c)
			for i := 0; n+5 <= int(capacity); i++ {
				w.Push("load", uint16(i%4), c+10).Pop(c+400).Mark("tick", uint16(i), c+401).Push("load", uint16((i+1)%4), c+500).Pop(c + 900)
				c += 1000
				n += 5
			}
		} else {
			w.Role("consumer", c)
			for i := 0; n+7 <= int(capacity); i++ {
				w.Push("compute", uint16(i%4), c+420).Push("inner", 0, c+430).Start("copy", uint16(i), c+440).Pop(c+800).
					End("copy", uint16(i), c+950).Pop(c+960).Mark("tick", uint16(i), c+970)
				c += 1000
				n += 7
			}
		}
		for ; n < int(capacity); n++ {
			c += 3
			w.Mark("tick", 1, c)
		}
	}
	return l
}
