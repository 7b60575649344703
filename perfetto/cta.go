package perfetto

import (
	"cmp"
	"math"

	"github.com/iket-trace/iket/trace"
)

// ctaBuf holds one CTA's warps: the writer needs all of them to compute the
// CTA's counters and flows. Its slices are reused from CTA to CTA.
type ctaBuf struct {
	n      int
	linear uint64
	warps  []ctaWarp
	ranges []trace.Range
	marks  []trace.Mark
	viols  []violRef
	// flowHead[i] is the first flow of ranges[i] in flows, -1 if none.
	flowHead []int32
	flows    []flowRef

	// scratch for counters and flows
	keys []keyCount
	// nameRole[n] is 1 + the role of the warps using range name n, 0 when
	// unused, roleShared when several roles use it; touched lists the set
	// entries, to reset.
	nameRole [8192]uint16
	touched  []uint16
	src      []int32
	sortKeys []uint64
	grp      grouper
	kts      []keyTrans // per key index: counter transitions
	mergeTmp []uint64
	dst      []int32
	dstStart []int64 // start of each dst range
	roles    []uint16
	drops    []delta
	open     []openUnion
	// packedOverflow: a CTA with too many keys or too long a span to pack.
	packedOverflow bool
}

type ctaWarp struct {
	info   warpInfo
	r0, r1 int // ranges[r0:r1]
	m0, m1 int
	v0, v1 int
}

type flowRef struct {
	id   uint64
	term bool
	next int32
}

func (c *ctaBuf) reset() {
	c.n = 0
	c.warps = c.warps[:0]
	c.ranges = c.ranges[:0]
	c.marks = c.marks[:0]
	c.viols = c.viols[:0]
	c.flowHead = c.flowHead[:0]
	c.flows = c.flows[:0]
}

// add copies a started warp into the buffer.
func (c *ctaBuf) add(wp *trace.Warp) {
	if c.n == 0 {
		c.reset()
		c.linear = wp.CTALinear
	}
	c.n++
	cw := ctaWarp{info: warpInfo{
		slot: wp.Slot, sm: wp.SM, cta: wp.CTA, ctaLinear: wp.CTALinear, warp: wp.Warp, role: wp.Role,
		finished: wp.Finished, count: wp.Count, stored: wp.Stored, dropped: wp.Dropped, trimmed: wp.Trimmed,
		first: wp.First, last: wp.Last,
	}}
	if n := len(wp.Events); n > 0 {
		cw.info.hasEv = true
		cw.info.firstEv, cw.info.lastEv = wp.Events[0].Time(), wp.Events[n-1].Time()
	}
	cw.r0 = len(c.ranges)
	c.ranges = append(c.ranges, wp.Ranges...)
	cw.r1 = len(c.ranges)
	cw.m0 = len(c.marks)
	c.marks = append(c.marks, wp.Marks...)
	cw.m1 = len(c.marks)
	cw.v0 = len(c.viols)
	for i := range wp.Violations {
		v := &wp.Violations[i]
		t := wp.Last
		if v.Index >= 0 && v.Index < len(wp.Events) {
			t = wp.Events[v.Index].Time()
		}
		c.viols = append(c.viols, violRef{time: t, kind: v.Kind, detail: v.Detail})
	}
	cw.v1 = len(c.viols)
	c.warps = append(c.warps, cw)
}

func (c *ctaBuf) view(i int) warpView {
	cw := &c.warps[i]
	return warpView{info: cw.info, ranges: c.ranges[cw.r0:cw.r1], marks: c.marks[cw.m0:cw.m1], viols: c.viols[cw.v0:cw.v1]}
}

// flushCTA writes the buffered CTA: its SM track (the first time), CTA
// track, counters and warps.
func (w *Writer) flushCTA() error {
	c := &w.cta
	defer func() { c.n = 0 }()
	if c.n == 0 {
		return nil
	}
	// Sort each warp's ranges once here, so flows and the model agree on
	// indices.
	for i := range c.warps {
		sortRanges(c.ranges[c.warps[i].r0:c.warps[i].r1])
	}
	c.flowHead = c.flowHead[:0]
	c.flows = c.flows[:0]
	if w.opt.Flows {
		for range c.ranges {
			c.flowHead = append(c.flowHead, -1)
		}
		w.matchFlows()
	}
	first := &c.warps[0].info
	for i := range c.warps {
		if t := c.warps[i].info.first; !w.haveT0 || t < w.launchT0 {
			w.launchT0, w.haveT0 = t, true
		}
	}
	smID, ok := w.smTracks[first.sm]
	if !ok {
		smID = w.launchTrack(bSM, uint64(first.sm))
		w.smTracks[first.sm] = smID
		w.sc = append(append(w.sc[:0], "SM "...), appendUint(nil, uint64(first.sm))...)
		w.track(smID, w.launchID, int32(min(first.sm, math.MaxInt32)), true, true, false, w.sc, "")
	}
	// The CTA's tracks are named after its first warp's slot: slots
	// strictly increase, so no other CTA has it.
	ctaSlot := first.slot
	ctaID := w.slotTrack(ctaSlot, subCTA)
	w.sc = append(w.sc[:0], "CTA "...)
	w.sc = appendCTA(w.sc, first.cta, w.lm.Grid)
	// The name holds the coordinates and the parent the SM: the
	// description adds the linear index of a 2-D or 3-D grid's CTA and the
	// number of warps that started.
	d := w.desc[:0]
	if w.lm.Grid[1] > 1 || w.lm.Grid[2] > 1 || first.cta[1] != 0 || first.cta[2] != 0 {
		d = append(d, "linear "...)
		d = appendUint(d, c.linear)
		d = append(d, ", "...)
	}
	d = appendUint(d, uint64(c.n))
	w.desc = append(d, " warps started"...)
	w.trackDesc(ctaID, smID, int32(min(c.linear, math.MaxInt32)), true, true, false, w.sc, "", w.desc, tdNoMerge)
	if w.opt.Counters || !w.opt.NoSummary {
		w.ctaCounters(ctaID, ctaSlot)
	}
	w.writeIdle(ctaID)
	for i := range c.warps {
		if c.warps[i].idle() {
			continue
		}
		v := c.view(i)
		var heads []int32
		if w.opt.Flows {
			heads = c.flowHead[c.warps[i].r0:c.warps[i].r1]
		}
		if err := w.writeWarp(ctaID, &v, heads); err != nil {
			return err
		}
	}
	return w.err
}

