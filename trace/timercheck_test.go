package trace_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/trace"
)

// TestCheckTimer emulates SMs at different clock rates whose warps record the
// true globaltimer (quantised to 32 ns) as a payload: the per-SM mean error
// must come out near 16 ns (half a tick) on every SM, and an SM whose anchors
// are shifted by 100 ns must stand out by that much.
func TestCheckTimer(t *testing.T) {
	for _, tt := range []struct {
		name       string
		skewNs     float64
		wantSpread [2]float64
	}{
		{"aligned", 0, [2]float64{0, 4}},
		{"one SM skewed", 100, [2]float64{96, 104}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := &emu.Launch{
				Kernel: "cal", Grid: [3]uint32{8, 1, 1}, Block: [3]uint32{128, 1, 1}, Capacity: 512,
				Names: emu.MustNames("MARK gt_sample"), SMs: 8,
				Clocks: map[uint32]emu.Clock{},
			}
			for sm := uint32(0); sm < 8; sm++ {
				c := emu.DefaultClock(sm)
				c.MHz = 1755 + 30*float64(sm)
				l.Clocks[sm] = c
			}
			for cta := uint32(0); cta < 8; cta++ {
				for wi := uint32(0); wi < 4; wi++ {
					w := l.Warp([3]uint32{cta, 0, 0}, wi)
					ck := l.Clock(w.SM)
					for r := uint64(0); r < 100; r++ {
						cy := ck.Cycle0 + 100_000 + r*7_919 + uint64(wi)*13
						ns, _ := ck.NsAt(cy)
						gt := ns &^ 31 // the timer ticks every 32 ns
						if w.SM == 3 {
							gt -= int64(tt.skewNs) // this SM's anchors sit 100 ns off
						}
						w.Mark("gt_sample", uint16(gt), cy)
					}
				}
			}
			b, err := l.Capture()
			if err != nil {
				t.Fatal(err)
			}
			c, err := trace.Read(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			res, err := trace.CheckTimer(c.Launch(0), "gt_sample", trace.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Samples != 3200 || len(res.SMs) != 8 {
				t.Fatalf("samples %d on %d SMs, want 3200 on 8", res.Samples, len(res.SMs))
			}
			if res.SMMeanSpreadNs < tt.wantSpread[0] || res.SMMeanSpreadNs > tt.wantSpread[1] {
				t.Errorf("SM mean spread %.1f ns, want within %v", res.SMMeanSpreadNs, tt.wantSpread)
			}
			for _, s := range res.SMs {
				if s.SM != 3 && math.Abs(s.MeanNs-16) > 3 {
					t.Errorf("SM %d mean error %.1f ns, want about 16 (half a 32 ns tick)", s.SM, s.MeanNs)
				}
			}
			if _, err := trace.CheckTimer(c.Launch(0), "nope", trace.Options{}); err == nil {
				t.Error("unknown mark: no error")
			}
		})
	}
}
