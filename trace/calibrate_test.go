package trace_test

import (
	"errors"
	"math"
	"testing"

	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/trace"
)

// calibrationLaunch emulates kernels/examples/calibrate.cu: one CTA of 4
// warps per SM, SMs with different clock rates and counter offsets, and in
// each round every warp marks after_barrier at the same true globaltimer
// instant plus skew(sm, warp, round) ns.
func calibrationLaunch(t testing.TB, sms, rounds int, skew func(sm, warp, round int) float64) *emu.Launch {
	t.Helper()
	const warps = 4
	clocks := map[uint32]emu.Clock{}
	for sm := range sms {
		clocks[uint32(sm)] = emu.Clock{
			MHz:          1755 + float64(sm*37%226) + 0.25*float64(sm%4),
			Cycle0:       3_000_000_000 + uint64(sm)*1_000_003_007,
			Ns0:          emu.DefaultNs0 + uint64(sm*13),
			TickNs:       32,
			JitterCycles: 1,
		}
	}
	l := &emu.Launch{Kernel: "calibrate", Grid: [3]uint32{uint32(sms), 1, 1}, Block: [3]uint32{32 * warps, 1, 1},
		Capacity: 256, Names: emu.MustNames("ROLE calibrator", "RANGE barrier_wait", "MARK after_barrier"),
		SMs: uint32(sms), Clocks: clocks}
	// cycleAt is the SM's cycle counter at true time ns (after DefaultNs0).
	cycleAt := func(ck emu.Clock, ns float64) uint64 {
		return ck.Cycle0 + uint64(math.Round((ns-float64(ck.Ns0-emu.DefaultNs0))*ck.MHz/1000))
	}
	for sm := range sms {
		ck := clocks[uint32(sm)]
		for wi := range warps {
			w := l.Warp([3]uint32{uint32(sm), 0, 0}, uint32(wi))
			w.StartCycle = cycleAt(ck, 1000+float64(wi*40))
			w.Role("calibrator", cycleAt(ck, 2000))
			for r := range rounds {
				at := 10_000 + float64(r)*7_000 // true release instant of round r
				w.Push("barrier_wait", uint16(r), cycleAt(ck, at-3_000-float64(sm+wi)))
				w.Mark("after_barrier", uint16(r), cycleAt(ck, at+skew(sm, wi, r)))
				w.Pop(cycleAt(ck, at+20+skew(sm, wi, r)))
			}
			w.EndCycle = cycleAt(ck, 10_000+float64(rounds)*7_000+float64(wi*50))
		}
	}
	return l
}

func TestMarkSpread(t *testing.T) {
	const sms, rounds = 16, 32
	noSkew := func(sm, warp, round int) float64 { return 0 }
	tests := []struct {
		name string
		skew func(sm, warp, round int) float64
		// want spreads (ns), each within tol
		warpMed, warpMax, smMed, smMax float64
		tol                            float64
	}{
		{name: "aligned", skew: noSkew, tol: 1.5},
		{name: "SM 5 late by 100 ns", skew: func(sm, warp, round int) float64 {
			if sm == 5 {
				return 100
			}
			return 0
		}, warpMed: 100, warpMax: 100, smMed: 100, smMax: 100, tol: 1.5},
		{name: "one warp late by 50 ns inside its SM", skew: func(sm, warp, round int) float64 {
			if sm == 3 && warp == 2 {
				return 50
			}
			return 0
		}, warpMed: 50, warpMax: 50, tol: 1.5},
		{name: "round 7 skewed by 300 ns", skew: func(sm, warp, round int) float64 {
			if round == 7 && sm == 0 {
				return -300
			}
			return 0
		}, warpMax: 300, smMax: 300, tol: 1.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := emu.MustRead(t, calibrationLaunch(t, sms, rounds, tc.skew))
			res, err := trace.MarkSpread(c.Launch(0), "after_barrier", trace.Options{Strict: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Rounds) != rounds || res.Warps != 4*sms || res.SMs != sms || res.Incomplete != 0 || res.SkippedWarps != 0 {
				t.Fatalf("rounds %d warps %d sms %d incomplete %d skipped %d; want %d, %d, %d, 0, 0",
					len(res.Rounds), res.Warps, res.SMs, res.Incomplete, res.SkippedWarps, rounds, 4*sms, sms)
			}
			for i, r := range res.Rounds {
				if r.Payload != uint16(i) || r.Warps != 4*sms || r.SMs != sms {
					t.Errorf("round %d: %+v", i, r)
				}
			}
			for _, g := range []struct {
				what      string
				got, want float64
			}{
				{"warp spread median", res.WarpSpreadMedianNs, tc.warpMed},
				{"warp spread max", res.WarpSpreadMaxNs, tc.warpMax},
				{"SM spread median", res.SMSpreadMedianNs, tc.smMed},
				{"SM spread max", res.SMSpreadMaxNs, tc.smMax},
			} {
				if math.Abs(g.got-g.want) > tc.tol {
					t.Errorf("%s = %.3f ns, want %.1f +- %.1f", g.what, g.got, g.want, tc.tol)
				}
			}
			ck := res.Clocks
			t.Logf("spread warps median %.3f max %.3f, SMs median %.3f max %.3f ns; clocks %+v",
				res.WarpSpreadMedianNs, res.WarpSpreadMaxNs, res.SMSpreadMedianNs, res.SMSpreadMaxNs, ck)
			if ck.SMs != sms || ck.Fallbacks != 0 || ck.MinMHz < 1754 || ck.MaxMHz > 1981 || ck.MaxMHz-ck.MinMHz < 200 {
				t.Errorf("clocks %+v", ck)
			}
			if ck.ResidualMaxNs > 2 || ck.ResidualRMSNs > ck.ResidualMaxNs || ck.NsPerCycle < 0.5 || ck.NsPerCycle > 0.57 {
				t.Errorf("clocks %+v: want residuals within 2 ns, ~0.5 ns per cycle", ck)
			}
		})
	}
}

