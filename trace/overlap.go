package trace

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// This file analyses the warps of one CTA together: overlap between series
// (a range name on one role's warps or on every warp), the order of
// payload-matched ranges, lags and bubbles (pipeline.go), and occupancy. The
// warps of a CTA are consecutive slots, so the Analyzer holds the ranges of
// one CTA at a time and folds each CTA into running sums per tracked series
// and series pair when the next CTA begins: its memory does not grow with
// the CTAs. A CTA whose warps are added in two separate runs is analysed as
// two CTAs.

// CTAOverlap is the overlap of one CTA.
type CTAOverlap struct {
	CTA          [3]uint32 `json:"cta"`
	CTALinear    uint64    `json:"cta_linear"`
	OverlappedNs int64     `json:"overlapped_ns"`
	ActiveNs     int64     `json:"active_ns"` // time x is active on some warp
	Share        float64   `json:"share"`     // OverlappedNs / ActiveNs
}

// OverlapResult is overlap(X, Y): the share of the time series X is active
// on some warp of a CTA during which series Y is active on another warp of
// that CTA. Precisely, per CTA, with X_w and Y_w the union of warp w's X and
// Y ranges (as half-open intervals [Start, End)):
//
//	active     = | ∪_w X_w |
//	overlapped = | { t : t ∈ X_w and t ∈ Y_v for some warps w ≠ v } |
//	share      = overlapped / active
//
// Overall is time-weighted over CTAs: Σ overlapped / Σ active. It is 0 when
// X was never active (ActiveNs 0, no CTAs). A warp's own Y ranges never
// count as overlap of its own X ranges.
type OverlapResult struct {
	X            string  `json:"x"`
	Y            string  `json:"y"`
	Overall      float64 `json:"overall"`
	OverlappedNs int64   `json:"overlapped_ns"`
	ActiveNs     int64   `json:"active_ns"`
	CTAs         uint64  `json:"ctas"` // CTAs where X was active
	// MinCTA is the smallest per-CTA share and Worst that CTA (the first one
	// on ties); both zero when CTAs is 0.
	MinCTA float64    `json:"min_cta"`
	Worst  CTAOverlap `json:"worst"`
}

// OrderViolation is one range B that did not start after its matching range
// A ended (see [Analyzer.Order]).
type OrderViolation struct {
	CTA        [3]uint32 `json:"cta"`
	CTALinear  uint64    `json:"cta_linear"`
	Payload    uint16    `json:"payload"`
	Occurrence int       `json:"occurrence"` // k: the B range is the k-th (1-based) of its warp with this payload
	B          WarpRef   `json:"b"`
	BStart     int64     `json:"b_start"`
	// A is the warp whose k-th A range with the payload ended after BStart
	// (at AEnd), or, with Missing, has no k-th such range. NoA says the CTA
	// ran no A range with the payload at all (A is then zero).
	A       WarpRef `json:"a"`
	AEnd    int64   `json:"a_end"`
	Missing bool    `json:"missing"`
	NoA     bool    `json:"no_a"`
}

// EarlyNs is how long before the end of its A range the B range started
// (AEnd - BStart); it is math.MaxInt64 for a missing A range.
func (v *OrderViolation) EarlyNs() int64 {
	if v.Missing {
		return math.MaxInt64
	}
	return v.AEnd - v.BStart
}

func (v *OrderViolation) String() string {
	where := fmt.Sprintf("cta %d,%d,%d payload %d: range %d of %s", v.CTA[0], v.CTA[1], v.CTA[2], v.Payload, v.Occurrence, v.B)
	switch {
	case v.NoA:
		return where + ": no A range with this payload in the CTA"
	case v.Missing:
		return fmt.Sprintf("%s: %s has no range %d with this payload", where, v.A, v.Occurrence)
	}
	return fmt.Sprintf("%s starts %d ns before range %d of %s ends", where, v.AEnd-v.BStart, v.Occurrence, v.A)
}

