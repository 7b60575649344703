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
