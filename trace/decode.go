package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/iket-trace/iket/internal/raw"
)

// Options select how a [Decoder] and [Validate] treat incomplete records.
type Options struct {
	// Strict makes drops, warps that started but did not finish, warps
	// whose lanes recorded different numbers of events and warps whose
	// event counter saturated violations ([DroppedEvents], [NotFinished],
	// [DivergedLanes], [SaturatedCount]), so [Validate] and [Decoder.Err]
	// report them as errors. Without it they are data: [Warp.Dropped],
	// [Warp.Finished], [Warp.LanesDiverged], [Warp.CountSaturated] and the
	// [Summary] counts. Pairing violations are reported in both modes.
	Strict bool
	// TrimCommonWindow (wrap mode) leaves out every event before the launch's
	// common [Window] start, so all warps show the same recorded interval;
	// ranges open across the start become [RangeTruncated] ranges starting
	// at it.
	TrimCommonWindow bool
}

// Summary counts what a pass of a [Decoder] saw.
type Summary struct {
	Warps     uint64 `json:"warps"` // warp slots decoded
	Started   uint64 `json:"started"`
	Finished  uint64 `json:"finished"`
	Stored    uint64 `json:"stored"`    // events stored in the buffers
	Attempted uint64 `json:"attempted"` // events the warps tried to record (stored + dropped)
	Dropped   uint64 `json:"dropped"`
	Trimmed   uint64 `json:"trimmed"` // stored events left out by Options.TrimCommonWindow
	Ranges    uint64 `json:"ranges"`
	Marks     uint64 `json:"marks"`
	// LanesDiverged counts the warps whose records may have been
	// overwritten ([Warp.Overwritten]: lanes that recorded different
	// numbers of events, or side events of several lanes).
	LanesDiverged uint64 `json:"lanes_diverged"`
	// Side counts the events recorded without lane 0 ([Warp.Side]), which
	// take the side writer's path.
	Side uint64 `json:"side,omitempty"`
	// CountSaturated counts the warps whose event counter saturated
	// ([Warp.CountSaturated]); when it is not 0, Attempted and Dropped are
	// lower bounds.
	CountSaturated uint64 `json:"count_saturated"`
	// WarpErrors counts slots whose bytes broke the format ([WarpError]).
	WarpErrors int `json:"warp_errors"`
	// Violations counts the violations by kind; nil when there were none.
	// In JSON its keys are the kinds' names ([ViolationKind.MarshalText]).
	Violations map[ViolationKind]int `json:"violations,omitempty"`
}

// TotalViolations returns the number of violations of every kind.
func (s Summary) TotalViolations() int {
	n := 0
	for _, c := range s.Violations {
		n += c
	}
	return n
}

// Name kinds as a byte table, indexed by name id.
const (
	nkUnknown = iota
	nkRange
	nkMark
	nkRole
)

// Decoder decodes a launch warp slot by warp slot (see the package doc). Its
// memory is one warp's buffer and events, a per-SM clock index and a block
// of the launch read ahead (256 KiB at most). A Decoder
// is not safe for concurrent use; use one per goroutine.
type Decoder struct {
	l      *Launch
	meta   *LaunchMeta
	opt    Options
	r      io.ReaderAt
	ra     ahead // per-warp reads
	stride int64
	wrap   bool
	nk     [8192]uint8 // name kinds by id

	fits   []ClockFit
	fitIdx map[uint32]int
	window Window
	gpu    gpuSpan // the launch's GPU interval, for AlignHost
	next   uint64

	hdr   [raw.WarpHeaderSize]byte
	ct    clockTerms // the current warp's clock fit
	kind7 bool       // format version 2: kind 7 is NEXT (reserved in version 1)
	side  bool       // format version 3: the tail word counts side events
	buf   []byte
	tail  [raw.RecordSize]byte
	sbuf  []byte // a warp's side records
	mbuf  []byte // its records merged in time order
	scan  []byte // scanSpan's chunk
	ps    pairState
	tok   tokTable
	trunc []Range
	busy  laneHeap
	free  []int32 // min-heap of free lanes

	sum  Summary
	kind [numViolationKinds]int
	errs errList

	// generalOnly pairs every event on pair's general path, skipping
	// pairState.fast; tests and benchmarks compare the two.
	generalOnly bool
}

type openPush struct {
	name uint16
	idx  int32 // event index
	rng  int32 // index in Warp.Ranges
}

