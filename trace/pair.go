package trace

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// pair turns w.Events into w.Ranges, w.Marks and w.Role, reporting pairing
// problems as violations. Ranges are produced in order of their begin event
// (a placeholder is appended at the push or start and completed at the pop
// or end), so they come out sorted by Start without a sort in the common
// case.
//
// When raw is not nil, w.Events is only sized and pair fills each event
// from raw's records first (cycles unwrapped forward from startClock): one
// pass over the warp instead of two.
func (d *Decoder) pair(w *Warp, fit *ClockFit, raw []byte, startClock uint64) {
	ev := w.Events
	if len(ev) == 0 {
		return
	}
	// In a wrapped (or trimmed) record a pop or end may close a begin that
	// was lost: not a violation, but a truncated range starting where the
	// record does.
	truncOK := (d.wrap && w.Dropped > 0) || w.Trimmed > 0
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
			switch ev[i].kind {
			case KindPush:
				bal++
			case KindPop:
				bal--
				lost = max(lost, -bal)
			}
		}
	}
	d.stack = d.stack[:0]
	d.starts = d.starts[:0]
	d.trunc = d.trunc[:0]
	d.tok.clear()
	d.open = d.open[:0]
	// Open starts are found by a scan of d.open from the most recent while
	// there are few, and through the token table once there are many.
	hashed, nOpen := false, 0
	nk := &d.nk
	nAsync := 0
	// Placeholders are appended in event (time) order; only a tie in Start
	// with a smaller depth than the previous range breaks the sort.
	sorted := true
	prevStart, prevDepth := int64(math.MinInt64), int32(0)
	c := startClock
	for i := range ev {
		e := &ev[i]
		// The cases read the event from locals, not back from memory.
		var kind Kind
		var name, payload uint16
		var tm int64
		if raw != nil {
			r := Record(binary.LittleEndian.Uint64(raw[i*RecordSize:]))
			c += uint64(uint32(r) - uint32(c))
			kind, name, payload, tm = r.Kind(), r.Name(), r.Payload(), fit.Ns(c)
			e.kind, e.name, e.payload, e.cycles, e.time = kind, name, payload, c, tm
		} else {
			kind, name, payload, c, tm = e.kind, e.name, e.payload, e.cycles, e.time
		}
		switch kind {
		case KindPush:
			if nk[name] != nkRange {
				d.badName(w, i, e)
			}
			d.stack = append(d.stack, openPush{name: name, idx: int32(i), rng: int32(len(w.Ranges))})
			var r *Range
			w.Ranges, r = appendZero(w.Ranges)
			r.Name, r.Payload, r.Start, r.StartCycles = name, payload, tm, c
			r.Depth = lost + int32(len(d.stack)) - 1
			if r.Depth < prevDepth && r.Start == prevStart {
				sorted = false
			}
			prevStart, prevDepth = r.Start, r.Depth
		case KindPop:
			if name != 0 && nk[name] != nkRange {
				d.badName(w, i, e)
			}
			if len(d.stack) == 0 {
				if truncOK && lost > 0 {
					lost--
					d.trunc = append(d.trunc, Range{
						Name: name, Start: t0, StartCycles: t0c, End: tm, EndCycles: c,
						Depth: lost, Flags: RangeTruncated,
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
			top := d.stack[len(d.stack)-1]
			d.stack = d.stack[:len(d.stack)-1]
			if name != 0 && name != top.name {
				d.violate(w, PopMismatch, i, d.meta.NameText(name), fmt.Sprintf("pop of %q closes %q (pushed at event %d)",
					d.meta.NameText(name), d.meta.NameText(top.name), top.idx))
			}
			r := &w.Ranges[top.rng]
			r.End, r.EndCycles = tm, c
		case KindStart:
			if nk[name] != nkRange {
				d.badName(w, i, e)
			}
			var s *openStart
			d.starts, s = appendZero(d.starts)
			s.name, s.payload, s.open = name, payload, true
			s.idx, s.rng, s.prev = int32(i), int32(len(w.Ranges)), -1
			si := int32(len(d.starts) - 1)
			nOpen++
			switch {
			case hashed:
				key := uint32(name)<<16 | uint32(payload)
				s.prev = d.tok.get(key)
				d.tok.set(key, si)
			case len(d.open) < linearOpen:
				d.open = append(d.open, si)
			default:
				// Many open starts: index them by token from now on.
				hashed = true
				d.open = append(d.open, si)
				for _, j := range d.open {
					o := &d.starts[j]
					key := uint32(o.name)<<16 | uint32(o.payload)
					o.prev = d.tok.get(key)
					d.tok.set(key, j)
				}
				d.open = d.open[:0]
			}
			var r *Range
			w.Ranges, r = appendZero(w.Ranges)
			r.Name, r.Payload, r.Start, r.StartCycles, r.Async = name, payload, tm, c, true
			if r.Start == prevStart && prevDepth > 0 {
				sorted = false
			}
			prevStart, prevDepth = r.Start, 0
			nAsync++
		case KindEnd:
			if nk[name] != nkRange {
				d.badName(w, i, e)
			}
			h := int32(-1)
			if hashed {
				key := uint32(name)<<16 | uint32(payload)
				if h = d.tok.get(key); h >= 0 {
					d.tok.set(key, d.starts[h].prev)
				}
			} else {
				// The most recent open start of the token.
				for j := len(d.open) - 1; j >= 0; j-- {
					if o := &d.starts[d.open[j]]; o.name == name && o.payload == payload {
						h = d.open[j]
						d.open = append(d.open[:j], d.open[j+1:]...)
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
					nAsync++
					continue
				}
				d.violate(w, EndUnknown, i, d.meta.NameText(name), fmt.Sprintf("end of %q payload %d with no open start of that name and payload",
					d.meta.NameText(name), payload))
				continue
			}
			s := &d.starts[h]
			s.open = false
			nOpen--
			r := &w.Ranges[s.rng]
			r.End, r.EndCycles = tm, c
		case KindMark:
			if nk[name] != nkMark {
				d.badName(w, i, e)
			}
			var m *Mark
			w.Marks, m = appendZero(w.Marks)
			m.Name, m.Payload, m.Time, m.Cycles = name, payload, tm, c
		case KindRole:
			if nk[name] != nkRole {
				d.badName(w, i, e)
			}
			w.Role = name
		default:
			what := "reserved record kind 7"
			if kind == KindInvalid {
				what = "unwritten record (kind 0) among the stored events"
			}
			d.violate(w, BadRecord, i, "", what)
		}
	}
	// Close what is still open at the warp's last event.
	last := &ev[len(ev)-1]
	for _, p := range d.stack {
		r := &w.Ranges[p.rng]
		r.End, r.EndCycles, r.Flags = last.time, last.cycles, r.Flags|RangeUnclosed
		d.violate(w, UnclosedRange, int(p.idx), d.meta.NameText(p.name), fmt.Sprintf("push of %q still open at the warp's end", d.meta.NameText(p.name)))
	}
	for i := range d.starts {
		if nOpen == 0 {
			break
		}
		s := &d.starts[i]
		if !s.open {
			continue
		}
		r := &w.Ranges[s.rng]
		r.End, r.EndCycles, r.Flags = last.time, last.cycles, r.Flags|RangeUnclosed
		d.violate(w, UnclosedRange, int(s.idx), d.meta.NameText(s.name), fmt.Sprintf("start of %q payload %d still open at the warp's end", d.meta.NameText(s.name), s.payload))
	}
	if len(d.trunc) > 0 {
		slices.SortStableFunc(d.trunc, cmpRange)
		w.Ranges = slices.Insert(w.Ranges, 0, d.trunc...)
		sorted = false
	}
	if !sorted && !slices.IsSortedFunc(w.Ranges, cmpRange) {
		slices.SortStableFunc(w.Ranges, cmpRange)
	}
	if nAsync > 0 {
		d.assignLanes(w.Ranges)
	}
	// Violations in event order (end-of-warp ones last) are already so.
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

// linearOpen is how many open starts a warp may have before END lookups
// switch from a scan to the token table.
const linearOpen = 16

// appendZero appends a zero element and returns a pointer to it, so the
// caller fills it field by field in place.
func appendZero[S ~[]E, E any](s S) (S, *E) {
	n := len(s)
	if n < cap(s) {
		s = s[:n+1]
		p := &s[n]
		var z E
		*p = z
		return s, p
	}
	var z E
	s = append(s, z)
	return s, &s[n]
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
	if d.nk[e.name] == nkUnknown {
		d.violate(w, UnknownName, i, d.meta.NameText(e.name), fmt.Sprintf("%s names id %d, which is not in the name table (%d names)",
			e.kind, e.name, len(d.meta.Names)))
		return
	}
	n := d.meta.NameText(e.name)
	var kind NameKind
	switch d.nk[e.name] {
	case nkRange:
		kind = NameRange
	case nkMark:
		kind = NameMark
	default:
		kind = NameRole
	}
	d.violate(w, WrongNameKind, i, n, fmt.Sprintf("%s of %q, a %s name", e.kind, n, kind))
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
