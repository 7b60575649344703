package trace_test

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/trace"
)

func ExampleDecoder() {
	l, _ := emu.ProducerConsumer(emu.PCConfig{CTAs: 1, Stages: 2, LoadCycles: 1980, ComputeCycles: 990})
	data, _ := l.Capture()
	c, _ := emu.Read(data)
	d, err := trace.NewDecoder(c.Launch(0), trace.Options{Strict: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	m := c.Launch(0).Meta
	var w trace.Warp
	for {
		err := d.Next(&w)
		if err == io.EOF {
			break
		}
		var we *trace.WarpError
		if errors.As(err, &we) {
			continue
		}
		fmt.Printf("warp %d (%s):", w.Warp, m.NameText(w.Role))
		for _, r := range w.Ranges {
			// Each end is rounded to the ns: print to 10 ns.
			fmt.Printf(" %s/%d %.2fus", m.NameText(r.Name), r.Payload, float64(r.Duration())/1000)
		}
		fmt.Println()
	}
	fmt.Printf("%.0f MHz, violations: %v\n", d.Clocks()[0].MHz, d.Err())
	// Output:
	// warp 0 (producer): load/0 1.00us load/1 1.00us
	// warp 1 (consumer): compute/0 0.50us compute/1 0.50us
	// 1980 MHz, violations: <nil>
}

func ExampleAnalyze() {
	l, _ := emu.ProducerConsumer(emu.PCConfig{CTAs: 2, Stages: 4, LoadCycles: 1980, ComputeCycles: 1980, Overlap: 0.5})
	data, _ := l.Capture()
	c, _ := emu.Read(data)
	a, err := trace.Analyze(context.Background(), c.Launch(0), trace.Options{Strict: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	o, _ := a.Analyzer.Overlap("load", "compute")
	s, _ := a.Analyzer.RangeStat("consumer", "compute")
	fmt.Printf("%d warps, %d events, %d violations, %d excluded\n", a.Summary.Warps, a.Summary.Stored, a.Summary.TotalViolations(), a.NumExcluded)
	fmt.Printf("compute: %d ranges, p50 %.0f ns; load overlaps compute for %.1f%% of its time\n", s.Count, s.P50Ns, 100*o.Overall)
	// Output:
	// 4 warps, 40 events, 0 violations, 0 excluded
	// compute: 8 ranges, p50 1000 ns; load overlaps compute for 37.5% of its time
}
