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
	srcNone // no slice (build's instants-only steps)
)

// mev is one event of a warp's model: what will become one TrackEvent. It
// has at most four fields so that the compiler keeps it in registers
// (building a larger one byte by byte on the stack and copying it whole
// stalls on store forwarding).
type mev struct {
	ts  int64
	tag uint32 // type | source<<8 | local track<<16
	idx int32  // index in ranges, marks or viols
}

func mkev(ts int64, typ, src uint8, lt uint16, idx int32) mev {
	return mev{ts: ts, tag: uint32(typ) | uint32(src)<<8 | uint32(lt)<<16, idx: idx}
}

// typ is typeSliceBegin, typeSliceEnd or typeInstant.
func (e *mev) typ() uint8 { return uint8(e.tag) }

// src is srcRange ... srcViol.
func (e *mev) src() uint8 { return uint8(e.tag >> 8) }

// lt is the local track: 0 = warp, 1+l = async lane l.
func (e *mev) lt() uint16 { return uint16(e.tag >> 16) }

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
	skipped int
	nInst   int // instants among evs
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
// v.ranges must be sorted by start, then depth ([sortRanges]).
//
// It is one loop over the slices to begin (the wrap-mode gap, the ranges,
// the stop-mode gap), each preceded by the instants before it; the events
// and the stack of open slices stay in locals (pops are inlined).
func (b *builder) build(v *warpView, mode trace.Mode) int {
	b.inst = b.inst[:0]
	b.laneEnd = b.laneEnd[:0]
	b.skipped = 0
	// Instants in time order: the marks themselves when they are sorted and
	// there are no violations (the usual case), else b.inst.
	marks := v.marks
	direct := len(v.viols) == 0 && slices.IsSortedFunc(marks, cmpMarkTime)
	nInst := len(marks)
	if !direct {
		for i := range marks {
			b.inst = append(b.inst, instRef{t: marks[i].Time, src: srcMark, idx: int32(i)})
		}
		for i := range v.viols {
			b.inst = append(b.inst, instRef{t: v.viols[i].time, src: srcViol, idx: int32(i)})
		}
		if !slices.IsSortedFunc(b.inst, cmpInst) {
			slices.SortStableFunc(b.inst, cmpInst)
		}
		nInst = len(b.inst)
	}
	inst := b.inst
	b.nInst = nInst
	if nInst > 0 {
		if direct {
			b.gap(v, mode, true, marks[0].Time, marks[nInst-1].Time)
		} else {
			b.gap(v, mode, true, inst[0].t, inst[nInst-1].t)
		}
	} else {
		b.gap(v, mode, false, 0, 0)
	}

	evs := slices.Grow(b.evs[:0], 2*len(v.ranges)+nInst+2)
	stack := b.stack[:0]
	last := int64(math.MinInt64)
	ii := 0
	nr := len(v.ranges)
	for step := -1; step <= nr+1; step++ {
		// The slice to begin at this step, and the time before which
		// instants go first.
		var start, end, cut int64
		depth, src, idx := 0, srcNone, int32(0)
		switch {
		case step < 0:
			if !b.hasGap || mode != trace.ModeWrap {
				continue
			}
			start, end, src, cut = b.gapStart, b.gapEnd, srcDrop, b.gapStart
		case step < nr:
			r := &v.ranges[step]
			if r.Async {
				continue
			}
			start, end, depth, src, idx, cut = r.Start, r.End, int(r.Depth), srcRange, int32(step), r.Start
		case step == nr:
			if !b.hasGap || mode == trace.ModeWrap {
				continue
			}
			// Instants at the last event precede the gap.
			start, end, src, cut = b.gapStart, b.gapEnd, srcDrop, b.gapStart+1
		default:
			cut = math.MaxInt64 // and the instants at MaxInt64 below
		}
		for ii < nInst {
			var in instRef
			if direct {
				in = instRef{t: marks[ii].Time, src: srcMark, idx: int32(ii)}
			} else {
				in = inst[ii]
			}
			if in.t >= cut && step <= nr {
				break
			}
			for len(stack) > 0 && stack[len(stack)-1].end < in.t {
				evs, stack, last = popSlice(evs, stack, last, in.t)
			}
			last = max(in.t, last)
			evs = append(evs, mkev(last, typeInstant, in.src, 0, in.idx))
			ii++
		}
		if src == srcNone {
			continue
		}
		depth = max(0, min(depth, len(stack)))
		for len(stack) > 0 && (len(stack) > depth || stack[len(stack)-1].end < start) {
			evs, stack, last = popSlice(evs, stack, last, start)
		}
		if len(stack) >= maxSliceDepth {
			b.skipped++
			continue
		}
		start = max(start, last)
		end = max(end, start)
		if n := len(stack); n > 0 {
			end = min(end, stack[n-1].end)
		}
		evs = append(evs, mkev(start, typeSliceBegin, src, 0, idx))
		si := idx
		if src == srcDrop {
			si = -1
		}
		stack = append(stack, openSlice{end: end, idx: si})
		last = start
	}
	for len(stack) > 0 {
		evs, stack, last = popSlice(evs, stack, last, math.MaxInt64)
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
		evs = append(evs,
			mkev(r.Start, typeSliceBegin, srcRange, lt, int32(i)),
			mkev(end, typeSliceEnd, srcRange, lt, int32(i)))
	}
	b.evs, b.stack = evs, stack
	return len(b.laneEnd)
}

// popSlice appends the end of the top open slice, at its end clipped to
// limit and not before last, and pops it.
func popSlice(evs []mev, stack []openSlice, last, limit int64) ([]mev, []openSlice, int64) {
	top := stack[len(stack)-1]
	t := max(min(top.end, limit), last)
	src := srcRange
	if top.idx < 0 {
		src = srcDrop
	}
	return append(evs, mkev(t, typeSliceEnd, src, 0, max(top.idx, 0))), stack[:len(stack)-1], t
}

func cmpMarkTime(a, b trace.Mark) int { return cmp.Compare(a.Time, b.Time) }

// gap sets the interval whose events were dropped: after the last stored
// event in stop mode, before the first one in wrap mode.
func (b *builder) gap(v *warpView, mode trace.Mode, haveInst bool, firstInst, lastInst int64) {
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
		if haveInst {
			end = min(end, firstInst)
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
	if haveInst {
		start = max(start, lastInst)
	}
	b.gapStart, b.gapEnd = start, max(start, in.last)
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

// modelCheck is the state in which [Writer.encodeEvents] applies the rules
// of [builder.check] one event at a time, as it encodes them; on a failure
// the writer calls check for the error, which says what and where.
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
		lt := int(e.lt())
		if lt >= n {
			return bad(i, "local track %d of %d", lt, n)
		}
		if e.ts < b.chkLast[lt] {
			return bad(i, "timestamp %d before the track's previous %d", e.ts, b.chkLast[lt])
		}
		b.chkLast[lt] = e.ts
		switch e.typ() {
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
