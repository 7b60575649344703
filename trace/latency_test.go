package trace_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/iket-trace/iket/trace"
)

// benchLatency is a latency object as kernels/bench writes it for a timing
// with a control, from an H200 run of the gemm at 4096^3, its rounds cut to
// three (the medians, min and max are the full run's).
const benchLatency = `{"uninstrumented": {"median_us": 175.167993, "min_us": 174.592003, "max_us": 175.807998, "rounds_us": [175.2, 174.656004, 175.584003]}, "instrumented": {"median_us": 178.847998, "min_us": 177.440003, "max_us": 179.744005, "rounds_us": [178.719997, 178.591996, 179.327995]}, "control": {"median_us": 175.2, "min_us": 174.367994, "max_us": 176.032007, "rounds_us": [174.495995, 175.520003, 175.423995]}, "control_ratio": 1.000183, "control_paired_ratio": 0.999635, "ratio": 1.021008, "paired_ratio": 1.021386, "settings": {"warmup_calls": 3, "rounds": 21, "calls_per_round": 1, "flush_l2": true, "flush_bytes": 268435456, "interleaved": true, "order": "uninstrumented, instrumented, control, rotating each round", "boundary": "CUDA events around one launch on its own stream; L2 flushed by a 256 MiB cudaMemsetAsync before each call, outside the events"}}`

// TestLatencyControl decodes the bench's latency object the way capture
// metadata is read (unknown fields rejected): the control's samples and the
// paired ratios land in their fields.
func TestLatencyControl(t *testing.T) {
	var l trace.Latency
	dec := json.NewDecoder(strings.NewReader(benchLatency))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		t.Fatal(err)
	}
	if l.Control == nil || l.Control.MedianUS != 175.2 || len(l.Control.RoundsUS) != 3 {
		t.Fatalf("control %+v", l.Control)
	}
	if l.ControlRatio != 1.000183 || l.ControlPairedRatio != 0.999635 || l.PairedRatio != 1.021386 || l.Ratio != 1.021008 {
		t.Errorf("ratios %+v", l)
	}
	if !strings.HasPrefix(l.Settings.Order, "uninstrumented, instrumented, control") {
		t.Errorf("order %q", l.Settings.Order)
	}
	// A latency without a control writes none of the control fields.
	l.Control, l.ControlRatio, l.ControlPairedRatio, l.PairedRatio, l.Settings.Order = nil, 0, 0, 0, ""
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"control", "paired_ratio", "order"} {
		if bytes.Contains(b, []byte(`"`+f)) {
			t.Errorf("%s written without a control: %s", f, b)
		}
	}
}