// OrderResult is before(A, B): see [Analyzer.Order].
type OrderResult struct {
	A          string `json:"a"`
	B          string `json:"b"`
	Checked    uint64 `json:"checked"`    // B ranges checked
	Violations uint64 `json:"violations"` // B ranges that started too early or had no A
	// Worst is the violation with the largest EarlyNs (a missing A first,
	// the first found on ties); nil when there is none.
	Worst *OrderViolation `json:"worst,omitempty"`
}

// OccupancyPoint is one step of an occupancy step function: from Time on
// (ns), Count warps are inside the range.
type OccupancyPoint struct {
	Time  int64 `json:"t"`
	Count int   `json:"n"`
}

// OccupancySeries counts the warps of one role (Role "" for every role) that
// are inside one range name, as a step function: the first point is the
// first rise from 0, the last one the return to 0. A warp counts once
// however many ranges of the name it has open.
type OccupancySeries struct {
	Role   string           `json:"role"`
	Range  string           `json:"range"`
	Points []OccupancyPoint `json:"points"`
}

// Occupancy is the occupancy of one CTA.
type Occupancy struct {
	CTA       [3]uint32         `json:"cta"`
	CTALinear uint64            `json:"cta_linear"`
	Series    []OccupancySeries `json:"series"` // by role id ("" last), then range id
}

// ctaRange is one range of the CTA being added; warp is the warp's index
// among the CTA's warps in the order they were added, sid and asid its
// tracked series on its role and on every role (-1 when untracked).
type ctaRange struct {
	name, payload uint16
	warp          int32
	sid, asid     int32
	start, end    int64
}

type ctaWarp struct {
	ref  WarpRef
	role uint16
	// cut: a stop-mode warp that dropped events, so it kept the first of
	// its ranges and not every one.
	cut bool
}

type ctaInfo struct {
	linear      uint64
	cta         [3]uint32
	first, last int64 // the earliest warp start and latest warp end
}

func (c *ctaInfo) span() int64 { return max(c.last-c.first, 0) }

type orderAcc struct {
	checked, violations uint64
	worst               OrderViolation
	has                 bool
}

func (o *orderAcc) violate(v OrderViolation) {
	o.violations++
	if !o.has || v.EarlyNs() > o.worst.EarlyNs() {
		o.worst, o.has = v, true
	}
}

// step is one point of a step function: from t on, n warps have the series
// active; when n == 1, w is that warp.
type step struct {
	t int64
	n int32
	w int64 // sum of the warps' indices: the warp itself when n == 1
}

// nameSteps is the step function and grouping of one name in a CTA, for
// occupancy.
type nameSteps struct {
	name   uint16
	lo, hi int // its ranges in the payload-sorted slice
	steps  []step
	active int64
}

// presentSeries is one tracked series that ran in the CTA being closed.
type presentSeries struct {
	sid    int32
	lo, hi int // its ranges in ctaAnalysis.ars, by (payload, warp, start)
	off, n int // its steps in ctaAnalysis.stepBuf
	steps  []step
	active int64
	first  ctaRange // its earliest range
}

type ctaAnalysis struct {
	open   bool
	cur    ctaInfo
	warps  []ctaWarp
	ranges []ctaRange // arrival order: (warp, start)

	// occupancy: by (name, payload, warp, start), from buildSteps
	sorted []ctaRange
	byName []nameSteps

	// analysis scratch
	ents    []uint64   // sid<<48 | payload<<32 | index in ranges
	ars     []ctaRange // ranges in ents order
	present []presentSeries
	at      []int32 // sid -> index in present, -1 when absent

	ivs     []ctaRange
	evs     []stepEvent
	groups  [][2]int
	keys    []uint64
	idx     []uint32
	stepBuf []step
}

type stepEvent struct {
	t int64
	d int32 // +1 or -1
	w int32
}

// closeIfOther folds the open CTA into st when w belongs to another one.
func (c *ctaAnalysis) closeIfOther(w *Warp, st *ctaState) {
	if c.open && w.CTALinear != c.cur.linear {
		c.process(st)
		c.open = false
	}
}