func TestMarkSpreadSkewNamesSMs(t *testing.T) {
	c := emu.MustRead(t, calibrationLaunch(t, 6, 4, func(sm, warp, round int) float64 {
		switch sm {
		case 4:
			return -80
		case 1:
			return 120
		}
		return 0
	}))
	res, err := trace.MarkSpread(c.Launch(0), "after_barrier", trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rounds {
		if r.EarliestSM != 4 || r.LatestSM != 1 || math.Abs(r.SMSpreadNs-200) > 1.5 {
			t.Errorf("round %d: earliest SM %d, latest SM %d, SM spread %.2f; want 4, 1, 200", r.Payload, r.EarliestSM, r.LatestSM, r.SMSpreadNs)
		}
	}
}

func TestMarkSpreadIncomplete(t *testing.T) {
	l := calibrationLaunch(t, 4, 3, func(sm, warp, round int) float64 { return 0 })
	// Warp 1 of SM 2 never gets to round 2: rewrite its script.
	w := l.Warp([3]uint32{2, 0, 0}, 1)
	ck := l.Clock(2)
	w.Reset()
	c0 := ck.Cycle0 + 2_000_000
	w.Mark("after_barrier", 0, c0).Mark("after_barrier", 1, c0+10_000)
	res, err := trace.MarkSpread(emu.MustRead(t, l).Launch(0), "after_barrier", trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Incomplete != 1 || len(res.Rounds) != 3 || res.Rounds[2].Warps != 15 {
		t.Errorf("incomplete %d, rounds %+v; want round 2 with 15 of 16 warps", res.Incomplete, res.Rounds)
	}
}

func TestMarkSpreadErrors(t *testing.T) {
	l := calibrationLaunch(t, 2, 2, func(sm, warp, round int) float64 { return 0 })
	c := emu.MustRead(t, l)
	_, err := trace.MarkSpread(c.Launch(0), "no_such_mark", trace.Options{})
	var um *trace.UnknownMarkError
	if !errors.As(err, &um) || um.Mark != "no_such_mark" || len(um.Have) != 1 || um.Have[0] != "after_barrier" {
		t.Errorf("unknown mark: err = %v, want an UnknownMarkError naming after_barrier", err)
	}
	// A RANGE name is no MARK.
	if _, err := trace.MarkSpread(c.Launch(0), "barrier_wait", trace.Options{}); !errors.As(err, &um) {
		t.Errorf("range name: err = %v, want an UnknownMarkError", err)
	}
	// Declared but never recorded.
	l2 := &emu.Launch{Kernel: "k", Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{32, 1, 1}, Capacity: 8,
		Names: emu.MustNames("MARK after_barrier", "RANGE a"), SMs: 2}
	for cta := uint32(0); cta < 2; cta++ {
		ck := l2.Clock(cta)
		l2.Warp([3]uint32{cta, 0, 0}, 0).Push("a", 0, ck.Cycle0+1000).Pop(ck.Cycle0 + 5000)
	}
	if _, err := trace.MarkSpread(emu.MustRead(t, l2).Launch(0), "after_barrier", trace.Options{}); !errors.Is(err, trace.ErrNoMarks) {
		t.Errorf("no marks: err = %v, want ErrNoMarks", err)
	}
	if _, err := trace.MarkSpread(nil, "after_barrier", trace.Options{}); err == nil {
		t.Error("nil launch: no error")
	}
}