// idle reports whether the warp recorded no event but its role: it started
// and finished, kept every event and has no range, mark or violation.
// Such warps (the idle warps of a warp group) are folded into one track per
// role in their CTA.
func (cw *ctaWarp) idle() bool {
	in := &cw.info
	return cw.r0 == cw.r1 && cw.m0 == cw.m1 && cw.v0 == cw.v1 && in.finished && in.dropped == 0 && in.trimmed == 0
}

// writeIdle writes, for each role with idle warps in the buffered CTA, one
// track "CTA's N idle ROLE warps" in place of theirs, ranked where the
// first of them would be and described with their warp indices.
func (w *Writer) writeIdle(ctaID uint64) {
	c := &w.cta
	for i := range c.warps {
		first := &c.warps[i]
		if !first.idle() {
			continue
		}
		role := first.info.role
		seen := false
		for j := range c.warps[:i] {
			if c.warps[j].idle() && c.warps[j].info.role == role {
				seen = true
				break
			}
		}
		if seen {
			continue
		}
		n := 0
		d := append(w.desc[:0], "warps "...)
		for j := i; j < len(c.warps); j++ {
			cw := &c.warps[j]
			if !cw.idle() || cw.info.role != role {
				continue
			}
			if n > 0 {
				d = append(d, ", "...)
			}
			d = appendUint(d, uint64(cw.info.warp))
			n++
		}
		w.desc = append(d, " finished with no event but their role"...)
		w.sc = appendUint(w.sc[:0], uint64(n))
		w.sc = append(w.sc, " idle "...)
		if role != 0 {
			w.sc = append(append(w.sc, w.lm.NameText(role)...), ' ')
		}
		w.sc = append(w.sc, "warp"...)
		if n > 1 {
			w.sc = append(w.sc, 's')
		}
		w.trackDesc(w.slotTrack(first.info.slot, 0), ctaID, int32(min(first.info.warp, math.MaxInt32)), true, false, false, w.sc, "", w.desc, 0)
		w.stats.IdleWarps += n
	}
}

// appendCTA writes a CTA's coordinates: "7" for a 1-D grid, else "7,1,0".
func appendCTA(b []byte, cta, grid [3]uint32) []byte {
	if grid[1] <= 1 && grid[2] <= 1 && cta[1] == 0 && cta[2] == 0 {
		return appendUint(b, uint64(cta[0]))
	}
	b = appendUint(b, uint64(cta[0]))
	b = append(b, ',')
	b = appendUint(b, uint64(cta[1]))
	b = append(b, ',')
	return appendUint(b, uint64(cta[2]))
}