// add appends a started warp's ranges; sid gives the tracked series of
// each range (by index in w.Ranges) on the warp's role and on every role.
func (c *ctaAnalysis) add(w *Warp, stop bool, sid func(i int) (int32, int32)) {
	if !c.open {
		c.open = true
		c.cur = ctaInfo{linear: w.CTALinear, cta: w.CTA, first: w.First, last: w.Last}
		c.warps = c.warps[:0]
		c.ranges = c.ranges[:0]
	}
	c.cur.first, c.cur.last = min(c.cur.first, w.First), max(c.cur.last, w.Last)
	wi := int32(len(c.warps))
	c.warps = append(c.warps, ctaWarp{ref: w.Ref(), role: w.Role, cut: stop && w.Dropped > 0})
	base := len(c.ranges)
	for i := range w.Ranges {
		r := &w.Ranges[i]
		s, as := sid(i)
		c.ranges = append(c.ranges, ctaRange{name: r.Name, payload: r.Payload, warp: wi, sid: s, asid: as, start: r.Start, end: r.End})
	}
	// A Decoder gives ranges in start order; keep that order for any caller.
	batch := c.ranges[base:]
	if !slices.IsSortedFunc(batch, func(p, q ctaRange) int { return cmp.Compare(p.start, q.start) }) {
		slices.SortStableFunc(batch, func(p, q ctaRange) int { return cmp.Compare(p.start, q.start) })
	}
}

