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

// TestWriteLatencyExtraBuilds: a timing with a control, or with the
// program's launches timed untraced (iket run --dormant), gets the build's
// row in the latency table and its column in the rounds table; a timing
// with neither names neither.
func TestWriteLatencyExtraBuilds(t *testing.T) {
	three := func(med, lo, hi float64) *trace.Samples {
		return &trace.Samples{MedianUS: med, MinUS: lo, MaxUS: hi, RoundsUS: []float64{lo, med, hi}}
	}
	tests := []struct {
		name             string
		control, dormant *trace.Samples // with ratio med/10.5 and the paired ratio
		paired           float64
		want, absent     []string
	}{
		{name: "control", control: three(10.625, 10.375, 11.25), paired: 1.0, want: []string{
			"control (uninstrumented again) 10.62 µs 10.38 µs 11.25 µs 3",
			"round uninstrumented instrumented control",
			"1 10.25 µs 10.5 µs 10.38 µs", "3 11 µs 11.5 µs 11.25 µs",
			"ratio 1.012 (paired 1.000)",
		}, absent: []string{"not traced"}},
		{name: "dormant", dormant: three(10.75, 10.5, 11.5), paired: 1.02, want: []string{
			"instrumented, not traced 10.75 µs 10.5 µs 11.5 µs 3",
			"round uninstrumented instrumented not traced",
			"1 10.25 µs 10.5 µs 10.5 µs",
			"median 10.75 µs, ratio 1.024 (paired 1.020): what the build with tracing costs",
		}, absent: []string{"control"}},
		{name: "neither", absent: []string{"control", "not traced"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := synthCapture(t, 4, 4, 64)
			l := c.Meta.Launches[0].Latency
			if l.Control = tt.control; l.Control != nil {
				l.ControlRatio, l.ControlPairedRatio = l.Control.MedianUS/10.5, tt.paired
			}
			if l.Dormant = tt.dormant; l.Dormant != nil {
				l.DormantRatio, l.DormantPairedRatio = l.Dormant.MedianUS/10.5, tt.paired
			}
			text := section(t, render(t, synthInput(t, c, Limits{})), "latency")
			for _, want := range tt.want {
				if !strings.Contains(text, want) {
					t.Errorf("latency section lacks %q; it reads:\n%s", want, text)
				}
			}
			for _, no := range tt.absent {
				if strings.Contains(text, no) {
					t.Errorf("latency section names %q; it reads:\n%s", no, text)
				}
			}
		})
	}
}
