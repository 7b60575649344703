package report

import "slices"

// ActivityBins is the number of time bins of an [Activity] strip.
const ActivityBins = 512

// Activity aggregates, for a whole launch, how many warps are inside each
// range name over time: the time integral of the open ranges of each name
// per bin, so that a bin's value divided by its width is the average number
// of open ranges of that name in it (an async range counts once per open
// instance). It also tracks the warps alive (between their start and end
// anchors).
//
// The bins adapt as intervals arrive in any order: their width doubles
// (merging neighbours) whenever an interval falls outside the span, so the
// memory is ActivityBins floats per name and the sums stay exact in ns.
// The zero value is empty and ready to use; an Activity is not safe for
// concurrent use.
type Activity struct {
	base  int64 // the first time added; lo is relative to it
	based bool
	// first and last are the earliest and latest times added (ns).
	first, last int64
	width       int64 // ns per bin, 0 until the first interval
	lo          int64 // start of bin 0 relative to base, a multiple of width
	names       []string
	index       map[string]int
	bins        [][]float64 // by name index, ActivityBins each
	alive       []float64
}

// AddRange adds the interval [start, end) (ns) of a range called name.
// Empty or inverted intervals are ignored.
func (a *Activity) AddRange(name string, start, end int64) {
	if end <= start {
		return
	}
	start, end = a.rel(start), a.rel(end)
	i, ok := a.index[name]
	if !ok {
		if a.index == nil {
			a.index = map[string]int{}
		}
		i = len(a.names)
		a.index[name] = i
		a.names = append(a.names, name)
		a.bins = append(a.bins, make([]float64, ActivityBins))
	}
	a.cover(start, end)
	a.spread(a.bins[i], start, end)
}

// AddAlive adds a warp alive during [start, end) (ns).
func (a *Activity) AddAlive(start, end int64) {
	if end <= start {
		return
	}
	start, end = a.rel(start), a.rel(end)
	if a.alive == nil {
		a.alive = make([]float64, ActivityBins)
	}
	a.cover(start, end)
	a.spread(a.alive, start, end)
}

// Bounds returns the earliest and latest times added (ns).
func (a *Activity) Bounds() (first, last int64) { return a.first, a.last }

// Empty reports whether nothing was added.
func (a *Activity) Empty() bool { return a == nil || a.width == 0 }

// Span returns the start and end (ns) of the bins and the width of one.
func (a *Activity) Span() (lo, hi, width int64) {
	return a.base + a.lo, a.base + a.lo + ActivityBins*a.width, a.width
}

// maxOffset bounds times relative to the first one added (about 13 days),
// so no bin arithmetic can overflow whatever the input.
const maxOffset = 1 << 50

// rel returns t relative to the first time added, clamped to ±maxOffset.
func (a *Activity) rel(t int64) int64 {
	if !a.based {
		a.base, a.based = t, true
		a.first, a.last = t, t
	}
	a.first, a.last = min(a.first, t), max(a.last, t)
	var d int64
	switch {
	case t >= a.base:
		d = t - a.base
		if d < 0 || d > maxOffset { // overflowed or too far
			d = maxOffset
		}
	default:
		d = t - a.base
		if d > 0 || d < -maxOffset {
			d = -maxOffset
		}
	}
	return d
}

// Names returns the range names in the order first added. The slice is the
// caller's.
func (a *Activity) Names() []string { return slices.Clone(a.names) }

// Average returns, per bin, the average number of open ranges called name
// (nil when name was never added), or with alive true the average number of
// warps alive.
func (a *Activity) Average(name string, alive bool) []float64 {
	var b []float64
	if alive {
		b = a.alive
	} else if i, ok := a.index[name]; ok {
		b = a.bins[i]
	}
	if b == nil {
		return nil
	}
	out := make([]float64, len(b))
	for j, v := range b {
		out[j] = v / float64(a.width)
	}
	return out
}

// cover grows the bins until [start, end) lies inside them.
func (a *Activity) cover(start, end int64) {
	if a.width == 0 {
		// Start with 1 ns bins aligned at start; grow from there.
		a.width, a.lo = 1, start
	}
	for start < a.lo || end > a.lo+ActivityBins*a.width {
		a.double(start)
	}
}

// double doubles the bin width and merges every old bin into the new bin
// that contains it. The new start is aligned on the new width (counted from
// the old start) and is the largest such value at or below from, but no
// further left than keeps the old bins' end covered.
func (a *Activity) double(from int64) {
	w2 := a.width * 2
	lo2 := max(floorTo(min(from, a.lo), a.lo, w2), a.lo-(ActivityBins/2)*w2)
	shift := (a.lo - lo2) / a.width // old bin 0 lands at this half-bin index
	remap := func(b []float64) {
		if b == nil {
			return
		}
		nb := make([]float64, ActivityBins)
		for i, v := range b {
			if v != 0 {
				j := (int64(i) + shift) / 2
				if j < ActivityBins {
					nb[j] += v
				}
			}
		}
		copy(b, nb)
	}
	for _, b := range a.bins {
		remap(b)
	}
	remap(a.alive)
	a.lo, a.width = lo2, w2
}

// floorTo returns the largest value <= x of the form ref + k*w.
func floorTo(x, ref, w int64) int64 {
	d := x - ref
	q := d / w
	if d%w != 0 && d < 0 {
		q--
	}
	return ref + q*w
}

// spread adds the overlap of [start, end) with each bin to b.
func (a *Activity) spread(b []float64, start, end int64) {
	hi := a.lo + ActivityBins*a.width
	start, end = max(start, a.lo), min(end, hi)
	if end <= start {
		return
	}
	i := (start - a.lo) / a.width
	for t := start; t < end; i++ {
		binEnd := a.lo + (i+1)*a.width
		e := min(end, binEnd)
		b[i] += float64(e - t)
		t = e
	}
}