// process folds the open CTA into st: per tracked series that ran, its
// step function, then every pair with it. Time is O(n log n) in the CTA's
// ranges plus, per pair of series present, their steps and ranges; pairs
// with an absent series are O(1).
func (c *ctaAnalysis) process(st *ctaState) {
	c.ents = c.ents[:0]
	for i, r := range c.ranges {
		if r.sid >= 0 {
			c.ents = append(c.ents, uint64(r.sid)<<48|uint64(r.payload)<<32|uint64(i))
		}
		if r.asid >= 0 {
			c.ents = append(c.ents, uint64(r.asid)<<48|uint64(r.payload)<<32|uint64(i))
		}
	}
	if len(c.ents) == 0 {
		return
	}
	slices.Sort(c.ents)
	c.ars = c.ars[:0]
	for _, k := range c.ents {
		c.ars = append(c.ars, c.ranges[uint32(k)])
	}
	c.present = c.present[:0]
	c.stepBuf = c.stepBuf[:0]
	for lo := 0; lo < len(c.ents); {
		sid := int32(c.ents[lo] >> 48)
		hi := lo + 1
		for hi < len(c.ents) && int32(c.ents[hi]>>48) == sid {
			hi++
		}
		// The series' ranges in arrival order: the keys' low halves, sorted.
		c.idx = c.idx[:0]
		for _, k := range c.ents[lo:hi] {
			c.idx = append(c.idx, uint32(k))
		}
		slices.Sort(c.idx)
		c.ivs = c.ivs[:0]
		first := c.ranges[c.idx[0]]
		for _, j := range c.idx {
			r := c.ranges[j]
			c.ivs = unionAppend(c.ivs, r)
			if r.start < first.start {
				first = r
			}
		}
		off := len(c.stepBuf)
		var active int64
		c.stepBuf, active = c.appendSteps(c.stepBuf, c.ivs)
		c.present = append(c.present, presentSeries{sid: sid, lo: lo, hi: hi, off: off, n: len(c.stepBuf) - off, active: active, first: first})
		lo = hi
	}
	for len(c.at) < len(st.series) {
		c.at = append(c.at, -1)
	}
	for i := range c.present {
		p := &c.present[i]
		p.steps = c.stepBuf[p.off : p.off+p.n : p.off+p.n]
		c.at[p.sid] = int32(i)
	}
	span := c.cur.span()
	share := func(a, b int64) float64 {
		if b <= 0 {
			return 0
		}
		return float64(a) / float64(b)
	}
	for xi := range c.present {
		x := &c.present[xi]
		xname := st.series[x.sid].name
		row := st.pairs[x.sid]
		n := uint64(x.hi - x.lo)
		for y := range st.series {
			p := &row[y]
			yname := st.series[y].name
			if yi := c.at[y]; yi >= 0 {
				ys := &c.present[yi]
				ov, yOnly := sweep(x.steps, ys.steps)
				if x.active > 0 {
					p.overlapCTA(CTAOverlap{CTA: c.cur.cta, CTALinear: c.cur.linear, OverlappedNs: ov, ActiveNs: x.active, Share: share(ov, x.active)})
				}
				p.bubble += yOnly
				p.span += span
				p.bubbleWorst(CTABubble{CTA: c.cur.cta, CTALinear: c.cur.linear, BubbleNs: yOnly, SpanNs: span, Share: share(yOnly, span)})
				if xname != yname {
					c.order(c.ars[x.lo:x.hi], c.ars[ys.lo:ys.hi], p)
				}
				continue
			}
			if x.active > 0 {
				p.overlapCTA(CTAOverlap{CTA: c.cur.cta, CTALinear: c.cur.linear, ActiveNs: x.active})
			}
			p.span += span
			// The pair the other way round: x runs where y never does.
			q := &st.pairs[y][x.sid]
			q.bubble += x.active
			q.span += span
			q.bubbleWorst(CTABubble{CTA: c.cur.cta, CTALinear: c.cur.linear, BubbleNs: x.active, SpanNs: span, Share: share(x.active, span)})
			if xname != yname {
				q.noA(n, c.noA(x.first))
			}
		}
	}
	for i := range c.present {
		x := &c.present[i]
		s := &st.series[x.sid]
		c.at[x.sid] = -1
		s.active += x.active
		s.span += span
		s.ranges += uint64(x.hi - x.lo)
		// ars is sorted by payload within the series: its last is the largest
		s.staged = s.staged || c.ars[x.hi-1].payload != 0
		if !s.hasRanges {
			s.firstNoA, s.hasRanges = c.noA(x.first), true
		}
		if x.active > 0 {
			s.ctas++
			if !s.hasFirst {
				s.first, s.hasFirst = CTAOverlap{CTA: c.cur.cta, CTALinear: c.cur.linear, ActiveNs: x.active}, true
			}
		}
		b := CTABubble{CTA: c.cur.cta, CTALinear: c.cur.linear, BubbleNs: x.active, SpanNs: span, Share: share(x.active, span)}
		if b.BubbleNs > 0 && b.Share > s.busiest.Share {
			s.busiest = b
		}
	}
}

// noA is range r as the first B range of a CTA with no A range.
func (c *ctaAnalysis) noA(r ctaRange) OrderViolation {
	return OrderViolation{CTA: c.cur.cta, CTALinear: c.cur.linear, Payload: r.payload, Occurrence: 1,
		B: c.warps[r.warp].ref, BStart: r.start, Missing: true, NoA: true}
}

// sweep returns the time when xs is active on a warp and ys on another,
// and the time when ys is active and xs on no warp.
func sweep(xs, ys []step) (overlapped, yOnly int64) {
	var sx, sy step // n == 0
	i, j := 0, 0
	for i < len(xs) || j < len(ys) {
		var t int64
		switch {
		case j >= len(ys) || (i < len(xs) && xs[i].t <= ys[j].t):
			t = xs[i].t
		default:
			t = ys[j].t
		}
		for i < len(xs) && xs[i].t == t {
			sx = xs[i]
			i++
		}
		for j < len(ys) && ys[j].t == t {
			sy = ys[j]
			j++
		}
		if sy.n == 0 {
			continue
		}
		// Until the next change of either function.
		next := int64(math.MaxInt64)
		if i < len(xs) {
			next = xs[i].t
		}
		if j < len(ys) {
			next = min(next, ys[j].t)
		}
		if next == math.MaxInt64 {
			continue // cannot happen: a step function ends at n == 0
		}
		switch {
		case sx.n == 0:
			yOnly += next - t
		case sx.n == 1 && sy.n == 1 && sx.w == sy.w:
			// the only x warp is the only y warp
		default:
			overlapped += next - t
		}
	}
	return overlapped, yOnly
}

