package perfetto

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/iket-trace/iket/trace"
)

// warpInfo is what the writer keeps of a warp besides its ranges and marks.
type warpInfo struct {
	slot      uint64
	sm        uint32
	cta       [3]uint32
	ctaLinear uint64
	warp      uint32
	role      uint16
	finished  bool
	count     uint64
	stored    int
	dropped   uint64
	trimmed   int
	first     int64
	last      int64
	firstEv   int64 // time of the first and last decoded event
	lastEv    int64
	hasEv     bool
}

// violRef is a warp's violation placed on its timeline.
type violRef struct {
	time   int64
	kind   trace.ViolationKind
	detail string
}

// warpView is one warp as the model builder sees it. The slices may be
// sorted in place.
type warpView struct {
	info   warpInfo
	ranges []trace.Range
	marks  []trace.Mark
	viols  []violRef
}

// Model event sources.
const (
	srcRange uint8 = iota
	srcMark
	srcDrop
	srcViol
)

// mev is one event of a warp's model: what will become one TrackEvent.
type mev struct {
	ts  int64
	typ uint8  // typeSliceBegin, typeSliceEnd, typeInstant
	src uint8  // srcRange ...
	lt  uint16 // local track: 0 = warp, 1+l = async lane l
	idx int32  // index in ranges, marks or viols
}

type openSlice struct {
	end int64
	idx int32
}

type instRef struct {
	t   int64
	src uint8
	idx int32
}

// maxLanes bounds the async-lane child tracks of one warp; ranges that would
// need more are left out and counted ([Stats.SkippedRanges]).
const maxLanes = 256

// builder turns a warp into its model events, reusing its slices.
type builder struct {
	evs     []mev
	stack   []openSlice
	inst    []instRef
	laneEnd []int64
	last    int64
	skipped int
	// gap is the dropped-events interval, when the warp dropped events.
	gapStart, gapEnd int64
	hasGap           bool
	// model check state, per local track
	chkLast  []int64
	chkDepth []int32
	chk      []chkState
}

// build fills b.evs with v's events in an order that is time-ordered on each
// local track and LIFO for slices, whatever the input: children are clipped
// to their parent, a sibling ends no later than the next one begins, and
// async ranges go to the first free lane. It returns the number of lanes.
func (b *builder) build(v *warpView, mode trace.Mode) int {
	b.evs = b.evs[:0]
	b.stack = b.stack[:0]
	b.inst = b.inst[:0]
	b.laneEnd = b.laneEnd[:0]
	b.last = math.MinInt64
	b.skipped = 0
	sortRanges(v.ranges)
	for i := range v.marks {
		b.inst = append(b.inst, instRef{t: v.marks[i].Time, src: srcMark, idx: int32(i)})
	}
	for i := range v.viols {
		b.inst = append(b.inst, instRef{t: v.viols[i].time, src: srcViol, idx: int32(i)})
	}
	if !slices.IsSortedFunc(b.inst, cmpInst) {
		slices.SortStableFunc(b.inst, cmpInst)
	}
	b.gap(v, mode)
	ii := 0
	instantsBefore := func(t int64) {
		for ii < len(b.inst) && b.inst[ii].t < t {
			b.instant(b.inst[ii])
			ii++
		}
	}
	if b.hasGap && mode == trace.ModeWrap {
		instantsBefore(b.gapStart)
		b.begin(b.gapStart, b.gapEnd, 0, srcDrop, 0)
	}
	for i := range v.ranges {
		r := &v.ranges[i]
		if r.Async {
			continue
		}
		instantsBefore(r.Start)
		b.begin(r.Start, r.End, int(r.Depth), srcRange, int32(i))
	}
	if b.hasGap && mode != trace.ModeWrap {
		instantsBefore(b.gapStart + 1) // instants at the last event precede the gap
		b.begin(b.gapStart, b.gapEnd, 0, srcDrop, 0)
	}
	for ; ii < len(b.inst); ii++ {
		b.instant(b.inst[ii])
	}
	for len(b.stack) > 0 {
		b.pop(math.MaxInt64)
	}
	// Async ranges: one child track per lane.
	for i := range v.ranges {
		r := &v.ranges[i]
		if !r.Async {
			continue
		}
		l := b.lane(r)
		if l < 0 {
			b.skipped++
			continue
		}
		end := max(r.End, r.Start)
		b.laneEnd[l] = end
		lt := uint16(l + 1)
		b.evs = append(b.evs,
			mev{ts: r.Start, typ: typeSliceBegin, src: srcRange, lt: lt, idx: int32(i)},
			mev{ts: end, typ: typeSliceEnd, src: srcRange, lt: lt, idx: int32(i)})
	}
	return len(b.laneEnd)
}

