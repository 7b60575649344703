package trace

import (
	"strings"
	"testing"
)

func TestPerturbation(t *testing.T) {
	base := &Resources{Registers: 40, MaxActiveCTAsPerSM: 4}
	tests := []struct {
		name string
		inst *Resources
		want []string // fragments, one a warning
	}{
		{"same", &Resources{Registers: 48, MaxActiveCTAsPerSM: 4}, nil},
		{"occupancy", &Resources{MaxActiveCTAsPerSM: 3}, []string{"occupancy differs: 3 CTAs per SM traced, 4 uninstrumented"}},
		{"spills", &Resources{MaxActiveCTAsPerSM: 4, LocalBytes: 16}, []string{"local memory (spills) differs: 16 bytes"}},
		{"unknown", nil, nil},
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
		}
	}
}