// order checks before(x, y) and measures lag(x, y) in the closed CTA into p:
// see [Analyzer.Order] and [Analyzer.Lag]. Both slices are sorted by
// (payload, warp, start).
func (c *ctaAnalysis) order(xr, yr []ctaRange, p *pairAcc) {
	o, l := p.orderAcc(), p.lagAcc()
	xi := 0
	for lo := 0; lo < len(yr); {
		pl := yr[lo].payload
		hi := lo
		for hi < len(yr) && yr[hi].payload == pl {
			hi++
		}
		for xi < len(xr) && xr[xi].payload < pl {
			xi++
		}
		xhi := xi
		for xhi < len(xr) && xr[xhi].payload == pl {
			xhi++
		}
		c.orderPayload(xr[xi:xhi], yr[lo:hi], o, l)
		lo = hi
	}
}

// orderPayload checks the ranges of one payload, both sorted by (warp,
// start); yr is not empty.
func (c *ctaAnalysis) orderPayload(xr, yr []ctaRange, o *orderAcc, l *lagAcc) {
	c.groups = c.groups[:0]
	most := 0 // the x warp with the most ranges of the stage: how many
	xcut := false
	for lo := 0; lo < len(xr); {
		hi := lo
		for hi < len(xr) && xr[hi].warp == xr[lo].warp {
			hi++
		}
		c.groups = append(c.groups, [2]int{lo, hi})
		most = max(most, hi-lo)
		xcut = xcut || c.warps[xr[lo].warp].cut
		lo = hi
	}
	st := l.stage(yr[0].payload)
	for ylo := 0; ylo < len(yr); {
		yhi := ylo
		for yhi < len(yr) && yr[yhi].warp == yr[ylo].warp {
			yhi++
		}
		// A stop-mode warp that dropped events kept its first ranges: its
		// count says nothing of the pipeline's shape, and its lags stand.
		if len(xr) > 0 && !xcut && !c.warps[yr[ylo].warp].cut {
			l.warps++
			if yhi-ylo != most {
				l.uneven++
			}
		}
		for k, b := range yr[ylo:yhi] {
			o.checked++
			v := OrderViolation{
				CTA: c.cur.cta, CTALinear: c.cur.linear, Payload: b.payload, Occurrence: k + 1,
				B: c.warps[b.warp].ref, BStart: b.start, Missing: len(xr) == 0, NoA: len(xr) == 0,
			}
			// The latest end among the k-th x ranges of the x warps, and
			// the first x warp with no k-th range.
			missing := -1
			var end int64
			var endWarp int32
			has := false
			for gi, g := range c.groups {
				if k >= g[1]-g[0] {
					if missing < 0 {
						missing = gi
					}
					continue
				}
				if e := xr[g[0]+k]; !has || e.end > end {
					end, endWarp, has = e.end, e.warp, true
				}
			}
			switch {
			case missing >= 0:
				v.Missing, v.A = true, c.warps[xr[c.groups[missing][0]].warp].ref
				o.violate(v)
			case v.Missing:
				o.violate(v)
			case has && end > b.start:
				v.A, v.AEnd = c.warps[endWarp].ref, end
				o.violate(v)
			}
			if !has {
				l.unmatched++
				continue
			}
			l.add(LagSample{CTA: c.cur.cta, CTALinear: c.cur.linear, Payload: b.payload, Occurrence: k + 1,
				X: c.warps[endWarp].ref, XEnd: end, Y: c.warps[b.warp].ref, YStart: b.start, LagNs: b.start - end}, st)
		}
		ylo = yhi
	}
}

