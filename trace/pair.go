package trace

import (
	"fmt"
	"math"
	"slices"

	"github.com/iket-trace/iket/internal/raw"
)

// pairState is the state of pairing one warp. The fast path keeps it in
// locals and stores it back when it hands an event to the general path.
type pairState struct {
	rs     []Range // w.Ranges, full capacity; nr used
	ms     []Mark  // w.Marks, full capacity; nm used
	stack  []openPush
	starts []openStart
	open   []int32 // open starts (indexes in starts), while few
	nr, nm int
	sp     int // push stack depth
	nst    int // starts used
	lost   int32
	role   uint16
	sorted bool
	// The previous range's Start and Depth, to see whether the ranges come
	// out sorted.
	prevStart int64
	prevDepth int32
	kind7     bool // kind 7 is NEXT (format version 2)
}

// pair turns w.Events into w.Ranges, w.Marks and w.Role, reporting pairing
// problems as violations. Ranges are produced in order of their begin event
// (a placeholder is appended at the push or start and completed at the pop
// or end), so they come out sorted by Start without a sort in the common
// case.
//
// When recs is not nil, w.Events is only sized and pair decodes its
// records into it (cycles unwrapped forward from startClock) with
// decodeForward, a block of pairBlock events at a time just ahead of the
// pairing, so the block is still in L1 when it is paired.
//
// Ordinary events go through [pairState.fast], a loop without calls;
// anything else (a violation, a truncated range, growth, many open starts)
// goes through the general code below, one event at a time.
func (d *Decoder) pair(w *Warp, fit *ClockFit, recs []byte, startClock uint64) {
	ev := w.Events
	if len(ev) == 0 {
		return
	}
	// In a wrapped (or trimmed) record a pop or end may close a begin that
	// was lost: not a violation, but a truncated range starting where the
	// record does.
	truncOK := (d.wrap && w.Dropped > 0) || w.Trimmed > 0
	// Events before dec are decoded.
	dec, c := len(ev), startClock
	d.ct.set(fit)
	if recs != nil {
		dec = 0
		// The scan below needs every event, and blocks need one
		// record per event.
		if truncOK || len(recs) != len(ev)*raw.RecordSize {
			decodeForward(ev, recs, startClock, &d.ct)
			dec = len(ev)
		}
	}
	var t0 int64
	var t0c uint64
	lost := int32(0) // push levels lost before the first stored event
	if truncOK {
		t0, t0c = ev[0].time, ev[0].cycles
		if w.Trimmed > 0 {
			t0, t0c = d.window.Start, firstCycleAt(fit, d.window.Start)
		}
		bal := int32(0)
		for i := range ev {
			switch ev[i].Kind() {
			case KindPush:
				bal++
			case KindPop:
				bal--
				lost = max(lost, -bal)
			case KindNext:
				if d.kind7 {
					lost = max(lost, 1-bal)
				}
			}
		}
	}
	st := &d.ps
	st.rs, st.ms = w.Ranges[:cap(w.Ranges)], w.Marks[:cap(w.Marks)]
	st.stack, st.starts = st.stack[:cap(st.stack)], st.starts[:cap(st.starts)]
	if cap(st.open) < linearOpen+1 {
		st.open = make([]int32, 0, linearOpen+1)
	}
	st.open = st.open[:0]
	st.nr, st.nm, st.sp, st.nst = 0, 0, 0, 0
	st.lost, st.role, st.kind7 = lost, w.Role, d.kind7
	// Placeholders are appended in event (time) order; only a tie in Start
	// with a smaller depth than the previous range breaks the sort.
	st.sorted = true
	st.prevStart, st.prevDepth = math.MinInt64, 0
	d.trunc = d.trunc[:0]
	d.tok.clear()
	// Open starts are found by a scan of st.open from the most recent while
	// there are few, and through the token table once there are many.
	hashed := false
	asyncTrunc := false
	nk := &d.nk
	for i := 0; i < len(ev); i++ {
		if i == dec {
			// Decode a block ahead.
			hi := min(len(ev), dec+pairBlock)
			decodeForward(ev[dec:hi], recs[dec*raw.RecordSize:hi*raw.RecordSize], c, &d.ct)
			c, dec = ev[hi-1].cycles, hi
		}
		if !hashed && !d.generalOnly {
			if i = st.fast(ev[:dec], i, nk); i == dec {
				i-- // the block is paired: decode the next one
				continue
			}
		}
		e := &ev[i]
		kind, name, payload, c, tm := e.Kind(), e.Name(), e.Payload(), e.cycles, e.time
		if kind == KindNext && d.kind7 {
			// A pop and a push at one instant: close the innermost open
			// push (as a plain pop would), then open name.
			if nk[name] != nkRange {
				d.badName(w, i, e)
			}
			switch {
			case st.sp > 0:
				st.sp--
				r := &st.rs[st.stack[st.sp].rng]
				r.End, r.EndCycles = tm, c
			case truncOK && st.lost > 0:
				st.lost--
				d.trunc = append(d.trunc, Range{
					Start: t0, StartCycles: t0c, End: tm, EndCycles: c,
					Depth: st.lost, Flags: RangeTruncated,
				})
			default:
				d.violate(w, PopEmpty, i, d.meta.NameText(name), fmt.Sprintf("next to %q with no open push to close", d.meta.NameText(name)))
			}
			kind = KindPush
		}
		switch kind {
		case KindPush:
			if nk[name] != nkRange && e.Kind() == KindPush {
				d.badName(w, i, e)
			}
			if st.sp == len(st.stack) {
				st.stack = grown(st.stack)
			}
			depth := st.lost + int32(st.sp)
			p := &st.stack[st.sp]
			p.name, p.idx, p.rng = name, int32(i), int32(st.nr)
			st.sp++
			st.addRange(name, payload, tm, c, depth, false)
		case KindPop:
			if name != 0 && nk[name] != nkRange {
				d.badName(w, i, e)
			}
			if st.sp == 0 {
				if truncOK && st.lost > 0 {
					st.lost--
					d.trunc = append(d.trunc, Range{
						Name: name, Start: t0, StartCycles: t0c, End: tm, EndCycles: c,
						Depth: st.lost, Flags: RangeTruncated,
					})
					continue
				}
				if name != 0 {
					d.violate(w, PopEmpty, i, d.meta.NameText(name), fmt.Sprintf("pop of %q with no open push", d.meta.NameText(name)))
				} else {
					d.violate(w, PopEmpty, i, "", "pop with no open push")
				}
				continue
			}
			st.sp--
			top := &st.stack[st.sp]
			if name != 0 && name != top.name {
				d.violate(w, PopMismatch, i, d.meta.NameText(name), fmt.Sprintf("pop of %q closes %q (pushed at event %d)",
					d.meta.NameText(name), d.meta.NameText(top.name), top.idx))
			}
			r := &st.rs[top.rng]
			r.End, r.EndCycles = tm, c
		case KindStart:
			if nk[name] != nkRange {
				d.badName(w, i, e)
			}
			if st.nst == len(st.starts) {
				st.starts = grown(st.starts)
			}
			si := int32(st.nst)
			s := &st.starts[si]
			st.nst++
			s.name, s.payload, s.open = name, payload, true
			s.idx, s.rng, s.prev = int32(i), int32(st.nr), -1
			switch {
			case hashed:
				key := uint32(name)<<16 | uint32(payload)
				s.prev = d.tok.get(key)
				d.tok.set(key, si)
			case len(st.open) < linearOpen:
				st.open = append(st.open, si)
			default:
				// Many open starts: index them by token from now on.
				hashed = true
				st.open = append(st.open, si)
				for _, j := range st.open {
					o := &st.starts[j]
					key := uint32(o.name)<<16 | uint32(o.payload)
					o.prev = d.tok.get(key)
					d.tok.set(key, j)
				}
				st.open = st.open[:0]
			}
			st.addRange(name, payload, tm, c, 0, true)
		case KindEnd:
			if nk[name] != nkRange {
				d.badName(w, i, e)
			}
			h := int32(-1)
			if hashed {
				key := uint32(name)<<16 | uint32(payload)
				if h = d.tok.get(key); h >= 0 {
					d.tok.set(key, st.starts[h].prev)
				}
			} else {
				// The most recent open start of the token.
				open := st.open
				for j := len(open) - 1; j >= 0; j-- {
					if o := &st.starts[open[j]]; o.name == name && o.payload == payload {
						h = open[j]
						st.open = append(open[:j], open[j+1:]...)
						break
					}
				}
			}
			if h < 0 {
				if truncOK {
					d.trunc = append(d.trunc, Range{
						Name: name, Payload: payload, Start: t0, StartCycles: t0c, End: tm, EndCycles: c,
						Async: true, Flags: RangeTruncated,
					})
					asyncTrunc = true
					continue
				}
				d.violate(w, EndUnknown, i, d.meta.NameText(name), fmt.Sprintf("end of %q payload %d with no open start of that name and payload",
					d.meta.NameText(name), payload))
				continue
			}
			s := &st.starts[h]
			s.open = false
			r := &st.rs[s.rng]
			r.End, r.EndCycles = tm, c
		case KindMark:
			if nk[name] != nkMark {
				d.badName(w, i, e)
			}
			if st.nm == len(st.ms) {
				st.ms = grown(st.ms)
			}
			m := &st.ms[st.nm]
			st.nm++
			m.Name, m.Payload, m.Time, m.Cycles = name, payload, tm, c
		case KindRole:
			if nk[name] != nkRole {
				d.badName(w, i, e)
			}
			st.role = name
		default:
			what := "reserved record kind 7 (NEXT exists from format version 2)"
			if kind == KindInvalid {
				what = "unwritten record (kind 0) among the stored events"
			}
			d.violate(w, BadRecord, i, "", what)
		}
	}
	w.Ranges, w.Marks, w.Role = st.rs[:st.nr], st.ms[:st.nm], st.role
	sorted := st.sorted
	// Close what is still open at the warp's last event.
	last := &ev[len(ev)-1]
	for _, p := range st.stack[:st.sp] {
		r := &w.Ranges[p.rng]
		r.End, r.EndCycles, r.Flags = last.time, last.cycles, r.Flags|RangeUnclosed
		d.violate(w, UnclosedRange, int(p.idx), d.meta.NameText(p.name), fmt.Sprintf("push of %q still open at the warp's end", d.meta.NameText(p.name)))
	}
	if hashed || len(st.open) > 0 {
		for i := range st.starts[:st.nst] {
			s := &st.starts[i]
			if !s.open {
				continue
			}
			r := &w.Ranges[s.rng]
			r.End, r.EndCycles, r.Flags = last.time, last.cycles, r.Flags|RangeUnclosed
			d.violate(w, UnclosedRange, int(s.idx), d.meta.NameText(s.name), fmt.Sprintf("start of %q payload %d still open at the warp's end", d.meta.NameText(s.name), s.payload))
		}
	}
	if len(d.trunc) > 0 {
		slices.SortStableFunc(d.trunc, cmpRange)
		w.Ranges = slices.Insert(w.Ranges, 0, d.trunc...)
		sorted = false
	}
	if !sorted && !slices.IsSortedFunc(w.Ranges, cmpRange) {
		slices.SortStableFunc(w.Ranges, cmpRange)
	}
	if st.nst > 0 || asyncTrunc {
		d.assignLanes(w.Ranges)
	}
	// Violations in event order (end-of-warp ones last) are already so.
}

