package main

import (
	"strings"
	"testing"

	"github.com/iket-trace/iket/trace"
)

func TestWriteLatencyControl(t *testing.T) {
	l := &trace.Latency{Uninstrumented: trace.Samples{MedianUS: 175.2, RoundsUS: []float64{175.2}},
		Instrumented: trace.Samples{MedianUS: 178.8}, Ratio: 1.021}
	var b strings.Builder
	writeLatency(&b, l)
	if got := b.String(); strings.Contains(got, "control") || !strings.Contains(got, "ratio 1.021") {
		t.Errorf("without a control: %q", got)
	}
	if got := b.String(); strings.Contains(got, "paired") {
		t.Errorf("without a paired ratio: %q", got)
	}
	l.Control, l.ControlRatio = &trace.Samples{MedianUS: 175.3}, 1.0006
	b.Reset()
	writeLatency(&b, l)
	if got := b.String(); !strings.Contains(got, "control (the uninstrumented binary again): 175.30 us, ratio 1.001") {
		t.Errorf("with a control: %q", got)
	}
	l.PairedRatio, l.ControlPairedRatio = 1.0183, 0.9996
	b.Reset()
	writeLatency(&b, l)
	if got := b.String(); !strings.Contains(got, "ratio 1.021 (paired 1.018)") || !strings.Contains(got, "ratio 1.001 (paired 1.000)") {
		t.Errorf("with paired ratios: %q", got)
	}
	if got := b.String(); strings.Contains(got, "not traced") {
		t.Errorf("without the untraced launches: %q", got)
	}
	l.Dormant, l.DormantRatio, l.DormantPairedRatio = &trace.Samples{MedianUS: 180.1}, 1.0279, 1.0301
	b.Reset()
	writeLatency(&b, l)
	if got := b.String(); !strings.Contains(got, "instrumented, not traced: 180.10 us, ratio 1.028 (paired 1.030)") {
		t.Errorf("with the untraced launches (iket run --dormant): %q", got)
	}
}