// buildSteps fills c.sorted with the CTA's ranges sorted by (name, payload,
// warp, start) and c.byName with each name's step function, for
// [Analyzer.Occupancy]. c.ranges stays in arrival order, which is (warp,
// start) order.
func (c *ctaAnalysis) buildSteps() {
	c.keys = c.keys[:0]
	for i, r := range c.ranges {
		c.keys = append(c.keys, uint64(r.name)<<48|uint64(r.payload)<<32|uint64(i))
	}
	slices.Sort(c.keys)
	c.sorted = c.sorted[:0]
	for _, k := range c.keys {
		c.sorted = append(c.sorted, c.ranges[uint32(k)])
	}
	c.byName = c.byName[:0]
	c.stepBuf = c.stepBuf[:0]
	for lo := 0; lo < len(c.sorted); {
		hi := lo + 1
		for hi < len(c.sorted) && c.sorted[hi].name == c.sorted[lo].name {
			hi++
		}
		c.byName = append(c.byName, nameSteps{name: c.sorted[lo].name, lo: lo, hi: hi})
		lo = hi
	}
	for i := range c.byName {
		ns := &c.byName[i]
		c.idx = c.idx[:0]
		for _, k := range c.keys[ns.lo:ns.hi] {
			c.idx = append(c.idx, uint32(k))
		}
		slices.Sort(c.idx)
		c.ivs = c.ivs[:0]
		for _, j := range c.idx {
			c.ivs = unionAppend(c.ivs, c.ranges[j])
		}
		start := len(c.stepBuf)
		c.stepBuf, ns.active = c.appendSteps(c.stepBuf, c.ivs)
		ns.steps = c.stepBuf[start:]
	}
	// stepBuf may have moved while growing: re-slice.
	off := 0
	for i := range c.byName {
		n := len(c.byName[i].steps)
		c.byName[i].steps = c.stepBuf[off : off+n : off+n]
		off += n
	}
}

// unionAppend adds r to ivs, ranges arriving in (warp, start) order, merging
// it into the last interval when that is the same warp's and touches it.
// Empty ranges are left out.
func unionAppend(ivs []ctaRange, r ctaRange) []ctaRange {
	if r.end <= r.start {
		return ivs
	}
	if n := len(ivs); n > 0 && ivs[n-1].warp == r.warp && r.start <= ivs[n-1].end {
		ivs[n-1].end = max(ivs[n-1].end, r.end)
		return ivs
	}
	return append(ivs, r)
}

// unionByWarp appends to dst the union of each warp's intervals in rs
// (empty ones left out), in (warp, start) order; keep, when not nil, selects
// the warps.
func unionByWarp(dst, rs []ctaRange, keep func(w int32) bool) []ctaRange {
	base := len(dst)
	for _, r := range rs {
		if r.end > r.start && (keep == nil || keep(r.warp)) {
			dst = append(dst, r)
		}
	}
	iv := dst[base:]
	slices.SortFunc(iv, func(p, q ctaRange) int {
		return cmp.Or(cmp.Compare(p.warp, q.warp), cmp.Compare(p.start, q.start))
	})
	out := dst[:base]
	for _, r := range iv {
		out = unionAppend(out, r)
	}
	return out
}

// appendSteps appends the step function of the per-warp disjoint intervals
// ivs and returns the time at least one warp is inside.
func (c *ctaAnalysis) appendSteps(dst []step, ivs []ctaRange) ([]step, int64) {
	c.evs = c.evs[:0]
	for _, r := range ivs {
		c.evs = append(c.evs, stepEvent{r.start, 1, r.warp}, stepEvent{r.end, -1, r.warp})
	}
	slices.SortFunc(c.evs, func(p, q stepEvent) int { return cmp.Compare(p.t, q.t) })
	var n int32
	var sum, active, last int64
	base := len(dst)
	for i := 0; i < len(c.evs); {
		t := c.evs[i].t
		if n > 0 {
			active += t - last
		}
		for ; i < len(c.evs) && c.evs[i].t == t; i++ {
			n += c.evs[i].d
			sum += int64(c.evs[i].d) * int64(c.evs[i].w)
		}
		last = t
		if k := len(dst); k > base && dst[k-1].n == n && (n != 1 || dst[k-1].w == sum) {
			continue // no change
		}
		dst = append(dst, step{t: t, n: n, w: sum})
	}
	return dst, active
}

