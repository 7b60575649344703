package perfetto

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"

	"github.com/iket-trace/iket/trace"
)

// encodeEvents checks the warp's model events (w.bd.evs) one at a time
// against the per-track rules of [builder.check] (state in chk, see
// modelCheck) and encodes each as a
// TracePacket straight into the output (or compression) buffer. It returns
// the index of the first event that fails the check, or -1 when all pass.
//
// It is the writer's hot loop, written to make no calls for the common
// events (slice ends, ranges without flows or incompleteness, marks): the
// fixed-size parts of a packet go into a window of packetSlack bytes
// reserved past the buffer's end, as index stores and whole copies of the
// warp's templates; strings, interned names and flow ids, which have no
// size bound, are appended by slower code. The incremental clock's state
// and the buffer stay in locals and are written back at the end.
func (w *Writer) encodeEvents(v *warpView, flowHeads []int32, chk []chkState) int {
	b := w.buf
	if w.opt.Compress {
		b = w.chunk
	}
	// Only the compression chunk is cut while a warp is encoded (the output
	// is held until the warp passed its check).
	flushAt := math.MaxInt
	if w.opt.Compress {
		flushAt = defaultCompressChunk
	}
	tp := &w.tmpl
	// One local track per lane template and check state: one bounds check.
	nt := min(len(tp.lanes), len(chk))
	lanes, chk := tp.lanes[:nt], chk[:nt]
	ranges, marks := v.ranges, v.marks
	raw := w.opt.RawCycles
	ts := w.ts
	bad := -1
	evs := w.bd.evs
	for i := range evs {
		e := &evs[i]
		// The model check: the event's track exists, its time is not before
		// the track's previous one (which starts at 0, so not negative) and
		// its slice depth stays within [0, maxSliceDepth].
		lt := int(e.lt())
		if lt >= nt {
			bad = i
			break
		}
		st := &chk[lt]
		st.depth += depthStep[e.typ()&3]
		if e.ts < st.last || uint32(st.depth) > maxSliceDepth {
			bad = i
			break
		}
		st.last = e.ts

		if cap(b)-len(b) < packetSlack {
			b = slices.Grow(b, packetSlack)
		}
		p0 := len(b) // the packet's tag; its length byte follows
		q := b[:p0+packetSlack]
		q[p0] = byte(fTracePacket<<3 | 2)
		q[p0+2] = byte(fPktTimestamp << 3)
		k := p0 + 3
		// The timestamp, a delta on the sequence's incremental clock
		// (tsDelta.put).
		if d := uint64(e.ts - ts.last); d < 0x80 {
			q[k] = byte(d)
			k++
		} else if d < 1<<14 {
			q[k], q[k+1] = byte(d)|0x80, byte(d>>7)
			k += 2
		} else {
			k = putUvLong(q, k, d)
		}
		ts.last = e.ts
		lp := &lanes[lt]
		if e.typ() == typeSliceEnd {
			*(*[32]byte)(q[k : k+32]) = lp.end
			k += int(lp.endN)
			q[p0+1] = byte(k - p0 - 2) // at most 11 + 21 bytes
			b = q[:k]
			if len(b) >= flushAt {
				b = w.cutChunk(b)
			}
			continue
		}
		*(*[16]byte)(q[k : k+16]) = tp.flags
		k += int(tp.flagsN)
		var key uint32
		var r *trace.Range
		var m *trace.Mark
		switch e.src() {
		case srcRange:
			r = &ranges[e.idx]
			key = rangeKey(r.Name, r.Flags, r.Payload)
		case srcMark:
			m = &marks[e.idx]
			key = rangeKey(m.Name, 0, 0)
		case srcDrop:
			key = keyDrop
		default:
			key = keyViolation + uint32(min(v.viols[e.idx].kind, 31))
		}
		iid := uint64(w.names.lookup(key))
		// A payload variant past the table's bound: the plain name, with
		// the payload as an annotation.
		payloadAnnot := false
		if iid == 0 && key < keyOwn && uint16(key) != 0 && w.names.full(key) {
			key &^= 0xffff
			payloadAnnot = true
			iid = uint64(w.names.lookup(key))
		}
		// The debug annotation names the event uses, interned on the
		// sequence when first used.
		var ann uint16
		switch e.src() {
		case srcRange:
			if payloadAnnot {
				ann |= 1 << daPayload
			}
			if raw {
				ann |= 1<<daStartCycles | 1<<daEndCycles
			}
			if r.Flags != 0 {
				ann |= 1 << daIncomplete
			}
		case srcMark:
			if m.Payload != 0 {
				ann |= 1 << daPayload
			}
			if raw {
				ann |= 1 << daCycles
			}
		case srcDrop:
			ann = 1<<daDropped | 1<<daAttempted | 1<<daStored | 1<<daDetail
		default:
			ann = 1 << daDetail
		}
		if iid == 0 || ann&^w.annSeen != 0 {
			var nb []byte
			nb, iid = w.internEvent(q[:k], key, iid, ann, e, v)
			b = grow(nb, packetSlack)
			k = len(b)
			q = b[:k+packetSlack]
		}
		t0 := k + 1 // the TrackEvent's length byte
		*(*[32]byte)(q[k : k+32]) = lp.te
		q[k+3] = e.typ()
		k += int(lp.teN)
		q[k] = byte(fTENameIID << 3)
		if iid < 0x80 {
			q[k+1] = byte(iid)
			k += 2
		} else {
			x, n := uv56(iid)
			binary.LittleEndian.PutUint64(q[k+1:k+9], x)
			k += 1 + n
		}
		switch e.src() {
		case srcRange:
			if payloadAnnot {
				k = putAnnot(q, k, daPayload, uint64(r.Payload))
			}
			if raw {
				k = putAnnot(q, k, daStartCycles, r.StartCycles)
				k = putAnnot(q, k, daEndCycles, r.EndCycles)
			}
			b = q[:k]
			if r.Flags != 0 || (flowHeads != nil && flowHeads[e.idx] >= 0) {
				b = w.appendRangeExtras(b, r, flowHeads, e.idx)
			}
		case srcMark:
			// A mark's payload is often a value of its own (a round, a
			// count), not a stage: an annotation when not 0.
			if m.Payload != 0 {
				k = putAnnot(q, k, daPayload, uint64(m.Payload))
			}
			if raw {
				k = putAnnot(q, k, daCycles, m.Cycles)
			}
			b = q[:k]
		case srcDrop:
			k = putAnnot(q, k, daDropped, v.info.dropped)
			k = putAnnot(q, k, daAttempted, v.info.count)
			k = putAnnot(q, k, daStored, uint64(v.info.stored))
			b = appendAnnotString(q[:k], daDetail, dropText(w.lm.Mode))
		default:
			b = appendAnnotString(q[:k], daDetail, v.viols[e.idx].detail)
		}
		if n := len(b) - t0 - 1; n < 0x80 {
			b[t0] = byte(n)
		} else {
			b = closeLen(b, t0)
		}
		if n := len(b) - p0 - 2; n < 0x80 {
			b[p0+1] = byte(n)
		} else {
			b = closeLen(b, p0+1)
		}
		if len(b) >= flushAt {
			b = w.cutChunk(b)
		}
	}
	if w.opt.Compress {
		w.chunk = b
	} else {
		w.buf = b
	}
	w.ts = ts
	// Every slice has its end and every instant is one event.
	if bad < 0 {
		w.stats.Instants += int64(w.bd.nInst)
		w.stats.Slices += int64(len(evs)-w.bd.nInst) / 2
	} else {
		for i := range evs[:bad] {
			switch evs[i].typ() {
			case typeInstant:
				w.stats.Instants++
			case typeSliceEnd:
				w.stats.Slices++
			}
		}
	}
	return bad
}

