package trace_test

import (
	"context"
	"fmt"

	"github.com/iket-trace/iket/internal/bundled"
	"github.com/iket-trace/iket/trace"
)

// ExampleAnalyzer_Overlap reads the capture of a warp-specialized bf16 GEMM
// recorded on an NVIDIA H200 (one producer warp issuing TMA loads per stage,
// two consumer warpgroups computing with wgmma) and asks how much of the
// consumers' compute time has the producer issuing loads on another warp.
func ExampleAnalyzer_Overlap() {
	c, err := bundled.Read(bundled.GEMMName)
	if err != nil {
		fmt.Println(err)
		return
	}
	l := c.Launch(0)
	an, err := trace.Analyze(context.Background(), l, trace.Options{Strict: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	a := an.Analyzer
	o, err := a.Overlap("compute", "issue")
	if err != nil {
		fmt.Println(err)
		return
	}
	s := an.Summary
	fmt.Printf("%s on %s: %d warps, %d events, %d dropped, %d violations\n",
		l.Meta.Kernel, c.Meta.Device.Name, s.Warps, s.Stored, s.Dropped, s.TotalViolations())
	fmt.Printf("compute overlaps issue for %.1f%% of its time (lowest CTA %.1f%%)\n", 100*o.Overall, 100*o.MinCTA)
	// Output:
	// gemm on NVIDIA H200: 384 warps, 10400 events, 0 dropped, 0 violations
	// compute overlaps issue for 22.5% of its time (lowest CTA 22.2%)
}
