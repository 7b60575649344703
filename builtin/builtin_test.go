package builtin

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/iket-trace/iket/iket"
)

func TestBuiltins(t *testing.T) {
	progs := Programs()
	var names []string
	for _, p := range progs {
		names = append(names, p.Name)
	}
	if diff := cmp.Diff([]string{"calibrate", "fault", "hang", "warp_roles"}, names); diff != "" {
		t.Errorf("Programs (-want +got):\n%s", diff)
	}
	for _, p := range progs {
		t.Run(p.Name, func(t *testing.T) {
			src, err := p.Source()
			if err != nil {
				t.Fatal(err)
			}
			if src.Kind != iket.KindCU || !strings.Contains(string(src.Data), `extern "C" __global__`) || !strings.Contains(string(src.Data), " "+p.Entry+"(") {
				t.Errorf("source %s does not define extern \"C\" kernel %s", src.Path, p.Entry)
			}
			if !strings.Contains(string(src.Data), `#include "iket.cuh"`) {
				t.Errorf("source %s does not include iket.cuh", src.Path)
			}
			cfg := p.ConfigFor(132)
			if cfg.Kernel != p.Entry {
				t.Errorf("config kernel %q, want %q", cfg.Kernel, p.Entry)
			}
			if err := cfg.Validate(iket.DefaultLimits); err != nil {
				t.Errorf("config on 132 SMs: %v", err)
			}
		})
	}
	wr, err := Lookup("warp_roles")
	if err != nil {
		t.Fatal(err)
	}
	want := iket.LaunchConfig{Kernel: "warp_roles", Grid: [3]uint32{132 * 8, 1, 1}, Block: [3]uint32{64, 1, 1}}
	if diff := cmp.Diff(want, wr.ConfigFor(132)); diff != "" {
		t.Errorf("warp_roles config (-want +got):\n%s", diff)
	}
	if _, err := Lookup("gemm"); err == nil || !strings.Contains(err.Error(), `"gemm"`) || !strings.Contains(err.Error(), "warp_roles") {
		t.Errorf("Lookup(gemm) error = %v", err)
	}
}

func TestCompareFloats(t *testing.T) {
	want := []float32{1, 2, 3, 4}
	if err := compareFloats("out", floatBytes(want), want, 2); err != nil {
		t.Errorf("equal: %v", err)
	}
	got := floatBytes([]float32{1, 2, float32(math.NaN()), 5})
	err := compareFloats("out", got, want, 2)
	if err == nil || !strings.Contains(err.Error(), "2 of 4 values wrong; first at index 2 (CTA 1)") {
		t.Errorf("mismatch error = %v", err)
	}
	// -0 and +0 differ bit for bit: the check is exact.
	if err := compareFloats("out", floatBytes([]float32{float32(math.Copysign(0, -1))}), []float32{0}, 1); err == nil {
		t.Error("-0 matched +0")
	}
	xs := randomFloats(1000)
	zeros := 0
	for _, x := range xs {
		if x == 0 {
			zeros++
		}
	}
	if zeros != 0 || xs[0] == xs[1] {
		t.Errorf("randomFloats: %d zeros, first two %v %v", zeros, xs[0], xs[1])
	}
}
