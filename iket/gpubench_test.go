package iket_test

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/iket-trace/iket/builtin"
	"github.com/iket-trace/iket/iket"
)

// openGPUBench is openGPU for benchmarks.
func openGPUBench(b *testing.B) *iket.Device {
	b.Helper()
	d, err := iket.OpenDevice(0)
	if err != nil {
		if errors.Is(err, iket.ErrNoDevice) && os.Getenv("IKET_REQUIRE_GPU") != "1" {
			b.Skipf("no GPU: %v", err)
		}
		b.Fatalf("open GPU: %v", err)
	}
	b.Cleanup(func() { d.Close() })
	return d
}

// BenchmarkGPUTrace traces warp_roles on a full grid with device-memory and
// host-mapped (watch) buffers; kernel-us is the launch's CUDA-event time, so
// the two sub-benchmarks give the cost of watch mode.
func BenchmarkGPUTrace(b *testing.B) {
	d := openGPUBench(b)
	p, _ := builtin.Lookup("warp_roles")
	src, err := p.Source()
	if err != nil {
		b.Fatal(err)
	}
	inst, err := d.Compile(src, true, "")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { inst.Close() })
	cfg := p.Config(d)
	w, err := p.Setup(d, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close() })
	for _, watch := range []bool{false, true} {
		name := map[bool]string{false: "device", true: "watch"}[watch]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var kernel time.Duration
			n := 0
			for b.Loop() {
				res, err := inst.Trace(cfg, w.Args, iket.TraceOptions{Capacity: 64, Watch: watch})
				if err != nil {
					b.Fatal(err)
				}
				kernel += res.KernelTime
				n++
			}
			b.ReportMetric(float64(kernel)/1e3/float64(max(n, 1)), "kernel-us")
		})
	}
}