// addRange appends a range placeholder (the general path).
func (st *pairState) addRange(name, payload uint16, tm int64, c uint64, depth int32, async bool) {
	if st.nr == len(st.rs) {
		st.rs = grown(st.rs)
	}
	r := &st.rs[st.nr]
	st.nr++
	r.Name, r.Payload, r.Start, r.StartCycles = name, payload, tm, c
	r.Depth, r.Async, r.Lane, r.Flags = depth, async, 0, 0
	if depth < st.prevDepth && tm == st.prevStart {
		st.sorted = false
	}
	st.prevStart, st.prevDepth = tm, depth
}

// fast pairs ev from index i on while every event is ordinary (a known name
// of the right kind, a pop closing the top push by the same name or no name,
// an end closing an open start, few open starts, room in every slice) and
// returns the index of the first event it left to the general path, or
// len(ev). It makes no calls. The pairing state stays in st, loaded and
// stored where a case uses it: with every slice and count in locals the
// register allocator spilled and shuffled a dozen of them on every event.
// The events are decoded (pair runs decodeForward a block ahead): decoding
// in this loop too needs more registers than there are. It duplicates the
// general path's common cases for speed (docs/results/bench-cpu/pairing.txt);
// TestSamePairing and FuzzDecode check that the two agree.
func (st *pairState) fast(ev []Event, i int, nk *[8192]uint8) int {
	_, _ = st.sp, nk[0] // nil checks, once
loop:
	for ; i < len(ev); i++ {
		e := &ev[i]
		hi, cy, tm := e.hi, e.cycles, e.time
		id := hi >> 16 & 0x1fff
		name, payload, nkv := uint16(id), uint16(hi), nk[id]
		// Each case loads the slices it uses into locals first: stores
		// through them could alias st, so st's fields would be loaded
		// (and bounds checked) again after every store.
		switch Kind(hi >> 29) {
		case KindPush:
			stack, rs, sp, nr := st.stack, st.rs, st.sp, st.nr
			if nkv != nkRange || uint(sp) >= uint(len(stack)) || uint(nr) >= uint(len(rs)) {
				break loop
			}
			depth := st.lost + int32(sp)
			p := &stack[sp]
			p.name, p.idx, p.rng = name, int32(i), int32(nr)
			st.sp, st.nr = sp+1, nr+1
			r := &rs[nr]
			r.Name, r.Payload, r.Start, r.StartCycles = name, payload, tm, cy
			r.Depth, r.Async, r.Lane, r.Flags = depth, false, 0, 0
			if depth < st.prevDepth && tm == st.prevStart {
				st.sorted = false
			}
			st.prevStart, st.prevDepth = tm, depth
		case KindNext:
			// Close the top push, open name in its stack slot.
			stack, rs, sp, nr := st.stack, st.rs, st.sp-1, st.nr
			if !st.kind7 || nkv != nkRange || uint(sp) >= uint(len(stack)) || uint(nr) >= uint(len(rs)) {
				break loop
			}
			p := &stack[sp]
			rng := int(p.rng)
			if uint(rng) >= uint(len(rs)) {
				break loop
			}
			r := &rs[rng]
			r.End, r.EndCycles = tm, cy
			depth := st.lost + int32(sp)
			p.name, p.idx, p.rng = name, int32(i), int32(nr)
			st.nr = nr + 1
			r = &rs[nr]
			r.Name, r.Payload, r.Start, r.StartCycles = name, payload, tm, cy
			r.Depth, r.Async, r.Lane, r.Flags = depth, false, 0, 0
			if depth < st.prevDepth && tm == st.prevStart {
				st.sorted = false
			}
			st.prevStart, st.prevDepth = tm, depth
		case KindPop:
			stack, rs, sp := st.stack, st.rs, st.sp-1
			if uint(sp) >= uint(len(stack)) {
				break loop
			}
			top := &stack[sp]
			rng := int(top.rng)
			if name != 0 && (name != top.name || nkv != nkRange) || uint(rng) >= uint(len(rs)) {
				break loop
			}
			st.sp = sp
			r := &rs[rng]
			r.End, r.EndCycles = tm, cy
		case KindStart:
			open, starts, rs, nst, nr := st.open, st.starts, st.rs, st.nst, st.nr
			no := len(open)
			if nkv != nkRange || no >= linearOpen || no >= cap(open) || uint(nst) >= uint(len(starts)) || uint(nr) >= uint(len(rs)) {
				break loop
			}
			open = open[:no+1]
			open[no] = int32(nst)
			st.open, st.nst, st.nr = open, nst+1, nr+1
			s := &starts[nst]
			s.name, s.payload, s.open = name, payload, true
			s.idx, s.rng, s.prev = int32(i), int32(nr), -1
			r := &rs[nr]
			r.Name, r.Payload, r.Start, r.StartCycles = name, payload, tm, cy
			r.Depth, r.Async, r.Lane, r.Flags = 0, true, 0, 0
			if tm == st.prevStart && st.prevDepth > 0 {
				st.sorted = false
			}
			st.prevStart, st.prevDepth = tm, 0
		case KindEnd:
			if nkv != nkRange {
				break loop
			}
			open, starts, rs := st.open, st.starts, st.rs
			j := len(open) - 1
			var s *openStart
			for ; j >= 0; j-- {
				o := open[j]
				if uint(o) >= uint(len(starts)) {
					break loop
				}
				if s = &starts[o]; s.name == name && s.payload == payload {
					break
				}
			}
			if j < 0 {
				break loop
			}
			rng := int(s.rng)
			if uint(rng) >= uint(len(rs)) {
				break loop
			}
			for k := j + 1; k < len(open); k++ {
				open[k-1] = open[k]
			}
			st.open = open[:len(open)-1]
			s.open = false
			r := &rs[rng]
			r.End, r.EndCycles = tm, cy
		case KindMark:
			ms, nm := st.ms, st.nm
			if nkv != nkMark || uint(nm) >= uint(len(ms)) {
				break loop
			}
			st.nm = nm + 1
			m := &ms[nm]
			m.Name, m.Payload, m.Time, m.Cycles = name, payload, tm, cy
		case KindRole:
			if nkv != nkRole {
				break loop
			}
			st.role = name
		default:
			break loop
		}
	}
	return i
}

