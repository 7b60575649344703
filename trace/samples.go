package trace

import "slices"

// NewSamples summarises per-round times in microseconds: median (the mean
// of the middle two for an even count), min and max, the rounds kept in
// order.
func NewSamples(roundsUS []float64) Samples {
	s := Samples{RoundsUS: append([]float64(nil), roundsUS...)}
	if len(roundsUS) == 0 {
		return s
	}
	sorted := slices.Clone(roundsUS)
	s.MedianUS, s.MaxUS = medianMax(sorted) // sorts
	s.MinUS = sorted[0]
	return s
}

// Compare sums up build x's rounds against a baseline's (base; round i of
// each timed together): x's samples, the ratio of the medians, and the
// paired ratio, the median over rounds of x[i] / base[i] (rounds with a time
// of 0 left out).
func Compare(base, x []float64) (s Samples, ratio, paired float64) {
	s = NewSamples(x)
	if mb := NewSamples(base).MedianUS; mb > 0 {
		ratio = s.MedianUS / mb
	}
	var q []float64
	for i := range min(len(base), len(x)) {
		if base[i] > 0 && x[i] > 0 {
			q = append(q, x[i]/base[i])
		}
	}
	return s, ratio, NewSamples(q).MedianUS
}
