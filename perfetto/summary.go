package perfetto

import (
	"fmt"
	"slices"
)

// summary accumulates, per key, the integral over time of a counter (warps
// inside a range, warps running) into a fixed number of time bins that
// double in width as the launch's time span grows. Memory is bins x keys,
// whatever the number of warps.
type summary struct {
	nb     int
	origin int64
	width  int64
	have   bool
	// bins holds per key 2*nb values: the integral over each bin, then the
	// differences of the whole-bin values still to add (see addSpan).
	bins map[uint32][]float64
	tmp  []float64
	// floor is the trace's time 0 in the launch's own times (minus the
	// shift of a merged trace): no time goes before it.
	floor int64
}

func (s *summary) reset(nb int) {
	s.nb = nb
	s.have = false
	s.bins = make(map[uint32][]float64)
}

// add adds value v over [t0, t1) to key. Times before floor are left out
// (the trace has none), so that the bins' origin, which moves left by whole
// spans as the bins widen, can only put the first non-empty bin's start
// before floor.
func (s *summary) add(key uint32, t0, t1 int64, v float64) {
	t0 = max(t0, s.floor)
	if t1 <= t0 || v == 0 {
		return
	}
	if !s.ensure(t0, t1) {
		return
	}
	x := s.bins[key]
	if x == nil {
		x = s.newKey(key)
	}
	s.addSpan(x, t0, t1, v)
}

func (s *summary) newKey(key uint32) []float64 {
	x := make([]float64, 2*s.nb)
	s.bins[key] = x
	return x
}

// addSpan adds v over [t0, t1), inside the bins, to a key's values x: the
// first and last bins' parts directly, the whole bins between as v times
// the width, kept as a difference (+v at the first, -v after the last) that
// settle adds in, so that a long span costs no more than a short one. The
// values are integers (warps times ns) far below 2^53, so the float sums
// are exact whatever their order.
func (s *summary) addSpan(x []float64, t0, t1 int64, v float64) {
	b, d := x[:s.nb], x[s.nb:2*s.nb]
	i0 := (t0 - s.origin) / s.width
	i1 := (t1 - 1 - s.origin) / s.width
	if i0 == i1 {
		b[i0] += v * float64(t1-t0)
		return
	}
	b[i0] += v * float64(s.origin+(i0+1)*s.width-t0)
	b[i1] += v * float64(t1-(s.origin+i1*s.width))
	if i1 > i0+1 {
		d[i0+1] += v
		d[i1] -= v
	}
}

// settle adds a key's pending whole-bin values (addSpan) into its bins.
func (s *summary) settle(x []float64) {
	b, d := x[:s.nb], x[s.nb:2*s.nb]
	w := float64(s.width)
	var run float64
	for i := range b {
		run += d[i]
		b[i] += run * w
		d[i] = 0
	}
}

// binWalk adds a step function of one key to the summary: intervals in
// time order, as [summary.add] would, but walking the bins from one
// interval to the next instead of dividing for each (the ensure calls, and
// so the bins' layout, are the same).
type binWalk struct {
	s             *summary
	key           uint32
	x             []float64 // the key's values (summary.bins)
	origin, width int64     // the layout i and lo were computed for
	i, lo         int64     // bin i starts at lo
}

func (s *summary) walk(key uint32) binWalk { return binWalk{s: s, key: key} }

// add adds v over [t0, t1); t0 is not before the previous call's t1.
func (w *binWalk) add(t0, t1 int64, v float64) {
	s := w.s
	t0 = max(t0, s.floor)
	if t1 <= t0 || v == 0 {
		return
	}
	if !s.have || t0 < s.origin || t1 > s.origin+int64(s.nb)*s.width {
		if !s.ensure(t0, t1) {
			return
		}
	}
	if w.x == nil {
		if w.x = s.bins[w.key]; w.x == nil {
			w.x = s.newKey(w.key)
		}
		w.width = 0
	}
	if w.width != s.width || w.origin != s.origin || t0 < w.lo || t0-w.lo >= 4*w.width {
		w.origin, w.width = s.origin, s.width
		w.i = (t0 - s.origin) / s.width
		w.lo = s.origin + w.i*s.width
	}
	for w.lo+w.width <= t0 {
		w.i++
		w.lo += w.width
	}
	if t1-w.lo > 3*w.width {
		s.addSpan(w.x, t0, t1, v)
		return
	}
	b := w.x[:s.nb]
	for {
		hi := w.lo + w.width
		if t1 <= hi {
			b[w.i] += v * float64(t1-t0)
			return
		}
		b[w.i] += v * float64(hi-t0)
		t0 = hi
		w.i++
		w.lo = hi
	}
}

// ensure grows the bins until they cover [t0, t1); false when the span is
// too large to represent.
func (s *summary) ensure(t0, t1 int64) bool {
	if !s.have {
		s.origin = t0
		s.width = max(1, (t1-t0+int64(s.nb)-1)/int64(s.nb))
		s.have = true
		return true
	}
	for t0 < s.origin || t1 > s.origin+int64(s.nb)*s.width {
		if s.width > 1<<52 {
			return false
		}
		left := t0 < s.origin
		for _, x := range s.bins {
			s.settle(x)
			b := x[:s.nb]
			s.tmp = append(s.tmp[:0], b...)
			clear(b)
			for i, x := range s.tmp {
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
	return true
}

// writeSummary writes the launch's summary tracks at the top of the launch:
// for each key, the mean number of warps over each bin.
func (w *Writer) writeSummary() {
	s := &w.sum
	if !s.have {
		return
	}
	keys := make([]uint32, 0, len(s.bins))
	for k := range s.bins {
		keys = append(keys, k)
	}
	// "warps running" first, then by role and name.
	slices.SortFunc(keys, func(a, b uint32) int {
		if a == keyRunning || b == keyRunning {
			if a == b {
				return 0
			}
			if a == keyRunning {
				return -1
			}
			return 1
		}
		return int(int64(a) - int64(b))
	})
	desc := fmt.Sprintf("mean over bins of %d ns across the launch", s.width)
	for i, k := range keys {
		x := s.bins[k]
		s.settle(x)
		b := x[:s.nb]
		lo, hi := -1, -1
		for j, x := range b {
			if x != 0 {
				if lo < 0 {
					lo = j
				}
				hi = j
			}
		}
		if lo < 0 {
			continue
		}
		id := w.launchTrack(bSummary, uint64(k))
		w.sc = append(w.sc[:0], "avg "...)
		w.sc = appendKeyName(w.sc, w.lm, k)
		w.track(id, w.launchID, int32(-1_000_000+i), true, false, true, w.sc, desc)
		for j := lo; j <= hi; j++ {
			// A counter holds its value until the next sample: a bin with
			// the previous bin's mean needs none. Only bin lo can start
			// before floor (add keeps times >= floor).
			if j > lo && b[j] == b[j-1] {
				continue
			}
			w.doubleCounter(id, max(s.origin+int64(j)*s.width, s.floor), b[j]/float64(s.width))
		}
		w.doubleCounter(id, s.origin+int64(hi+1)*s.width, 0)
	}
}
