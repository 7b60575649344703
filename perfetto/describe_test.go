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
	if d := describeLaunch(l, &LaunchInfo{}); !strings.Contains(d, "control (the uninstrumented binary again): median 175.300 us: ratio 1.001") || strings.Contains(d, "not traced") {
		t.Errorf("with a control:\n%s", d)
	}
	l.Latency.Dormant, l.Latency.DormantRatio = &trace.Samples{MedianUS: 180.1}, 1.0279
	if d := describeLaunch(l, &LaunchInfo{}); !strings.Contains(d, "instrumented, not traced: median 180.100 us: ratio 1.028") {
		t.Errorf("with the untraced launches (iket run --dormant):\n%s", d)
	}
}