// view returns the accumulated state including the open CTA: the live
// state when no CTA is open, else a copy with the open CTA folded in
// (kept until the next Add).
func (a *Analyzer) view() *ctaState {
	if !a.cta.open {
		return &a.st
	}
	if a.viewSt != nil && a.viewGen == a.gen {
		return a.viewSt
	}
	v := a.st.clone()
	a.cta.process(v)
	a.viewSt, a.viewGen = v, a.gen
	return v
}

// pairOf resolves x and y for query fn and returns their tracked series (-1
// for one that never ran).
func (a *Analyzer) pairOf(fn, x, y string) (xr, yr seriesRef, xs, ys int32, err error) {
	if xr, err = a.resolve(x); err == nil {
		if yr, err = a.resolve(y); err == nil {
			if xs, err = a.lookup(xr); err == nil {
				ys, err = a.lookup(yr)
			}
		}
	}
	if err != nil {
		return xr, yr, 0, 0, fmt.Errorf("%s(%s, %s): %w", fn, x, y, err)
	}
	return xr, yr, xs, ys, nil
}

// Overlap returns overlap(x, y) over the warps added so far (see
// [OverlapResult] for the definition). x and y are series ("role:range" or
// a RANGE name, see [Series]) and may be equal; an unknown range name is an
// [*UnknownRangeError], an unknown role an [*UnknownRoleError].
func (a *Analyzer) Overlap(x, y string) (OverlapResult, error) {
	_, _, xs, ys, err := a.pairOf("overlap", x, y)
	if err != nil {
		return OverlapResult{}, err
	}
	return overlapOf(a.view(), xs, ys, x, y), nil
}

func overlapOf(st *ctaState, xs, ys int32, x, y string) OverlapResult {
	r := OverlapResult{X: x, Y: y}
	if xs < 0 {
		return r
	}
	s := &st.series[xs]
	r.ActiveNs, r.CTAs = s.active, s.ctas
	if ys < 0 {
		if s.hasFirst {
			r.Worst = s.first
		}
		return r
	}
	p := &st.pairs[xs][ys]
	r.OverlappedNs, r.MinCTA, r.Worst = p.overlapped, p.minShare, p.worst
	if r.ActiveNs > 0 {
		r.Overall = float64(r.OverlappedNs) / float64(r.ActiveNs)
	}
	return r
}

// matrixSeries returns the tracked series of the overlap matrix and
// pipeline: every role's series by (role id, range id), then the
// every-role series of the names more than one role ran, by range id.
func (a *Analyzer) matrixSeries(st *ctaState) []int32 {
	var keys []uint64
	for i, s := range st.series {
		g := s.g
		if g == aggGroup && len(a.byName[s.name]) < 2 {
			continue
		}
		keys = append(keys, uint64(g)<<32|uint64(s.name)<<16|uint64(i))
	}
	slices.Sort(keys)
	out := make([]int32, len(keys))
	for i, k := range keys {
		out[i] = int32(uint16(k))
	}
	return out
}

// OverlapMatrix returns the series that ran (their [Series] text: every
// role's series by role and range id, then the ranges more than one role
// ran, over every role) and m with m[i][j] = overlap(names[i],
// names[j]).Overall. It covers the first [MaxTrackedSeries] series. The
// slices are the caller's.
func (a *Analyzer) OverlapMatrix() (names []string, m [][]float64) {
	st := a.view()
	ids := a.matrixSeries(st)
	names = make([]string, len(ids))
	m = make([][]float64, len(ids))
	for i, x := range ids {
		names[i] = a.seriesLabel(st.series[x].g, st.series[x].name)
		m[i] = make([]float64, len(ids))
		for j, y := range ids {
			m[i][j] = overlapOf(st, x, y, "", "").Overall
		}
	}
	return names, m
}