type openStart struct {
	name, payload uint16
	open          bool
	idx, rng      int32
	prev          int32 // previous open start of the same token, -1 if none
}

// NewDecoder indexes launch l: it reads every warp header (and, in wrap mode,
// the rings of warps that dropped events, to place the common window) and
// fits a clock per SM. Slots whose header breaks the format are left out of
// the fits and reported by [Decoder.Next].
func NewDecoder(l *Launch, opt Options) (*Decoder, error) {
	if l == nil || l.Meta == nil || l.c == nil {
		return nil, errors.New("new decoder: launch without a capture")
	}
	m := l.Meta
	d := &Decoder{
		l: l, meta: m, opt: opt, r: l.c.r,
		stride: m.Stride(),
		wrap:   m.Mode == ModeWrap,
		fitIdx: make(map[uint32]int),
	}
	d.ra = ahead{r: d.r, max: min(aheadSize, m.Size()), end: m.Offset + m.Size()}
	if l.c.Meta.Version >= 2 {
		d.ct.hiMask = 0xffffffff
		d.kind7 = true
	}
	d.side = l.c.Meta.Version >= 3
	for _, n := range m.Names {
		if n.ID == 0 || int(n.ID) >= len(d.nk) {
			continue
		}
		switch n.Kind {
		case NameRange:
			d.nk[n.ID] = nkRange
		case NameMark:
			d.nk[n.ID] = nkMark
		case NameRole:
			d.nk[n.ID] = nkRole
		}
	}
	if err := d.index(); err != nil {
		return nil, fmt.Errorf("new decoder: launch %d (%s): %w", l.Index, m.Kernel, err)
	}
	return d, nil
}

