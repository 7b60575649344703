package perfetto

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// naiveSummary is the summary without whole-bin differences or walks: every
// add loops over the bins it covers.
type naiveSummary struct {
	nb            int
	origin, width int64
	have          bool
	bins          map[uint32][]float64
}

func (s *naiveSummary) add(key uint32, t0, t1 int64, v float64) {
	t0 = max(t0, 0)
	if t1 <= t0 || v == 0 {
		return
	}
	if !s.have {
		s.origin, s.width, s.have = t0, max(1, (t1-t0+int64(s.nb)-1)/int64(s.nb)), true
	}
	for t0 < s.origin || t1 > s.origin+int64(s.nb)*s.width {
		left := t0 < s.origin
		for _, b := range s.bins {
			old := append([]float64(nil), b...)
			clear(b)
			for i, x := range old {
				if left {
					b[(s.nb+i)/2] += x
				} else {
					b[i/2] += x
				}
			}
		}
		if left {
			s.origin -= int64(s.nb) * s.width
		}
		s.width *= 2
	}
	b := s.bins[key]
	if b == nil {
		b = make([]float64, s.nb)
		s.bins[key] = b
	}
	for i := (t0 - s.origin) / s.width; i < int64(s.nb); i++ {
		lo := s.origin + i*s.width
		if lo >= t1 {
			break
		}
		b[i] += v * float64(min(lo+s.width, t1)-max(lo, t0))
	}
}

// TestSummaryBins feeds random spans (short and long, growing the bins left
// and right) through add and through walks, and compares the bins with the
// naive summary's: equal, bit for bit.
func TestSummaryBins(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for round := range 200 {
		nb := []int{1, 2, 7, 256}[round%4]
		var s summary
		s.reset(nb)
		n := naiveSummary{nb: nb, bins: map[uint32][]float64{}}
		base := int64(r.IntN(1 << 20))
		for range 1 + r.IntN(30) {
			if r.IntN(2) == 0 {
				t0 := base + int64(r.IntN(1<<16)) - 1<<15
				t1 := t0 + int64(r.IntN(1<<uint(r.IntN(20))))
				v := float64(1 + r.IntN(4))
				s.add(keyRunning, t0, t1, v)
				n.add(keyRunning, t0, t1, v)
				continue
			}
			// A walk: steps in time order, as a CTA counter makes them.
			key := uint32(r.IntN(3))
			w := s.walk(key)
			t := base + int64(r.IntN(1<<16)) - 1<<15
			for range r.IntN(20) {
				t1 := t + int64(r.IntN(1<<uint(r.IntN(16))))
				v := float64(r.IntN(3))
				w.add(t, t1, v)
				n.add(key, t, t1, v)
				t = t1 + int64(r.IntN(1<<uint(r.IntN(14))))
			}
		}
		if s.have != n.have || s.origin != n.origin || s.width != n.width {
			t.Fatalf("round %d: layout (%v, %d, %d), want (%v, %d, %d)", round, s.have, s.origin, s.width, n.have, n.origin, n.width)
		}
		got := map[uint32][]float64{}
		for k, x := range s.bins {
			s.settle(x)
			got[k] = x[:nb]
		}
		if diff := cmp.Diff(n.bins, got); diff != "" {
			t.Fatalf("round %d: bins (-want +got):\n%s", round, diff)
		}
	}
}
