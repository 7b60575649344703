package trace

import (
	"encoding/binary"
	"fmt"

	"github.com/iket-trace/iket/internal/raw"
)

// Side events (format 3, docs/FORMAT.md section 3): lane 0 stores a warp's
// events upward from record 0; an event recorded while lane 0 was not among
// the recording lanes is stored by the lowest of those lanes downward from
// the last record, with a cursor of its own. At exit each lane that did
// merges its count into the tail word (the 8 bytes after the last record):
// the largest count in the low half, the number of such lanes in the high.

// tailCount reads a format-3 warp slot's tail word, from whole (the slot's
// records and tail word, [Decoder.readThroughTail]) when it is not nil:
// how many side events the warp recorded (at most capacity + 1, which means
// more than the capacity) and how many lanes stored them.
func (d *Decoder) tailCount(slot uint64, whole []byte) (n, lanes uint32, err *WarpError) {
	off := d.meta.Offset + int64(slot)*d.stride + raw.TailOffset(d.meta.Capacity)
	t := d.tail[:]
	if whole != nil {
		t = whole[len(whole)-raw.RecordSize:]
	} else if rerr := d.ra.readAt(t, off); rerr != nil {
		return 0, 0, &WarpError{Launch: d.l.Index, Slot: slot, Offset: off, Msg: "read tail word", Err: rerr}
	}
	n, lanes = raw.DecodeTail(t[:])
	if uint64(n) > uint64(d.meta.Capacity)+1 || lanes > 32 || (n == 0) != (lanes == 0) {
		return 0, 0, &WarpError{Launch: d.l.Index, Slot: slot, Offset: off, Msg: fmt.Sprintf(
			"tail word says %d side events by %d lanes (at most capacity + 1 = %d events, 32 lanes, and neither without the other): the buffer is damaged",
			n, lanes, uint64(d.meta.Capacity)+1)}
	}
	return n, lanes, nil
}

// readThroughTail reads a stop-mode slot's records and its tail word in one
// read into d.buf, where that reads little more than the warp's records
// (a finished warp's stored ones, whole for one that did not finish; at
// most a scan chunk): one read per warp instead of two. nil otherwise.
func (d *Decoder) readThroughTail(slot uint64, h *raw.WarpHeader) ([]byte, *WarpError) {
	capa := d.meta.Capacity
	if d.wrap || capa > scanChunk {
		return nil, nil
	}
	if h.Finished() {
		if n := min(h.Count, capa); capa-n > max(n, 512) {
			return nil, nil
		}
	}
	size := (int(capa) + 1) * raw.RecordSize
	if cap(d.buf) < size {
		d.buf = make([]byte, size)
	}
	b := d.buf[:size]
	off := d.meta.Offset + int64(slot)*d.stride + raw.WarpHeaderSize
	if err := d.ra.readAt(b, off); err != nil {
		return nil, &WarpError{Launch: d.l.Index, Slot: slot, Offset: off, Msg: "read records", Err: err}
	}
	return b, nil
}

// mergeSide reads a stop-mode warp's lane-0 records and its nSide side
// events and returns them merged in time order, setting w's counts. Where
// the two met (more events than the capacity), the records in the slots
// both may have written are left out and counted as dropped; every other
// record is one only its writer stored.
func (d *Decoder) mergeSide(w *Warp, h *raw.WarpHeader, nSide uint32) ([]byte, *WarpError) {
	capa := d.meta.Capacity
	sideSlots := min(nSide, capa) // slots the side events wrote, from the top
	var nMain uint64              // lane 0's events attempted
	var keepMain, mainSlots uint32
	if h.Finished() {
		nMain = uint64(h.Count)
		mainSlots = uint32(min(nMain, uint64(capa)))
		keepMain = min(mainSlots, capa-sideSlots)
	} else {
		// No count: lane 0's records end at the first unwritten slot below
		// the side records. Had lane 0 filled its part, it may have gone
		// on into theirs: then none of theirs is trusted.
		zone := capa - sideSlots
		s := spanScan{firstZero: int(zone), run: -1}
		if zone > 0 {
			var err *WarpError
			if s, err = d.scanSpan(w.Slot, 0, zone); err != nil {
				return nil, err
			}
		}
		keepMain = uint32(s.firstZero)
		w.Beyond = s.beyond
		mainSlots = keepMain
		if keepMain == zone {
			mainSlots = capa
		}
		nMain = uint64(keepMain)
	}
	keepSide := min(sideSlots, capa-mainSlots)
	mb, err := d.readRingInto(&d.buf, w.Slot, 0, keepMain)
	if err != nil {
		return nil, err
	}
	sb, err := d.readRingInto(&d.sbuf, w.Slot, capa-keepSide, keepSide)
	if err != nil {
		return nil, err
	}
	w.Count = nMain + uint64(nSide)
	w.SideDropped = uint64(nSide - keepSide)
	w.Dropped = w.Count - uint64(keepMain) - uint64(keepSide)
	return d.merge(mb, sb, h.StartClock), nil
}

// merge returns lane 0's records main and the side records side (stored
// downward: the first side event is the last record) in the order of their
// cycle counts, each sequence unwrapped from the warp's start anchor; lane
// 0's first on a tie. An unwritten record keeps its sequence's count.
func (d *Decoder) merge(main, side []byte, start uint64) []byte {
	size := len(main) + len(side)
	if cap(d.mbuf) < size {
		d.mbuf = make([]byte, size)
	}
	out := d.mbuf[:0]
	le := binary.LittleEndian
	nm, ns := len(main)/raw.RecordSize, len(side)/raw.RecordSize
	at := func(b []byte, i int, c uint64) (uint64, uint64) {
		r := le.Uint64(b[i*raw.RecordSize:])
		if r == 0 {
			return r, c
		}
		return r, c + uint64(uint32(r)-uint32(c))
	}
	cm, cs := start, start
	i, j := 0, 0
	var rm, rs, km, ks uint64
	if nm > 0 {
		rm, km = at(main, 0, cm)
	}
	if ns > 0 {
		rs, ks = at(side, ns-1, cs)
	}
	for i < nm || j < ns {
		if j == ns || (i < nm && km <= ks) {
			out = le.AppendUint64(out, rm)
			cm = km
			if i++; i < nm {
				rm, km = at(main, i, cm)
			}
			continue
		}
		out = le.AppendUint64(out, rs)
		cs = ks
		if j++; j < ns {
			rs, ks = at(side, ns-1-j, cs)
		}
	}
	return out
}

// hungSide returns how many of a stop-mode format-3 warp's records, read
// whole into b (span records), are side events of a warp that did not
// finish and so wrote no tail word: the run of written records down from
// the last slot, when at least one unwritten slot separates it from lane
// 0's n records. One lane's side events lie there contiguously; several
// lanes' or an iket::Batch's holes reaching the last slot would read the
// same, so this is the best reading, not a certain one. 0 when the buffer
// was not read whole (larger than a scan chunk).
func (d *Decoder) hungSide(b []byte, n int, span uint32) int {
	capa := int(d.meta.Capacity)
	if !d.side || d.wrap || int(span) != capa {
		return 0
	}
	// Slot n is lane 0's first unwritten one: the run stops above it.
	k := 0
	for k < capa-n-1 && binary.LittleEndian.Uint64(b[(capa-1-k)*raw.RecordSize:]) != 0 {
		k++
	}
	return k
}
