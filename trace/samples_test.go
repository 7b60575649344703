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
