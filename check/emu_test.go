package check

import (
	"context"
	"math"
	"testing"

	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/trace"
)

// decode analyses an emulated launch, as iket check does.
func decode(t *testing.T, l *emu.Launch) *trace.Analysis {
	t.Helper()
	c := emu.MustRead(t, l)
	t.Cleanup(func() { c.Close() })
	a, err := trace.Analyze(context.Background(), c.Launch(0), trace.Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestEmulatedPipeline checks rules end to end on the emulator's
// producer/consumer launch, whose overlap is set by construction: with S
// stages, every compute but the last overlaps a load for Overlap*C cycles,
// so overlap(load, compute) = (S-1)*Overlap*C / (S*L).
func TestEmulatedPipeline(t *testing.T) {
	for _, ov := range []float64{0, 0.5, 1} {
		l, err := emu.ProducerConsumer(emu.PCConfig{CTAs: 3, Stages: 8, LoadCycles: 2000, ComputeCycles: 2000, Overlap: ov})
		if err != nil {
			t.Fatal(err)
		}
		in := decode(t, l)
		want := 7 * ov * 2000 / (8 * 2000)
		rules := []Rule{
			mustRule(t, "strict"),
			mustRule(t, "no_drops"),
			mustRule(t, "before(load, compute)"),
			mustRule(t, "count(compute, role=consumer) == 8"),
			mustRule(t, "count(load, role=producer) == 8"),
			mustRule(t, "p50(compute) <= 1011ns"), // 2000 cycles at 1980 MHz = 1010.1 ns
			mustRule(t, "p50(compute) >= 1009ns"),
			mustRule(t, "overlap(load, compute) >= 0"),
		}
		for _, r := range Evaluate(rules, in, nil) {
			if !r.Pass {
				t.Errorf("overlap %g: %s failed: value %g: %s (worst %s)", ov, r.Rule.Expr, r.Value, r.Message, r.Worst)
			}
			if r.Rule.Kind == KindOverlap {
				t.Logf("overlap %g: measured %.5f, want %.5f", ov, r.Value, want)
			}
			if r.Rule.Kind == KindOverlap && math.Abs(r.Value-want) > 0.01 {
				t.Errorf("overlap %g: measured %g, want %g within 0.01", ov, r.Value, want)
			}
		}
	}
}