// firstCycleAt returns the first cycle the fit maps to ns or later.
func firstCycleAt(f *ClockFit, ns int64) uint64 {
	c := f.Cycles(ns)
	for i := 0; i < 4 && f.Ns(c) < ns; i++ {
		c++
	}
	for i := 0; i < 4 && f.Ns(c-1) >= ns; i++ {
		c--
	}
	return c
}

// pairBlock is how many events pair decodes ahead of the pairing.
const pairBlock = 256

// linearOpen is how many open starts a warp may have before END lookups
// switch from a scan to the token table.
const linearOpen = 16

// grown returns s with its length doubled (at least 16), keeping its
// contents.
//
//go:noinline
func grown[S ~[]E, E any](s S) S {
	t := make(S, max(16, 2*len(s)))
	copy(t, s)
	return t
}

func cmpRange(a, b Range) int {
	switch {
	case a.Start < b.Start:
		return -1
	case a.Start > b.Start:
		return 1
	}
	return int(a.Depth) - int(b.Depth)
}

// badName reports an event whose name id is outside the table or of the
// wrong kind for the event.
func (d *Decoder) badName(w *Warp, i int, e *Event) {
	if d.nk[e.Name()] == nkUnknown {
		d.violate(w, UnknownName, i, d.meta.NameText(e.Name()), fmt.Sprintf("%s names id %d, which is not in the name table (%d names)",
			e.Kind(), e.Name(), len(d.meta.Names)))
		return
	}
	n := d.meta.NameText(e.Name())
	var kind NameKind
	switch d.nk[e.Name()] {
	case nkRange:
		kind = NameRange
	case nkMark:
		kind = NameMark
	default:
		kind = NameRole
	}
	d.violate(w, WrongNameKind, i, n, fmt.Sprintf("%s of %q, a %s name", e.Kind(), n, kind))
}