// gap sets the interval whose events were dropped: after the last stored
// event in stop mode, before the first one in wrap mode.
func (b *builder) gap(v *warpView, mode trace.Mode) {
	b.hasGap = v.info.dropped > 0
	if !b.hasGap {
		return
	}
	in := &v.info
	if mode == trace.ModeWrap {
		end := in.last
		if in.hasEv {
			end = in.firstEv
		}
		if len(v.ranges) > 0 {
			end = min(end, v.ranges[0].Start)
		}
		if len(b.inst) > 0 {
			end = min(end, b.inst[0].t)
		}
		b.gapStart, b.gapEnd = min(in.first, end), end
		return
	}
	start := in.first
	if in.hasEv {
		start = in.lastEv
	}
	for i := range v.ranges {
		start = max(start, v.ranges[i].End)
	}
	if n := len(b.inst); n > 0 {
		start = max(start, b.inst[n-1].t)
	}
	b.gapStart, b.gapEnd = start, max(start, in.last)
}

func (b *builder) pop(limit int64) {
	top := b.stack[len(b.stack)-1]
	b.stack = b.stack[:len(b.stack)-1]
	t := max(min(top.end, limit), b.last)
	src := srcRange
	if top.idx < 0 {
		src = srcDrop
	}
	b.evs = append(b.evs, mev{ts: t, typ: typeSliceEnd, src: src, idx: max(top.idx, 0)})
	b.last = t
}

func (b *builder) begin(start, end int64, depth int, src uint8, idx int32) {
	depth = max(0, min(depth, len(b.stack)))
	for len(b.stack) > 0 && (len(b.stack) > depth || b.stack[len(b.stack)-1].end < start) {
		b.pop(start)
	}
	if len(b.stack) >= maxSliceDepth {
		b.skipped++
		return
	}
	start = max(start, b.last)
	end = max(end, start)
	if n := len(b.stack); n > 0 {
		end = min(end, b.stack[n-1].end)
	}
	b.evs = append(b.evs, mev{ts: start, typ: typeSliceBegin, src: src, idx: idx})
	si := idx
	if src == srcDrop {
		si = -1
	}
	b.stack = append(b.stack, openSlice{end: end, idx: si})
	b.last = start
}

func (b *builder) instant(in instRef) {
	for len(b.stack) > 0 && b.stack[len(b.stack)-1].end < in.t {
		b.pop(in.t)
	}
	t := max(in.t, b.last)
	b.evs = append(b.evs, mev{ts: t, typ: typeInstant, src: in.src, idx: in.idx})
	b.last = t
}

// lane returns the lane for async range r: its own when free, else the
// first free one, else a new one; -1 past maxLanes.
func (b *builder) lane(r *trace.Range) int {
	if l := int(r.Lane); l >= 0 && l < maxLanes {
		for len(b.laneEnd) <= l {
			b.laneEnd = append(b.laneEnd, math.MinInt64)
		}
		if b.laneEnd[l] <= r.Start {
			return l
		}
	}
	for l, e := range b.laneEnd {
		if e <= r.Start {
			return l
		}
	}
	if len(b.laneEnd) < maxLanes {
		b.laneEnd = append(b.laneEnd, math.MinInt64)
		return len(b.laneEnd) - 1
	}
	return -1
}

