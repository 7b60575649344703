package report

import (
	"strings"
	"testing"

	"github.com/iket-trace/iket/trace"
)

// TestLatencyViewControl: the settings list the control, the paired ratio
// and the order when the timing had them, and nothing of them otherwise.
func TestLatencyViewControl(t *testing.T) {
	l := &trace.Latency{Uninstrumented: trace.Samples{MedianUS: 175.2}, Instrumented: trace.Samples{MedianUS: 178.8}, Ratio: 1.021}
	text := func(lv *latencyView) string {
		var b strings.Builder
		for _, f := range lv.Settings {
			b.WriteString(f.Label + ": " + f.Value + "\n")
		}
		return b.String()
	}
	if got := text(newLatencyView(l)); strings.Contains(got, "control") || strings.Contains(got, "paired") || strings.Contains(got, "order") {
		t.Errorf("without a control:\n%s", got)
	}
	l.Control, l.ControlRatio, l.PairedRatio = &trace.Samples{MedianUS: 175.3}, 1.0006, 1.0214
	l.Settings.Order = "uninstrumented, instrumented, control, rotating each round"
	got := text(newLatencyView(l))
	for _, want := range []string{"order: uninstrumented, instrumented, control", "paired ratio (median over rounds): 1.021", "control (the uninstrumented binary again): median ", "ratio 1.001"} {
		if !strings.Contains(got, want) {
			t.Errorf("settings lack %q:\n%s", want, got)
		}
	}
}

// TestWriteLatencyControlRounds: a timing with a control gets a control row
// in the latency table and a control column in the rounds table.
func TestWriteLatencyControlRounds(t *testing.T) {
	c := synthCapture(t, 4, 4, 64)
	l := c.Meta.Launches[0].Latency
	l.Control = &trace.Samples{MedianUS: 10.625, MinUS: 10.375, MaxUS: 11.25, RoundsUS: []float64{10.375, 10.625, 11.25}}
	l.ControlRatio, l.ControlPairedRatio = 10.625/10.5, 1.0
	text := section(t, render(t, synthInput(t, c, Limits{})), "latency")
	for _, want := range []string{
		"control (uninstrumented again) 10.62 µs 10.38 µs 11.25 µs 3",
		"round uninstrumented instrumented control",
		"1 10.25 µs 10.5 µs 10.38 µs", "3 11 µs 11.5 µs 11.25 µs",
		"ratio 1.012 (paired 1.000)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("latency section lacks %q; it reads:\n%s", want, text)
		}
	}
}
