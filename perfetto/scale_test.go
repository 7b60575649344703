package perfetto

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/iket-trace/iket/internal/emu"
)

// gemmShaped is an emulated launch shaped like the bundled GEMM capture:
// CTAs of 12 warps, warp 0 the producer (wait_free and issue per k-tile, the
// stage as payload), warps 1-3 idle producers (their role only), warps 4-11
// consumers (wait_data and compute per k-tile, then the epilogue), each
// range a NEXT record as the GEMM's Batch pairs are; tiles k-tiles per
// warp, durations in cycles from the capture's means at 1980 MHz.
func gemmShaped(ctas uint32, tiles int) *emu.Launch {
	const wpc = 12
	l := &emu.Launch{
		Kernel: "gemm", Grid: [3]uint32{ctas, 1, 1}, Block: [3]uint32{32 * wpc, 1, 1}, Capacity: uint32(2*tiles + 8),
		Names: emu.MustNames("ROLE producer", "ROLE consumer", "RANGE wait_free", "RANGE issue", "RANGE wait_data", "RANGE compute", "RANGE epilogue"),
	}
	l.Generate = func(w *emu.Warp) {
		c := l.Clock(w.SM).Cycle0 + 10_000 + w.Slot/wpc%97*1_000
		switch {
		case w.Warp == 0:
			w.Role("producer", c)
			w.Push("wait_free", 0, c+10)
			c += 10
			for i := range tiles {
				c += 704
				w.Next("issue", uint16(i%4), c)
				c += 297
				if i+1 < tiles {
					w.Next("wait_free", uint16((i+1)%4), c)
				}
			}
			w.Pop(c)
		case w.Warp < 4:
			w.Role("producer", c)
		default:
			w.Role("consumer", c)
			w.Push("wait_data", 0, c+10)
			c += 10
			for i := range tiles {
				c += 301
				w.Next("compute", uint16(i%4), c)
				c += 867
				if i+1 < tiles {
					w.Next("wait_data", uint16((i+1)%4), c)
				}
			}
			w.Next("epilogue", 0, c)
			w.Pop(c + 1917)
		}
	}
	return l
}

// BenchmarkExportGEMMShaped exports, with the default options, emulated
// GEMM-shaped captures (gemmShaped, 16 k-tiles per warp as the bundled
// capture has) of growing size: the trace's bytes per recorded event and
// its size, which docs/PERFETTO-EXPORT.md uses for the largest capture whose
// trace stays under 500 MB. IKET_EXPORT_CTAS (a comma list) sets the CTA
// counts; skipped with -short.
func BenchmarkExportGEMMShaped(b *testing.B) {
	if testing.Short() {
		b.Skip("large captures")
	}
	ctas := []uint32{32, 4096}
	if s := os.Getenv("IKET_EXPORT_CTAS"); s != "" {
		ctas = ctas[:0]
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.ParseUint(f, 10, 32)
			if err != nil {
				b.Fatalf("IKET_EXPORT_CTAS: %v", err)
			}
			ctas = append(ctas, uint32(n))
		}
	}
	for _, n := range ctas {
		b.Run("ctas-"+strconv.Itoa(int(n)), func(b *testing.B) {
			l := gemmShaped(n, 16)
			c := emu.OpenTemp(b, l)
			_, events := countStored(b, c)
			cw := &countWriter{}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				cw.n = 0
				if err := ExportCapture(cw, c, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(events), "events")
			b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(cw.n)/float64(events), "B/event")
			b.ReportMetric(float64(cw.n)/1e6, "MB")
		})
	}
}