// writeWarp writes one warp's tracks and events.
func (w *Writer) writeWarp(ctaID uint64, v *warpView, flowHeads []int32) (err error) {
	in := &v.info
	nl := w.bd.build(v, w.lm.Mode)
	// The model is checked as it is encoded; until the warp is done the
	// output is not flushed, so a warp that fails the check (and fails
	// the writer) writes nothing.
	w.hold = true
	defer func() {
		w.hold = false
		if err == nil {
			w.flushOut(false)
		}
	}()
	warpID := w.slotTrack(in.slot, 0)
	w.sc = append(w.sc[:0], "warp "...)
	w.sc = appendUint(w.sc, uint64(in.warp))
	if in.role != 0 {
		w.sc = append(w.sc, " · "...)
		w.sc = append(w.sc, w.lm.NameText(in.role)...)
	}
	if !in.finished {
		w.sc = append(w.sc, " (not finished)"...)
	}
	if in.dropped > 0 {
		w.sc = append(w.sc, " (dropped "...)
		w.sc = appendUint(w.sc, in.dropped)
		w.sc = append(w.sc, ')')
	}
	w.desc = appendWarpDesc(w.desc[:0], in)
	w.trackDesc(warpID, ctaID, int32(min(in.warp, math.MaxInt32)), true, nl > 0, false, w.sc, "", w.desc, tdDefault)
	w.lane = w.lane[:0]
	for l := range nl {
		id := w.slotTrack(in.slot, uint64(l)+1)
		w.lane = append(w.lane, id)
		w.sc = append(w.sc[:0], "async lane "...)
		w.sc = appendUint(w.sc, uint64(l))
		w.track(id, warpID, int32(l), true, false, false, w.sc, "")
	}
	w.tmpl.set(w.seq, w.lane)
	c := w.bd.checkStart(nl)
	if i := w.encodeEvents(v, flowHeads, c.t); i >= 0 {
		return w.modelError(in.slot, nl, i)
	}
	if !c.done() {
		return w.modelError(in.slot, nl, len(w.bd.evs))
	}
	w.stats.SkippedRanges += int64(w.bd.skipped)
	w.stats.Warps++
	return w.err
}

// modelError returns the error of a warp model that failed its check at
// event i.
func (w *Writer) modelError(slot uint64, nLanes, i int) error {
	if err := w.bd.check(w.li, slot, nLanes); err != nil {
		return err
	}
	return &ModelError{Launch: w.li, Slot: slot, Event: i, Msg: "failed the streaming check only (writer bug)"}
}

// internEvent appends the interned_data event e needs: the definition of
// its name, key, when iid is 0 (giving it the next iid), and of the debug
// annotation names of mask ann the sequence lacks. It returns the name's
// iid.
func (w *Writer) internEvent(b []byte, key uint32, iid uint64, ann uint16, e *mev, v *warpView) ([]byte, uint64) {
	if iid != 0 {
		return w.intern(b, 0, ann, nil), iid
	}
	iid = uint64(w.names.add(key))
	payload := uint16(key)
	switch e.src() {
	case srcRange:
		r := &v.ranges[e.idx]
		return w.intern(b, iid, ann, func(s []byte) []byte { return appendRangeName(s, w.lm, r.Name, r.Flags, payload) }), iid
	case srcMark:
		name := v.marks[e.idx].Name
		return w.intern(b, iid, ann, func(s []byte) []byte { return appendName(s, w.lm, name) }), iid
	case srcDrop:
		return w.intern(b, iid, ann, func(s []byte) []byte { return append(s, "dropped events"...) }), iid
	default:
		k := v.viols[e.idx].kind
		return w.intern(b, iid, ann, func(s []byte) []byte { return append(append(s, "violation: "...), k.String()...) }), iid
	}
}

// commit makes b, which extends the output (or compression) buffer by
// whole packets, the buffer, flushing when it is full.
func (w *Writer) commit(b []byte) {
	if w.opt.Compress {
		w.chunk = b
		if len(b) >= defaultCompressChunk {
			w.flushChunk()
		}
		return
	}
	w.buf = b
	if len(b) >= defaultFlushBytes {
		w.flushOut(false)
	}
}

func appendName(b []byte, lm *trace.LaunchMeta, id uint16) []byte {
	if id == 0 {
		return append(b, "(unnamed)"...)
	}
	return append(b, lm.NameText(id)...)
}

// appendPayload appends "/payload" when payload is not 0.
func appendPayload(b []byte, payload uint16) []byte {
	if payload == 0 {
		return b
	}
	return appendUint(append(b, '/'), uint64(payload))
}

func appendRangeName(b []byte, lm *trace.LaunchMeta, id uint16, f trace.RangeFlags, payload uint16) []byte {
	b = appendPayload(appendName(b, lm, id), payload)
	switch f & 3 {
	case trace.RangeUnclosed:
		b = append(b, " (unclosed)"...)
	case trace.RangeTruncated:
		b = append(b, " (truncated)"...)
	case trace.RangeUnclosed | trace.RangeTruncated:
		b = append(b, " (truncated, unclosed)"...)
	}
	return b
}

func incompleteText(f trace.RangeFlags) string {
	switch f & 3 {
	case trace.RangeUnclosed:
		return "unclosed: the warp's record ended with the range open; the end shown is its last event"
	case trace.RangeTruncated:
		return "truncated: the begin was lost (wrapped buffer or trimmed window); the start shown is where the record starts"
	}
	return "truncated and unclosed: neither the begin nor the end was recorded"
}

func dropText(m trace.Mode) string {
	if m == trace.ModeWrap {
		return "wrap mode: the oldest events were overwritten; the slice spans the warp's start to its first kept event"
	}
	return "stop mode: the buffer filled; the slice spans the last kept event to the warp's end"
}

// delta is a +1/-1 step of a counter at a time.
type delta struct {
	t int64
	d int64
}

type keyCount struct {
	key uint32
	n   int64
}

func cmpDeltaTime(a, b delta) int {
	if c := cmp.Compare(a.t, b.t); c != 0 {
		return c
	}
	return cmp.Compare(a.d, b.d) // ends before begins
}
