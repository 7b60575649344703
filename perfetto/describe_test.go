package perfetto

import (
	"strings"
	"testing"

	"github.com/iket-trace/iket/trace"
)

// TestDescribeLaunchControl: the launch description names the control's
// ratio when the latency has one, and says nothing of a control otherwise.
func TestDescribeLaunchControl(t *testing.T) {
	l := &trace.LaunchMeta{Kernel: "gemm", Latency: &trace.Latency{
		Uninstrumented: trace.Samples{MedianUS: 175.2},
		Instrumented:   trace.Samples{MedianUS: 178.8},
		Ratio:          1.021,
	}}
	if d := describeLaunch(l, &LaunchInfo{}); strings.Contains(d, "control") || !strings.Contains(d, "ratio 1.021") {
		t.Errorf("without a control:\n%s", d)
	}
	l.Latency.Control = &trace.Samples{MedianUS: 175.3}
	l.Latency.ControlRatio = 1.0006
	if d := describeLaunch(l, &LaunchInfo{}); !strings.Contains(d, "control (the uninstrumented binary again): median 175.300 us: ratio 1.001") {
		t.Errorf("with a control:\n%s", d)
	}
}