// sortRanges sorts rs by start then depth, unless it is sorted already (the
// decoder's order), which it checks without copying ranges.
func sortRanges(rs []trace.Range) {
	for i := 1; i < len(rs); i++ {
		p, q := &rs[i-1], &rs[i]
		if q.Start < p.Start || (q.Start == p.Start && q.Depth < p.Depth) {
			slices.SortStableFunc(rs, cmpRangeStart)
			return
		}
	}
}

func cmpRangeStart(a, b trace.Range) int {
	if c := cmp.Compare(a.Start, b.Start); c != 0 {
		return c
	}
	return cmp.Compare(a.Depth, b.Depth)
}

func cmpInst(a, b instRef) int { return cmp.Compare(a.t, b.t) }

// ModelError reports a warp whose model breaks an import rule of the trace
// processor; it means a bug in the writer or timestamps out of range.
type ModelError struct {
	Launch int
	Slot   uint64
	Event  int // index of the offending model event
	Msg    string
}

func (e *ModelError) Error() string {
	return fmt.Sprintf("launch %d warp %d: model event %d: %s", e.Launch, e.Slot, e.Event, e.Msg)
}

// modelCheck applies the rules of [builder.check] one event at a time, as
// the writer encodes them; on a failure the writer calls check for the
// error, which says what and where.
type modelCheck struct {
	t []chkState // per local track
}

type chkState struct {
	last  int64 // starts at 0: ts >= last also means ts is not negative
	depth int32
}

// depthStep is the change of slice depth per event type.
var depthStep = [4]int32{typeSliceBegin: 1, typeSliceEnd: -1}

func (b *builder) checkStart(nLanes int) modelCheck {
	n := nLanes + 1
	b.chk = slices.Grow(b.chk[:0], n)[:n]
	clear(b.chk)
	return modelCheck{t: b.chk}
}

// ok reports whether e keeps its track in time order, balanced and at most
// maxSliceDepth deep.
func (c *modelCheck) ok(e *mev) bool {
	lt := int(e.lt)
	if lt >= len(c.t) {
		return false
	}
	t := &c.t[lt]
	t.depth += depthStep[e.typ&3]
	ok := e.ts >= t.last && uint32(t.depth) <= maxSliceDepth
	t.last = e.ts
	return ok
}

// done reports whether every track's slices ended.
func (c *modelCheck) done() bool {
	for i := range c.t {
		if c.t[i].depth != 0 {
			return false
		}
	}
	return true
}

// check applies the per-track rules to the model of one warp: timestamps in
// [0, 2^63), time order per track, LIFO balance, depth at most 512.
func (b *builder) check(launch int, slot uint64, nLanes int) error {
	n := nLanes + 1
	b.chkLast = b.chkLast[:0]
	b.chkDepth = b.chkDepth[:0]
	for range n {
		b.chkLast = append(b.chkLast, 0)
		b.chkDepth = append(b.chkDepth, 0)
	}
	bad := func(i int, format string, a ...any) error {
		return &ModelError{Launch: launch, Slot: slot, Event: i, Msg: fmt.Sprintf(format, a...)}
	}
	for i := range b.evs {
		e := &b.evs[i]
		if e.ts < 0 {
			return bad(i, "timestamp %d ns is negative", e.ts)
		}
		lt := int(e.lt)
		if lt >= n {
			return bad(i, "local track %d of %d", lt, n)
		}
		if e.ts < b.chkLast[lt] {
			return bad(i, "timestamp %d before the track's previous %d", e.ts, b.chkLast[lt])
		}
		b.chkLast[lt] = e.ts
		switch e.typ {
		case typeSliceBegin:
			b.chkDepth[lt]++
			if b.chkDepth[lt] > maxSliceDepth {
				return bad(i, "slice depth %d exceeds %d", b.chkDepth[lt], maxSliceDepth)
			}
		case typeSliceEnd:
			if b.chkDepth[lt] == 0 {
				return bad(i, "slice end with no open slice on track %d", lt)
			}
			b.chkDepth[lt]--
		}
	}
	for lt, d := range b.chkDepth {
		if d != 0 {
			return bad(len(b.evs), "%d slices left open on track %d", d, lt)
		}
	}
	return nil
}