// appendRangeExtras appends what a range's slice begin may carry beyond its
// fixed part: the incompleteness annotation and flow ids.
func (w *Writer) appendRangeExtras(b []byte, r *trace.Range, flowHeads []int32, idx int32) []byte {
	if r.Flags != 0 {
		b = appendAnnotString(b, daIncomplete, incompleteText(r.Flags))
	}
	if flowHeads != nil {
		for f := flowHeads[idx]; f >= 0; f = w.cta.flows[f].next {
			fr := &w.cta.flows[f]
			b = appendFlowID(b, fr.id, fr.term)
			if !fr.term {
				w.stats.Flows++
			}
		}
	}
	return b
}

// appendFlowID appends a flow id as a flow_ids field or, when term, a
// terminating_flow_ids field: unpacked fixed64s, a two-byte tag (fields 47
// and 48, wire type 1) then the id.
func appendFlowID(b []byte, id uint64, term bool) []byte {
	const flow, termFlow = fTEFlowIDs<<3 | 1, fTETerminatingFlows<<3 | 1
	if term {
		return binary.LittleEndian.AppendUint64(append(b, termFlow&0x7f|0x80, termFlow>>7), id)
	}
	return binary.LittleEndian.AppendUint64(append(b, flow&0x7f|0x80, flow>>7), id)
}

// cutChunk makes b, which holds whole packets, the compression chunk and
// compresses it when it is full; it returns the chunk to go on with.
func (w *Writer) cutChunk(b []byte) []byte {
	w.chunk = b
	w.flushChunk()
	return w.chunk
}

// uv56 returns v (below 2^56) as varint bytes, little-endian in a uint64,
// and their number.
func uv56(v uint64) (uint64, int) {
	n := (bits.Len64(v|1) + 6) / 7
	return spread7(v) | 0x8080808080808080>>(8*(9-n)), n
}
