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
	l.Control, l.ControlRatio = &trace.Samples{MedianUS: 175.3}, 1.0006
	b.Reset()
	writeLatency(&b, l)
	if got := b.String(); !strings.Contains(got, "control (the uninstrumented binary again): 175.30 us, ratio 1.001") {
		t.Errorf("with a control: %q", got)
	}
}