// index reads the headers, accumulates the anchors per SM and fits clocks;
// a second pass over the headers measures the fits' residuals, so the index
// holds a few numbers per SM and nothing per warp.
func (d *Decoder) index() error {
	accs := map[uint32]*clockAcc{}
	err := d.eachHeader(func(slot uint64, h *raw.WarpHeader) error {
		a := accs[h.SM]
		if a == nil {
			a = &clockAcc{sm: h.SM}
			accs[h.SM] = a
		}
		a.add(h.StartClock, h.StartGlobaltimer)
		if h.Finished() {
			a.add(h.EndClock, h.EndGlobaltimer)
		}
		d.gpu.add(h)
		if first, n, backward := d.ringSpan(h); backward && n > 0 {
			if n > scanChunk { // a damaged ring is left out here and reported by Next
				if s, err := d.scanSpan(slot, first, n); err != nil || s.run >= 0 {
					return nil
				}
			}
			c, ok, err := d.oldestCycles(slot, h, first, n)
			if err != nil {
				return err
			}
			if ok && (!a.haveOldest || c > a.oldest) {
				a.oldest, a.haveOldest = c, true
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	list := make([]*clockAcc, 0, len(accs))
	for _, a := range accs {
		list = append(list, a)
	}
	slices.SortFunc(list, func(a, b *clockAcc) int { return int(int64(a.sm) - int64(b.sm)) })
	var maxMHz uint32
	if dev := d.l.c.Meta.Device; dev != nil {
		maxMHz = dev.MaxSMClockMHz
	}
	d.fits = fitClocks(list, maxMHz)
	for i, a := range list {
		d.fitIdx[a.sm] = i
	}
	err = d.eachHeader(func(_ uint64, h *raw.WarpHeader) error {
		i := d.fitIdx[h.SM]
		a, f := list[i], &d.fits[i]
		a.residual(f, h.StartClock, h.StartGlobaltimer)
		if h.Finished() {
			a.residual(f, h.EndClock, h.EndGlobaltimer)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var end int64
	haveEnd := false
	for i, a := range list {
		f := &d.fits[i]
		a.finishResiduals(f)
		// The latest anchor of the launch, on the fitted timeline (every
		// fit's slope is positive, so an SM's latest anchor is its last).
		if t := f.Ns(a.latest); a.n > 0 && (!haveEnd || t > end) {
			end, haveEnd = t, true
		}
		if a.haveOldest {
			if t := f.Ns(a.oldest); t > d.window.Start {
				d.window.Start = t
			}
		}
	}
	d.window.End = end
	d.window.Applied = d.opt.TrimCommonWindow && d.window.Start != 0
	return nil
}

// eachHeader calls fn for every started slot whose header is well formed,
// in slot order, reading the headers a chunk of slots at a time when the
// stride is small. h is reused between calls.
func (d *Decoder) eachHeader(fn func(slot uint64, h *raw.WarpHeader) error) error {
	var h raw.WarpHeader
	per := int64(1)
	if d.stride <= 512 {
		per = (256 << 10) / d.stride
	}
	var chunk []byte
	for first := uint64(0); first < d.meta.Warps; first += uint64(per) {
		n := min(uint64(per), d.meta.Warps-first)
		size := int64(n-1)*d.stride + raw.WarpHeaderSize
		if int64(cap(chunk)) < size {
			chunk = make([]byte, size)
		}
		chunk = chunk[:size]
		off := d.meta.Offset + int64(first)*d.stride
		if err := readAt(d.r, chunk, off); err != nil {
			return fmt.Errorf("read warp headers at offset %d: %w", off, err)
		}
		for k := uint64(0); k < n; k++ {
			raw.DecodeWarpHeader(chunk[int64(k)*d.stride:], &h)
			slot := first + k
			if h.Magic == 0 || d.checkHeader(&h, slot) != "" {
				continue
			}
			if err := fn(slot, &h); err != nil {
				return err
			}
		}
	}
	return nil
}

// ringSpan returns where a finished warp's stored events are: n records
// from record index first on (wrapping at the capacity), and whether the
// ring wrapped, so that cycles must be unwrapped backwards from the end
// anchor.
//
// A wrap-mode warp whose count saturated (cursor at its limit, the count a
// lower bound) kept writing its later events at the saturated cursor: the
// slot at count mod capacity, and in version 1 the next one too (its
// range_next wrote two records). Those slots hold either the oldest events
// or some of the newest, so they are left out; the other slots hold the
// events just before the saturation, in order.
func (d *Decoder) ringSpan(h *raw.WarpHeader) (first, n uint32, backward bool) {
	capa := d.meta.Capacity
	switch {
	case !h.Finished():
		return 0, 0, false
	case !d.wrap || h.Count < capa || (h.Count == capa && !h.CountSaturated()):
		return 0, min(h.Count, capa), false
	case h.CountSaturated():
		overwritten := uint32(2)
		if d.kind7 { // version 2: every event is one record
			overwritten = 1
		}
		if capa <= overwritten {
			return 0, 0, true
		}
		return uint32((uint64(h.Count) + uint64(overwritten)) % uint64(capa)), capa - overwritten, true
	}
	return h.Count % capa, capa, true
}

// oldestCycles unwraps a wrapped warp's n stored records (from record index
// first) backwards from its end anchor and returns the cycle count of its
// oldest stored event.
func (d *Decoder) oldestCycles(slot uint64, h *raw.WarpHeader, first, n uint32) (uint64, bool, error) {
	b, werr := d.readRing(slot, first, n)
	if werr != nil {
		return 0, false, werr
	}
	c := h.EndClock
	for i := len(b)/raw.RecordSize - 1; i >= 0; i-- {
		lo := binary.LittleEndian.Uint32(b[i*raw.RecordSize:])
		c -= uint64(uint32(c) - lo)
	}
	return c, c >= h.StartClock, nil
}

// readRing reads n records of slot's ring starting at record index first,
// wrapping at the capacity, into d.buf.
func (d *Decoder) readRing(slot uint64, first, n uint32) ([]byte, *WarpError) {
	return d.readRingInto(&d.buf, slot, first, n)
}

// readRingInto is readRing into *buf.
func (d *Decoder) readRingInto(buf *[]byte, slot uint64, first, n uint32) ([]byte, *WarpError) {
	size := int(n) * raw.RecordSize
	if cap(*buf) < size {
		*buf = make([]byte, size)
	}
	b := (*buf)[:size]
	base := d.meta.Offset + int64(slot)*d.stride + raw.WarpHeaderSize
	head := min(n, d.meta.Capacity-first) // records before the wrap
	if head > 0 {
		off := base + int64(first)*raw.RecordSize
		if err := d.ra.readAt(b[:int(head)*raw.RecordSize], off); err != nil {
			return nil, &WarpError{Launch: d.l.Index, Slot: slot, Offset: off, Msg: "read records", Err: err}
		}
	}
	if head < n {
		if err := d.ra.readAt(b[int(head)*raw.RecordSize:], base); err != nil {
			return nil, &WarpError{Launch: d.l.Index, Slot: slot, Offset: base, Msg: "read records", Err: err}
		}
	}
	return b, nil
}

// checkHeader returns what is wrong with a started warp's header, or "".
func (d *Decoder) checkHeader(h *raw.WarpHeader, slot uint64) string {
	m := d.meta
	switch {
	case h.Magic != raw.WarpMagic:
		return fmt.Sprintf("header magic %#x, want %#x (started) or 0 (never ran)", h.Magic, raw.WarpMagic)
	case h.Flags&raw.FlagStarted == 0 || h.Flags&^(raw.FlagStarted|raw.FlagFinished|raw.FlagLanesDiverged|raw.FlagCountSaturated|raw.FlagRoleMask<<raw.FlagRoleShift) != 0:
		return fmt.Sprintf("header flags %#x: want bit 0 (started) set and only bits 0-3 and 16-28 (role)", h.Flags)
	case !h.Finished() && h.Flags&(raw.FlagLanesDiverged|raw.FlagCountSaturated) != 0:
		return fmt.Sprintf("header flags %#x: bit 2 or 3 on a warp that did not finish (they are set at exit, with bit 1)", h.Flags)
	case !h.Finished() && h.Count != 0:
		return fmt.Sprintf("count %d on a warp that did not finish (count is written at exit)", h.Count)
	case h.Finished() && h.EndClock < h.StartClock:
		return fmt.Sprintf("end clock %d before start clock %d", h.EndClock, h.StartClock)
	case h.StartGlobaltimer > math.MaxInt64 || h.Finished() && h.EndGlobaltimer > math.MaxInt64:
		return fmt.Sprintf("globaltimer anchors %d and %d: past 2^63 ns (the year 2262), no time", h.StartGlobaltimer, h.EndGlobaltimer)
	case h.Finished() && h.EndGlobaltimer < h.StartGlobaltimer:
		return fmt.Sprintf("end globaltimer %d before start globaltimer %d", h.EndGlobaltimer, h.StartGlobaltimer)
	case h.Warp >= m.WarpsPerCTA:
		return fmt.Sprintf("header warp %d, but the launch has %d warps per CTA", h.Warp, m.WarpsPerCTA)
	}
	g := m.Grid
	if g[0] != 0 && g[1] != 0 && g[2] != 0 {
		if h.CTA[0] >= g[0] || h.CTA[1] >= g[1] || h.CTA[2] >= g[2] {
			return fmt.Sprintf("header cta (%d,%d,%d) outside the grid (%d,%d,%d)", h.CTA[0], h.CTA[1], h.CTA[2], g[0], g[1], g[2])
		}
		lin := uint64(h.CTA[0]) + uint64(g[0])*(uint64(h.CTA[1])+uint64(g[1])*uint64(h.CTA[2]))
		if s := lin*uint64(m.WarpsPerCTA) + uint64(h.Warp); s != slot {
			return fmt.Sprintf("header names cta (%d,%d,%d) warp %d, which is slot %d", h.CTA[0], h.CTA[1], h.CTA[2], h.Warp, s)
		}
	}
	return ""
}

// Clocks returns the clock fit of every SM seen, sorted by SM. The slice is
// a copy.
func (d *Decoder) Clocks() []ClockFit { return slices.Clone(d.fits) }

// Clock returns the fit of one SM, or nil when no started warp ran on it.
func (d *Decoder) Clock(sm uint32) *ClockFit {
	i, ok := d.fitIdx[sm]
	if !ok {
		return nil
	}
	return &d.fits[i]
}

// Window returns the launch's common window (see [Window]).
func (d *Decoder) Window() Window { return d.window }

// Reset starts the pass again at warp slot 0, keeping the index and clearing
// the summary and the collected errors.
func (d *Decoder) Reset() {
	d.next = 0
	d.sum = Summary{}
	d.kind = [numViolationKinds]int{}
	d.errs.reset()
}

// Summary returns the counts over the warps decoded since the start of the
// pass; after [Decoder.Next] returned io.EOF it covers the whole launch.
func (d *Decoder) Summary() Summary {
	s := d.sum
	for k, n := range d.kind {
		if n > 0 {
			if s.Violations == nil {
				s.Violations = map[ViolationKind]int{}
			}
			s.Violations[ViolationKind(k)] = n
		}
	}
	return s
}

// Err returns the errors of the pass so far: every violation and every
// [WarpError], joined (at most 100, then one error saying how many more),
// or nil when there were none.
func (d *Decoder) Err() error { return d.errs.err() }

// Next decodes the next warp slot into w, reusing w's slices, and returns
// io.EOF after the last slot. A slot that never ran gives a warp with
// Started false. An unreadable or malformed slot gives a [*WarpError] (w
// then holds only the slot's location); the next call goes on with the
// following slot. Pairing problems are not errors: they are in w.Violations.
func (d *Decoder) Next(w *Warp) error {
	if d.next >= d.meta.Warps {
		return io.EOF
	}
	slot := d.next
	d.next++
	d.sum.Warps++
	*w = Warp{
		Launch: d.l.Index, Slot: slot,
		Events: w.Events[:0], Ranges: w.Ranges[:0], Marks: w.Marks[:0], Violations: w.Violations[:0],
	}
	off := d.meta.Offset + int64(slot)*d.stride
	if err := d.ra.readAt(d.hdr[:], off); err != nil {
		return d.warpErr(&WarpError{Launch: d.l.Index, Slot: slot, Offset: off, Msg: "read header", Err: err})
	}
	var h raw.WarpHeader
	raw.DecodeWarpHeader(d.hdr[:], &h)
	w.SM, w.CTA, w.Warp = h.SM, h.CTA, h.Warp
	w.CTALinear = slot / uint64(d.meta.WarpsPerCTA)
	if h.Magic == 0 {
		return nil
	}
	if msg := d.checkHeader(&h, slot); msg != "" {
		return d.warpErr(&WarpError{Launch: d.l.Index, Slot: slot, Offset: off, Msg: msg})
	}
	fi, ok := d.fitIdx[h.SM]
	if !ok { // cannot happen: index() saw the same header
		return d.warpErr(&WarpError{Launch: d.l.Index, Slot: slot, Offset: off, Msg: "header changed since the index pass"})
	}
	fit := &d.fits[fi]
	w.Started, w.Finished = true, h.Finished()
	w.LanesDiverged, w.CountSaturated = h.LanesDiverged(), h.CountSaturated()
	w.First = fit.Ns(h.StartClock)
	d.sum.Started++
	recs, werr := d.decodeEvents(w, &h, fit)
	if werr != nil {
		return d.warpErr(werr)
	}
	if w.LanesDiverged && !d.wrap && recs != nil && !repeatsRecord(recs) {
		// Lanes that record more after the others' last event (a mark by
		// lane 0 alone at the end) overwrite nothing. Lanes that record
		// together while their cursors differ write one event at two
		// slots: a record that appears twice is the sign of that.
		w.LanesDiverged, w.LanesAhead = false, true
	}
	d.pair(w, fit, recs, h.StartClock)
	// The header holds the last set_role, even when its record was lost to
	// a wrap. A role id that is no ROLE name was reported with its event.
	if r := h.Role(); r != 0 && int(r) < len(d.nk) && d.nk[r] == nkRole {
		w.Role = r
	}
	if w.Finished {
		d.sum.Finished++
		w.Last = fit.Ns(h.EndClock)
	} else if n := len(w.Events); n > 0 {
		w.Last = w.Events[n-1].time
	} else {
		w.Last = w.First
	}
	if w.First < 0 || w.Last < w.First {
		w.BadTimes = true
		d.violate(w, BadRecord, -1, "", fmt.Sprintf("anchors at %d and %d ns on the SM's clock fit: a negative time or an end before the start (corrupt anchors)", w.First, w.Last))
	}
	if n := len(w.Events); recs != nil && n > 0 && w.Finished && w.Events[n-1].cycles > h.EndClock {
		w.BadTimes = true
		d.violate(w, BadRecord, n-1, "", fmt.Sprintf(
			"clock %d cycles past the warp's end anchor: a gap over 2^32 cycles between events, or a corrupt record", w.Events[n-1].cycles-h.EndClock))
	}
	if d.opt.Strict {
		if w.LanesDiverged {
			d.violate(w, DivergedLanes, -1, "", "lanes recorded different numbers of events and a record appears twice (lanes that had recorded apart recorded together again): "+
				"records were overwritten (a header of record format 2 or older; rebuild with the current iket.cuh, whose format 3 records any lane pattern)")
		}
		if w.SideLanes > 1 {
			d.violate(w, DivergedLanes, -1, "", fmt.Sprintf("%d lanes stored side events (events recorded without lane 0, each by the lowest lane recording): they share the side slots, so some records may have overwritten others; record those events with the same lanes, or with lane 0",
				w.SideLanes))
		}
		if w.CountSaturated {
			d.violate(w, SaturatedCount, -1, "", fmt.Sprintf("event counter saturated: at least %d events attempted, at least %d dropped (capacity %d, %s mode)",
				w.Count, w.Dropped, d.meta.Capacity, d.meta.Mode))
		}
		switch {
		case w.Dropped > 0 && w.CountSaturated:
			d.violate(w, DroppedEvents, -1, "", fmt.Sprintf("at least %d of at least %d events dropped (capacity %d, %s mode, event counter saturated)", w.Dropped, w.Count, d.meta.Capacity, d.meta.Mode))
		case w.Dropped > 0 && w.SideDropped > 0 && d.wrap:
			d.violate(w, DroppedEvents, -1, "", fmt.Sprintf("%d of %d events dropped (capacity %d, %s mode): %d of them recorded while lane 0 was inactive, which a wrap build does not store",
				w.Dropped, w.Count, d.meta.Capacity, d.meta.Mode, w.SideDropped))
		case w.Dropped > 0:
			d.violate(w, DroppedEvents, -1, "", fmt.Sprintf("%d of %d events dropped (capacity %d, %s mode)", w.Dropped, w.Count, d.meta.Capacity, d.meta.Mode))
		}
		if !w.Finished {
			msg := fmt.Sprintf("warp started but did not finish (hung or faulted): %d events recovered", w.Stored)
			if w.Beyond > 0 {
				msg += fmt.Sprintf("; %d more records lie after the first unwritten slot (record %d), so events before them were never stored (pairs an iket::Batch still held, say); they are not decoded", w.Beyond, w.Stored)
			}
			d.violate(w, NotFinished, -1, "", msg)
		}
	}
	d.sum.Stored += uint64(w.Stored)
	d.sum.Attempted += w.Count
	d.sum.Dropped += w.Dropped
	d.sum.Trimmed += uint64(w.Trimmed)
	d.sum.Side += w.Side
	if w.overwritten() {
		d.sum.LanesDiverged++
	}
	if w.CountSaturated {
		d.sum.CountSaturated++
	}
	d.sum.Ranges += uint64(len(w.Ranges))
	d.sum.Marks += uint64(len(w.Marks))
	for _, v := range w.Violations {
		d.errs.add(v)
	}
	d.errs.more += w.MoreViolations
	return nil
}

// repeatsRecord reports whether two of recs' 8-byte records are equal: two
// events of a warp never are (each holds its own clock reading).
func repeatsRecord(recs []byte) bool {
	n := len(recs) / raw.RecordSize
	seen := make(map[uint64]struct{}, n)
	for i := 0; i < n; i++ {
		r := binary.LittleEndian.Uint64(recs[i*raw.RecordSize:])
		if _, ok := seen[r]; ok {
			return true
		}
		seen[r] = struct{}{}
	}
	return false
}

// Each decodes the rest of the pass, calling fn with each warp slot in
// order ([Decoder.Next]); w is reused between calls, so fn copies what it
// keeps. A slot that breaks the format ([*WarpError]) goes to bad instead,
// or is passed over when bad is nil; either way it stays in the
// [Summary] and in [Decoder.Err]. Each returns nil after the last slot, or
// the first error fn or bad returned, which stops the pass.
func (d *Decoder) Each(fn func(w *Warp) error, bad func(e *WarpError) error) error {
	var w Warp
	for {
		err := d.Next(&w)
		if err == io.EOF {
			return nil
		}
		if we, ok := err.(*WarpError); ok {
			if bad != nil {
				if err := bad(we); err != nil {
					return err
				}
			}
			continue
		}
		if err != nil {
			return err
		}
		if err := fn(&w); err != nil {
			return err
		}
	}
}

func (d *Decoder) warpErr(e *WarpError) error {
	d.sum.WarpErrors++
	d.errs.add(e)
	return e
}

// MaxWarpViolations bounds the violations a [Warp] keeps; the rest count in
// [Warp.MoreViolations] and in the [Summary].
const MaxWarpViolations = 100

// violate records a violation in w (counted, and kept while w has fewer
// than MaxWarpViolations).
func (d *Decoder) violate(w *Warp, k ViolationKind, idx int, name, detail string) {
	d.kind[k]++
	if len(w.Violations) >= MaxWarpViolations {
		w.MoreViolations++
		return
	}
	w.Violations = append(w.Violations, Violation{
		Kind: k, Launch: w.Launch, Slot: w.Slot, SM: w.SM, CTA: w.CTA, Warp: w.Warp,
		Index: idx, Name: name, Detail: detail,
	})
}

// decodeEvents reads the stored records of a started warp into w.Events,
// unwrapping cycles and converting them to ns. In the common case (cycles
// unwrapped forward, no window) it only sizes w.Events and returns the raw
// records, which pair decodes as it goes.
func (d *Decoder) decodeEvents(w *Warp, h *raw.WarpHeader, fit *ClockFit) ([]byte, *WarpError) {
	capa := d.meta.Capacity
	le := binary.LittleEndian
	var b []byte
	var err *WarpError
	backward := false
	var nSide, sideLanes uint32
	var whole []byte // a stop-mode slot's records and tail word, read at once
	merged := false
	if d.side {
		if whole, err = d.readThroughTail(w.Slot, h); err != nil {
			return nil, err
		}
		if nSide, sideLanes, err = d.tailCount(w.Slot, whole); err != nil {
			return nil, err
		}
		// More side events than the capacity: the count is a lower bound.
		w.CountSaturated = w.CountSaturated || uint64(nSide) > uint64(capa)
		w.SideLanes = sideLanes // more than 1: see Warp.Overwritten
		// Stop mode stores side events (mergeSide counts them); a wrap
		// build only counts them, so all are dropped.
		w.Side = uint64(nSide)
		if d.wrap {
			w.SideDropped = uint64(nSide)
		}
		if nSide > 0 && !d.wrap {
			if b, err = d.mergeSide(w, h, nSide); err != nil {
				return nil, err
			}
			merged = true
		}
	}
	switch {
	case merged:
	case h.Finished() && whole != nil:
		n := min(h.Count, capa)
		b = whole[:int(n)*raw.RecordSize]
		w.Count, w.Dropped = uint64(h.Count), uint64(h.Count-n)
	case h.Finished():
		var first, n uint32
		first, n, backward = d.ringSpan(h)
		if n > scanChunk {
			s, err := d.scanSpan(w.Slot, first, n)
			if err != nil {
				return nil, err
			}
			if s.run >= 0 {
				return nil, d.damaged(w.Slot, s, n)
			}
		}
		if b, err = d.readRing(w.Slot, first, n); err != nil {
			return nil, err
		}
		w.Count = uint64(h.Count) + uint64(nSide) // nSide: a wrap build's, not stored
		w.Dropped = uint64(h.Count-n) + uint64(nSide)
	default:
		// Not finished: count was never written. Scan to the first
		// unwritten slot (all zero; a written record is zero only in
		// the rare version-2 case docs/FORMAT.md section 4 describes).
		// A large ring is scanned first, so only its written prefix is
		// held in memory.
		span := capa
		var s spanScan
		if capa > scanChunk {
			if s, err = d.scanSpan(w.Slot, 0, capa); err != nil {
				return nil, err
			}
			span = uint32(min(s.firstZero+1, int(capa)))
		}
		if whole != nil {
			b = whole[:int(capa)*raw.RecordSize]
		} else if b, err = d.readRing(w.Slot, 0, span); err != nil {
			return nil, err
		}
		n := 0
		for n < int(span) && le.Uint64(b[n*raw.RecordSize:]) != 0 {
			n++
		}
		for j := n + 1; j < int(span); j++ {
			if le.Uint64(b[j*raw.RecordSize:]) != 0 {
				w.Beyond++
			}
		}
		w.Beyond += s.beyond
		if d.wrap && n == int(capa) {
			d.violate(w, UnorderedRecords, -1, "", fmt.Sprintf(
				"wrap-mode warp did not finish and its ring of %d records is full: without the count the oldest record is unknown, so no event can be ordered or timed; none decoded", capa))
			b = b[:0]
		} else if k := d.hungSide(b, n, span); k > 0 {
			// Format 3: the warp wrote no tail word, but records run down
			// from the last slot, apart from lane 0's: its side events.
			w.Beyond -= k
			w.Side = uint64(k)
			b = d.merge(b[:n*raw.RecordSize], b[(int(capa)-k)*raw.RecordSize:int(capa)*raw.RecordSize], h.StartClock)
		} else {
			b = b[:n*raw.RecordSize]
		}
		w.Count = uint64(len(b)/raw.RecordSize) + uint64(nSide) // nSide: a wrap build's, not stored
		w.Dropped = uint64(nSide)
	}
	n := len(b) / raw.RecordSize
	w.Stored = n
	if cap(w.Events) < n {
		w.Events = make([]Event, n, n+n/4)
	}
	ev := w.Events[:n]
	if !backward {
		if !d.window.Applied {
			// The common case: pair decodes the records itself, in the
			// same loop (see pair).
			w.Events = ev
			return b, nil
		}
		d.ct.set(fit)
		decodeForward(ev, b, h.StartClock, &d.ct)
	} else {
		c := h.EndClock
		for i := n - 1; i >= 0; i-- {
			r := raw.Record(le.Uint64(b[i*raw.RecordSize:]))
			e := &ev[i]
			if r == 0 { // unwritten: see decodeForward
				e.hi, e.cycles = 0, c
				continue
			}
			c -= uint64(uint32(c) - uint32(r))
			e.hi, e.cycles = d.ct.tag(uint64(r), c), c
		}
		for i := range ev {
			ev[i].time = fit.Ns(ev[i].cycles)
		}
		if n > 0 && c < h.StartClock {
			w.BadTimes = true
			d.violate(w, BadRecord, 0, "", fmt.Sprintf(
				"clock %d cycles before the warp's start anchor: a gap over 2^32 cycles between events, or a corrupt record", h.StartClock-c))
		}
	}
	w.Events = ev
	if d.window.Applied {
		k := 0
		for k < len(ev) && ev[k].time < d.window.Start {
			k++
		}
		if k > 0 {
			// The role usually comes first: keep the last one set in the
			// trimmed prefix.
			for j := range k {
				if ev[j].Kind() == KindRole && d.nk[ev[j].Name()] == nkRole {
					w.Role = ev[j].Name()
				}
			}
			w.Trimmed = k
			w.Events = ev[:copy(ev, ev[k:])]
		}
	}
	return nil, nil
}

// clockTerms are a [ClockFit]'s terms as [ClockFit.Ns] combines them.
// Loops read them through a pointer, so they stay in memory as operands
// instead of taking registers (and RefNs - 2^40 stays one add: a local is
// reassociated into two, the constant not fitting an instruction).
type clockTerms struct {
	refC  uint64
	slope float64
	base  float64 // OffsetNs + 2^40 + 0.5
	refNs int64   // RefNs - 2^40
	// hiMask is 0xffffffff for format version 2, whose records' high word
	// is the tag plus the clock's high word, and 0 for version 1.
	hiMask uint32
}

// set takes the fit's terms (hiMask stays).
func (k *clockTerms) set(f *ClockFit) {
	*k = clockTerms{refC: f.RefCycles, slope: f.NsPerCycle, base: f.OffsetNs + (0x1p40 + 0.5), refNs: f.RefNs - 1<<40, hiMask: k.hiMask}
}

// tag returns a record's tag (kind, name and payload) given the event's full
// cycle count c.
func (k *clockTerms) tag(r uint64, c uint64) uint32 {
	return uint32(r>>32) - uint32(c>>32)&k.hiMask
}

// decodeForward decodes the records in recs (len(ev) of them) into ev,
// unwrapping cycles forward from start and converting them to ns exactly as
// [ClockFit.Ns] does (k holds the fit's terms).
func decodeForward(ev []Event, recs []byte, start uint64, k *clockTerms) {
	c := start
	refC, slope, base, hiMask := k.refC, k.slope, k.base, k.hiMask
	ev = ev[:min(len(ev), len(recs)/raw.RecordSize)]
	for j := range ev {
		// One bounds check: re-slicing recs and ev instead costs a dozen
		// instructions per record (pointer masking).
		r := binary.LittleEndian.Uint64(recs[j*raw.RecordSize : j*raw.RecordSize+raw.RecordSize])
		e := &ev[j]
		if r == 0 {
			// An unwritten slot among the stored records: kind 0 at the
			// previous event's cycle, which it does not move (in version 2
			// its high word is no tag plus a clock).
			e.hi, e.cycles = 0, c
		} else {
			c += uint64(uint32(r) - uint32(c))
			e.hi, e.cycles = uint32(r>>32)-uint32(c>>32)&hiMask, c
		}
		e.time = k.refNs + int64(base+float64(slope*float64(int64(e.cycles-refC))))
	}
}