// assignLanes gives each async range the smallest lane free at its start
// (a lane is free once its last range ended at or before the start), in
// O(n log n). It compares cycles, which are exact on one warp's SM.
func (d *Decoder) assignLanes(rs []Range) {
	d.busy = d.busy[:0]
	d.free = d.free[:0]
	next := int32(0)
	for i := range rs {
		r := &rs[i]
		if !r.Async {
			continue
		}
		// Fast path: one lane, free again.
		if len(d.busy) == 1 && len(d.free) == 0 && d.busy[0].end <= r.StartCycles {
			r.Lane = d.busy[0].lane
			d.busy[0].end = r.EndCycles
			continue
		}
		for len(d.busy) > 0 && d.busy[0].end <= r.StartCycles {
			d.free = pushLane(d.free, d.busy[0].lane)
			d.busy.pop()
		}
		if len(d.free) > 0 {
			r.Lane = d.free[0]
			d.free = popLane(d.free)
		} else {
			r.Lane = next
			next++
		}
		d.busy.push(laneEnd{end: r.EndCycles, lane: r.Lane})
	}
}

type laneEnd struct {
	end  uint64 // cycles
	lane int32
}

// laneHeap is a min-heap of busy lanes by end time (then lane).
type laneHeap []laneEnd

func (h laneHeap) less(i, j int) bool {
	return h[i].end < h[j].end || (h[i].end == h[j].end && h[i].lane < h[j].lane)
}

