package trace_test

import (
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
