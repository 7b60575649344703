package trace

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// This file analyses the warps of one CTA together: overlap between range
// names, the order of payload-matched ranges, and occupancy. The warps of a
// CTA are consecutive slots, so the Analyzer holds the ranges of one CTA at a
// time and reduces each CTA to a few numbers per name and name pair when the
// next CTA begins. A CTA whose warps are added in two separate runs is
// analysed as two CTAs.

// CTAOverlap is the overlap of one CTA.
type CTAOverlap struct {
	CTA          [3]uint32 `json:"cta"`
	CTALinear    uint64    `json:"cta_linear"`
	OverlappedNs int64     `json:"overlapped_ns"`
	ActiveNs     int64     `json:"active_ns"` // time x is active on some warp
	Share        float64   `json:"share"`     // OverlappedNs / ActiveNs
}

// OverlapResult is overlap(X, Y): the share of the time range X is active on
// some warp of a CTA during which range Y is active on another warp of that
// CTA. Precisely, per CTA, with X_w and Y_w the union of warp w's X and Y
// ranges (as half-open intervals [Start, End)):
//
//	active     = | ∪_w X_w |
//	overlapped = | { t : t ∈ X_w and t ∈ Y_v for some warps w ≠ v } |
//	share      = overlapped / active
//
// Overall is time-weighted over CTAs: Σ overlapped / Σ active. It is 0 when
// X was never active (ActiveNs 0, no CTAs). A warp's own Y ranges never
// count as overlap of its own X ranges.
type OverlapResult struct {
	X, Y         string
	Overall      float64      `json:"overall"`
	OverlappedNs int64        `json:"overlapped_ns"`
	ActiveNs     int64        `json:"active_ns"`
	CTAs         []CTAOverlap `json:"ctas"` // CTAs where X was active, in slot order
	// MinCTA is the smallest per-CTA share and Worst that CTA (the first one
	// on ties); both zero when CTAs is empty.
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
	A, B       string
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
// among the CTA's warps in the order they were added.
type ctaRange struct {
	name, payload uint16
	warp          int32
	start, end    int64
}

type ctaWarp struct {
	ref  WarpRef
	role uint16
}

type ctaInfo struct {
	linear uint64
	cta    [3]uint32
}

// nameCTA is one CTA where a name ran.
type nameCTA struct {
	cta      int32 // index in ctaAnalysis.ctas
	ranges   uint32
	activeNs int64
	first    WarpRef // warp of the first range (by start)
	start    int64   // its start
	payload  uint16  // its payload
}

// pairCTA is one CTA where both names of a pair ran.
type pairCTA struct {
	cta        int32
	overlapped int64
}

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

func (o *orderAcc) merge(p *orderAcc) {
	o.checked += p.checked
	o.violations += p.violations
	if p.has && (!o.has || p.worst.EarlyNs() > o.worst.EarlyNs()) {
		o.worst, o.has = p.worst, true
	}
}

// ctaResults are the per-CTA reductions.
type ctaResults struct {
	names map[uint16][]nameCTA
	pairs map[uint32][]pairCTA // key x<<16 | y
	order map[uint32]*orderAcc // key a<<16 | b, a != b
}

func newCTAResults() ctaResults {
	return ctaResults{names: map[uint16][]nameCTA{}, pairs: map[uint32][]pairCTA{}, order: map[uint32]*orderAcc{}}
}

// step is one point of a per-name step function: from t on, n warps have
// the name active; when n == 1, w is that warp.
type step struct {
	t int64
	n int32
	w int64 // sum of the warps' indices: the warp itself when n == 1
}

// nameSteps is the step function and grouping of one name in a CTA.
type nameSteps struct {
	name   uint16
	lo, hi int // its ranges in the payload-sorted slice
	steps  []step
	active int64
}

type ctaAnalysis struct {
	open   bool
	cur    ctaInfo
	warps  []ctaWarp
	ranges []ctaRange // arrival order: (warp, start)
	sorted []ctaRange // by (name, payload, warp, start), from buildSteps
	ctas   []ctaInfo
	done   ctaResults

	// scratch
	byName  []nameSteps
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

func (c *ctaAnalysis) init() { c.done = newCTAResults() }

// add appends a started warp's ranges, closing the previous CTA first when w
// belongs to another one.
func (c *ctaAnalysis) add(w *Warp) {
	if c.open && w.CTALinear != c.cur.linear {
		c.process(int32(len(c.ctas)), &c.done)
		c.ctas = append(c.ctas, c.cur)
		c.open = false
	}
	if !c.open {
		c.open = true
		c.cur = ctaInfo{linear: w.CTALinear, cta: w.CTA}
		c.warps = c.warps[:0]
		c.ranges = c.ranges[:0]
	}
	wi := int32(len(c.warps))
	c.warps = append(c.warps, ctaWarp{ref: refOf(w), role: w.Role})
	base := len(c.ranges)
	for i := range w.Ranges {
		r := &w.Ranges[i]
		c.ranges = append(c.ranges, ctaRange{name: r.Name, payload: r.Payload, warp: wi, start: r.Start, end: r.End})
	}
	// A Decoder gives ranges in start order; keep that order for any caller.
	batch := c.ranges[base:]
	if !slices.IsSortedFunc(batch, func(p, q ctaRange) int { return cmp.Compare(p.start, q.start) }) {
		slices.SortStableFunc(batch, func(p, q ctaRange) int { return cmp.Compare(p.start, q.start) })
	}
}

// results returns the reductions of every CTA added so far: the finished
// CTAs' and, computed now, the open one's. The open CTA has index
// len(c.ctas) and info c.cur.
func (c *ctaAnalysis) results() (ctaResults, []ctaInfo) {
	if !c.open {
		return c.done, c.ctas
	}
	p := newCTAResults()
	c.process(int32(len(c.ctas)), &p)
	r := newCTAResults()
	for k, v := range c.done.names {
		r.names[k] = v
	}
	for k, v := range p.names {
		r.names[k] = append(slices.Clip(r.names[k]), v...)
	}
	for k, v := range c.done.pairs {
		r.pairs[k] = v
	}
	for k, v := range p.pairs {
		r.pairs[k] = append(slices.Clip(r.pairs[k]), v...)
	}
	for k, v := range c.done.order {
		o := *v
		r.order[k] = &o
	}
	for k, v := range p.order {
		if o := r.order[k]; o != nil {
			o.merge(v)
		} else {
			r.order[k] = v
		}
	}
	return r, append(slices.Clip(c.ctas), c.cur)
}

// process reduces the open CTA into out, as CTA index idx.
func (c *ctaAnalysis) process(idx int32, out *ctaResults) {
	if len(c.ranges) == 0 {
		return
	}
	c.buildSteps()
	for i := range c.byName {
		ns := &c.byName[i]
		first := c.sorted[ns.lo]
		for _, r := range c.sorted[ns.lo+1 : ns.hi] {
			if r.start < first.start {
				first = r
			}
		}
		out.names[ns.name] = append(out.names[ns.name], nameCTA{
			cta: idx, ranges: uint32(ns.hi - ns.lo), activeNs: ns.active,
			first: c.warps[first.warp].ref, start: first.start, payload: first.payload,
		})
	}
	for i := range c.byName {
		x := &c.byName[i]
		for j := range c.byName {
			y := &c.byName[j]
			k := uint32(x.name)<<16 | uint32(y.name)
			out.pairs[k] = append(out.pairs[k], pairCTA{cta: idx, overlapped: overlapSteps(x.steps, y.steps)})
			if i != j {
				o := out.order[k]
				if o == nil {
					o = &orderAcc{}
					out.order[k] = o
				}
				c.order(x, y, o)
			}
		}
	}
}

// buildSteps fills c.sorted with the CTA's ranges sorted by (name, payload,
// warp, start) and c.byName with each name's step function. c.ranges stays
// in arrival order, which is (warp, start) order. The sorts are on packed
// integer keys: this is the analyzer's hot path.
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
		// The name's ranges in arrival order: the keys' low halves, sorted.
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

// overlapSteps returns the time when x is active on a warp and y on another.
func overlapSteps(xs, ys []step) int64 {
	var sx, sy step // n == 0
	var total int64
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
		if sx.n == 0 || sy.n == 0 {
			continue
		}
		if sx.n == 1 && sy.n == 1 && sx.w == sy.w {
			continue // the only x warp is the only y warp
		}
		// Until the next change of either function.
		next := int64(math.MaxInt64)
		if i < len(xs) {
			next = xs[i].t
		}
		if j < len(ys) {
			next = min(next, ys[j].t)
		}
		total += next - t
	}
	return total
}

// order checks before(x.name, y.name) in the open CTA into o: see
// [Analyzer.Order]. Ranges are sorted by (name, payload, warp, start).
func (c *ctaAnalysis) order(x, y *nameSteps, o *orderAcc) {
	xr := c.sorted[x.lo:x.hi]
	yr := c.sorted[y.lo:y.hi]
	xi := 0
	for lo := 0; lo < len(yr); {
		p := yr[lo].payload
		hi := lo
		for hi < len(yr) && yr[hi].payload == p {
			hi++
		}
		for xi < len(xr) && xr[xi].payload < p {
			xi++
		}
		xhi := xi
		for xhi < len(xr) && xr[xhi].payload == p {
			xhi++
		}
		c.orderPayload(xr[xi:xhi], yr[lo:hi], o)
		lo = hi
	}
}

// orderPayload checks the ranges of one payload, both sorted by (warp, start).
func (c *ctaAnalysis) orderPayload(xr, yr []ctaRange, o *orderAcc) {
	c.groups = c.groups[:0]
	for lo := 0; lo < len(xr); {
		hi := lo
		for hi < len(xr) && xr[hi].warp == xr[lo].warp {
			hi++
		}
		c.groups = append(c.groups, [2]int{lo, hi})
		lo = hi
	}
	for ylo := 0; ylo < len(yr); {
		yhi := ylo
		for yhi < len(yr) && yr[yhi].warp == yr[ylo].warp {
			yhi++
		}
		for k, b := range yr[ylo:yhi] {
			o.checked++
			v := OrderViolation{
				CTA: c.cur.cta, CTALinear: c.cur.linear, Payload: b.payload, Occurrence: k + 1,
				B: c.warps[b.warp].ref, BStart: b.start, Missing: len(xr) == 0, NoA: len(xr) == 0,
			}
			late := false
			for _, g := range c.groups {
				switch {
				case k >= g[1]-g[0]:
					v.Missing, v.A, v.AEnd = true, c.warps[xr[g[0]].warp].ref, 0
				case xr[g[0]+k].end > b.start && (!late || xr[g[0]+k].end > v.AEnd):
					v.A, v.AEnd, late = c.warps[xr[g[0]].warp].ref, xr[g[0]+k].end, true
				}
				if v.Missing {
					break
				}
			}
			if v.Missing || late {
				o.violate(v)
			}
		}
		ylo = yhi
	}
}

// Overlap returns overlap(x, y) over the warps added so far (see
// [OverlapResult] for the definition). x and y are RANGE names of the
// launch and may be equal; an unknown name is an [*UnknownRangeError].
func (a *Analyzer) Overlap(x, y string) (OverlapResult, error) {
	xid, err := a.rangeID(x)
	if err != nil {
		return OverlapResult{}, fmt.Errorf("overlap(%s, %s): %w", x, y, err)
	}
	yid, err := a.rangeID(y)
	if err != nil {
		return OverlapResult{}, fmt.Errorf("overlap(%s, %s): %w", x, y, err)
	}
	res, ctas := a.cta.results()
	return overlapOf(res, ctas, xid, yid, x, y, true), nil
}

func overlapOf(res ctaResults, ctas []ctaInfo, xid, yid uint16, x, y string, list bool) OverlapResult {
	r := OverlapResult{X: x, Y: y}
	pairs := res.pairs[uint32(xid)<<16|uint32(yid)]
	j := 0
	for _, nc := range res.names[xid] {
		var ov int64
		for j < len(pairs) && pairs[j].cta < nc.cta {
			j++
		}
		if j < len(pairs) && pairs[j].cta == nc.cta {
			ov = pairs[j].overlapped
		}
		r.OverlappedNs += ov
		r.ActiveNs += nc.activeNs
		if nc.activeNs == 0 {
			continue
		}
		info := ctas[nc.cta]
		co := CTAOverlap{CTA: info.cta, CTALinear: info.linear, OverlappedNs: ov, ActiveNs: nc.activeNs,
			Share: float64(ov) / float64(nc.activeNs)}
		if list {
			r.CTAs = append(r.CTAs, co)
		}
		if r.Worst.ActiveNs == 0 || co.Share < r.MinCTA {
			r.Worst, r.MinCTA = co, co.Share
		}
	}
	if r.ActiveNs > 0 {
		r.Overall = float64(r.OverlappedNs) / float64(r.ActiveNs)
	}
	return r
}

// OverlapMatrix returns the range names that ran (in id order) and m with
// m[i][j] = overlap(names[i], names[j]).Overall. The slices are the
// caller's.
func (a *Analyzer) OverlapMatrix() (names []string, m [][]float64) {
	res, ctas := a.cta.results()
	ids := sortedNames(res.names)
	names = make([]string, len(ids))
	m = make([][]float64, len(ids))
	for i, x := range ids {
		names[i] = a.meta.NameText(x)
		m[i] = make([]float64, len(ids))
		for j, y := range ids {
			m[i][j] = overlapOf(res, ctas, x, y, "", "", false).Overall
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
// p), consumption k of stage p must wait for load k of stage p. x and y must
// be different RANGE names.
func (a *Analyzer) Order(x, y string) (OrderResult, error) {
	xid, err := a.rangeID(x)
	if err != nil {
		return OrderResult{}, fmt.Errorf("before(%s, %s): %w", x, y, err)
	}
	yid, err := a.rangeID(y)
	if err != nil {
		return OrderResult{}, fmt.Errorf("before(%s, %s): %w", x, y, err)
	}
	if xid == yid {
		return OrderResult{}, fmt.Errorf("before(%s, %s): %w", x, y, errSameRange)
	}
	res, ctas := a.cta.results()
	var acc orderAcc
	if o := res.order[uint32(xid)<<16|uint32(yid)]; o != nil {
		acc = *o
	}
	// CTAs that ran y but no x at all.
	xs := res.names[xid]
	j := 0
	for _, nc := range res.names[yid] {
		for j < len(xs) && xs[j].cta < nc.cta {
			j++
		}
		if j < len(xs) && xs[j].cta == nc.cta {
			continue
		}
		info := ctas[nc.cta]
		acc.checked += uint64(nc.ranges)
		acc.violate(OrderViolation{CTA: info.cta, CTALinear: info.linear, Payload: nc.payload, Occurrence: 1,
			B: nc.first, BStart: nc.start, Missing: true, NoA: true})
		acc.violations += uint64(nc.ranges) - 1
	}
	r := OrderResult{A: x, B: y, Checked: acc.checked, Violations: acc.violations}
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