func (h *laneHeap) push(x laneEnd) {
	*h = append(*h, x)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *laneHeap) pop() {
	s := *h
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && s.less(l, m) {
			m = l
		}
		if l+1 < n && s.less(l+1, m) {
			m = l + 1
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
}

// pushLane and popLane keep a min-heap of free lane numbers.
func pushLane(h []int32, x int32) []int32 {
	h = append(h, x)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p] <= h[i] {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return h
}

func popLane(h []int32) []int32 {
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && h[l] < h[m] {
			m = l
		}
		if l+1 < n && h[l+1] < h[m] {
			m = l + 1
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	return h
}

// tokTable maps a start/end token (name<<16 | payload) to the index of its
// most recent open start (-1 for none): open addressing with linear probing
// over one array of 8-byte slots (key+1, 0 = empty), cleared per warp in time
// proportional to the keys used.
type tokTable struct {
	slots []tokSlot
	list  []int32 // used slots, for clear
}

type tokSlot struct {
	key1 uint32 // key+1; 0 = empty
	val  int32
}

func (t *tokTable) clear() {
	for _, i := range t.list {
		t.slots[i].key1 = 0
	}
	t.list = t.list[:0]
}

func (t *tokTable) slot(key uint32) int {
	mask := len(t.slots) - 1
	i := int((key*0x9e3779b1)>>16) & mask
	for k := t.slots[i].key1; k != 0 && k != key+1; k = t.slots[i].key1 {
		i = (i + 1) & mask
	}
	return i
}

func (t *tokTable) get(key uint32) int32 {
	if len(t.slots) == 0 {
		return -1
	}
	i := t.slot(key)
	if t.slots[i].key1 == 0 {
		return -1
	}
	return t.slots[i].val
}

func (t *tokTable) set(key uint32, v int32) {
	if 2*(len(t.list)+1) > len(t.slots) {
		t.grow()
	}
	i := t.slot(key)
	p := &t.slots[i]
	if p.key1 == 0 {
		p.key1 = key + 1
		t.list = append(t.list, int32(i))
	}
	p.val = v
}

func (t *tokTable) grow() {
	old, oldL := t.slots, t.list
	n := max(64, 2*len(t.slots))
	t.slots = make([]tokSlot, n)
	t.list = make([]int32, 0, n/2)
	for _, i := range oldL {
		t.set(old[i].key1-1, old[i].val)
	}
}