// Order returns before(x, y) over the warps added so far. Definition: in
// each CTA, for each payload p, each warp w that ran y with payload p and
// each warp v that ran x with payload p, the k-th y range of w with payload
// p (in start order) must start at or after the end of the k-th x range of
// v with payload p. A y range violates the rule when some such v ends its
// k-th x range later, when some such v has fewer than k, or when the CTA ran
// no x range with payload p. So with one producer warp loading stage p (x,
// payload p) each iteration and consumer warps computing on it (y, payload
// p), consumption k of stage p must wait for load k of stage p. x and y are
// series (see [Series]) of different range names.
func (a *Analyzer) Order(x, y string) (OrderResult, error) {
	xr, yr, xs, ys, err := a.pairOf("before", x, y)
	if err != nil {
		return OrderResult{}, err
	}
	if xr.name == yr.name {
		return OrderResult{}, fmt.Errorf("before(%s, %s): %w", x, y, errSameRange)
	}
	r := OrderResult{A: x, B: y}
	if ys < 0 {
		return r, nil
	}
	st := a.view()
	var acc orderAcc
	if xs < 0 { // no x anywhere: every y range lacks its A
		s := &st.series[ys]
		acc = orderAcc{checked: s.ranges, violations: s.ranges, worst: s.firstNoA, has: s.hasRanges}
	} else if o := st.pairs[xs][ys].order; o != nil {
		acc = *o
	}
	r.Checked, r.Violations = acc.checked, acc.violations
	if acc.has {
		w := acc.worst
		r.Worst = &w
	}
	return r, nil
}

var errSameRange = errors.New("needs two different ranges")

// Occupancy returns the occupancy of CTA cta (a linear CTA index), which
// must be the CTA of the last warp added: the Analyzer keeps one CTA's
// ranges at a time. A streaming exporter calls it for the previous CTA
// before adding the first warp of the next one, and once more after the last
// warp. Asking for another CTA is an error.
func (a *Analyzer) Occupancy(cta uint64) (*Occupancy, error) {
	c := &a.cta
	if !c.open || c.cur.linear != cta {
		if !c.open {
			return nil, fmt.Errorf("occupancy of cta %d: no warp added since the last CTA closed", cta)
		}
		return nil, fmt.Errorf("occupancy of cta %d: the analyzer holds only cta %d, the last one added", cta, c.cur.linear)
	}
	occ := &Occupancy{CTA: c.cur.cta, CTALinear: c.cur.linear}
	if len(c.ranges) == 0 {
		return occ, nil
	}
	c.buildSteps()
	var roles []uint16
	for _, w := range c.warps {
		if !slices.Contains(roles, w.role) {
			roles = append(roles, w.role)
		}
	}
	slices.Sort(roles)
	for _, role := range roles {
		keep := func(w int32) bool { return c.warps[w].role == role }
		for i := range c.byName {
			ns := &c.byName[i]
			c.ivs = unionByWarp(c.ivs[:0], c.sorted[ns.lo:ns.hi], keep)
			if len(c.ivs) == 0 {
				continue
			}
			var steps []step
			steps, _ = c.appendSteps(steps, c.ivs)
			occ.Series = append(occ.Series, OccupancySeries{Role: a.roleText(uint32(role)), Range: a.meta.NameText(ns.name), Points: points(steps)})
		}
	}
	for i := range c.byName {
		ns := &c.byName[i]
		if len(ns.steps) > 0 {
			occ.Series = append(occ.Series, OccupancySeries{Range: a.meta.NameText(ns.name), Points: points(ns.steps)})
		}
	}
	return occ, nil
}

// points converts steps to occupancy points, leaving out the steps where
// only the warp changed.
func points(steps []step) []OccupancyPoint {
	p := make([]OccupancyPoint, 0, len(steps))
	for _, s := range steps {
		if k := len(p); k > 0 && p[k-1].Count == int(s.n) {
			continue
		}
		p = append(p, OccupancyPoint{Time: s.t, Count: int(s.n)})
	}
	return p
}
