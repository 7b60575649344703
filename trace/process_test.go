package trace

import (
	"strings"
	"testing"
)

func TestPerturbation(t *testing.T) {
	base := &Resources{Registers: 40, MaxActiveCTAsPerSM: 4}
	const capHint = "register cap"
	tests := []struct {
		name string
		inst *Resources
		want []string // fragments, one a warning
		not  string   // a fragment no warning may have
	}{
		{"same", &Resources{Registers: 48, MaxActiveCTAsPerSM: 4}, nil, ""},
		{"occupancy", &Resources{MaxActiveCTAsPerSM: 3}, []string{"occupancy differs: 3 CTAs per SM traced, 4 uninstrumented"}, capHint},
		{"registers", &Resources{Registers: 56, MaxActiveCTAsPerSM: 3}, []string{"3 CTAs per SM traced, 4 uninstrumented (56 registers per thread against 40; a " + capHint + " on the instrumented build, __launch_bounds__(threads per CTA, 4) under #if IKET_ENABLE, may win much of it back; nvcc -maxrregcount=40 "}, ""},
		{"more CTAs", &Resources{Registers: 56, MaxActiveCTAsPerSM: 5}, []string{"5 CTAs per SM traced, 4 uninstrumented"}, capHint},
		{"spills", &Resources{MaxActiveCTAsPerSM: 4, LocalBytes: 16}, []string{"local memory (spills) differs: 16 bytes"}, ""},
		{"unknown", nil, nil, ""},
	}
	for _, tt := range tests {
		got := Perturbation(tt.inst, base)
		if len(got) != len(tt.want) {
			t.Errorf("%s: %q, want %d warnings", tt.name, got, len(tt.want))
			continue
		}
		for i, w := range tt.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: warning %q lacks %q", tt.name, got[i], w)
			}
			if tt.not != "" && strings.Contains(got[i], tt.not) {
				t.Errorf("%s: warning %q has %q", tt.name, got[i], tt.not)
			}
		}
	}
}
