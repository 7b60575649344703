package trace

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNewSamples(t *testing.T) {
	tests := []struct {
		in   []float64
		want Samples
	}{
		{nil, Samples{}},
		{[]float64{3}, Samples{MedianUS: 3, MinUS: 3, MaxUS: 3, RoundsUS: []float64{3}}},
		{[]float64{5, 1, 3}, Samples{MedianUS: 3, MinUS: 1, MaxUS: 5, RoundsUS: []float64{5, 1, 3}}},
		{[]float64{4, 1, 3, 10}, Samples{MedianUS: 3.5, MinUS: 1, MaxUS: 10, RoundsUS: []float64{4, 1, 3, 10}}},
	}
	for _, tt := range tests {
		got := NewSamples(tt.in)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("NewSamples(%v) (-want +got):\n%s", tt.in, diff)
		}
	}
}

// TestCompareUnequal: Compare pairs rounds up to the shorter list, leaves
// out a round with a time of 0, and takes the ratio of all rounds' medians.
func TestCompareUnequal(t *testing.T) {
	s, ratio, paired := Compare([]float64{1, 2, 0}, []float64{2, 4, 6, 8})
	if s.MedianUS != 5 || len(s.RoundsUS) != 4 || ratio != 5 || paired != 2 {
		t.Errorf("Compare: samples %+v, ratio %v, paired %v; want median 5 of 4 rounds, ratio 5, paired 2", s, ratio, paired)
	}
	if _, ratio, paired := Compare(nil, []float64{3}); ratio != 0 || paired != 0 {
		t.Errorf("no baseline: ratio %v, paired %v, want 0 and 0", ratio, paired)
	}
}
