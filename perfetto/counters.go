package perfetto

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// keyRunning is the summary key of "warps running" (between their start and
// end anchors); other keys are role<<16 | range name.
const keyRunning = math.MaxUint32

// roleShared marks a range name used by warps of several roles.
const roleShared = math.MaxUint16

// ctaCounters writes, with Options.Counters, the CTA's counter tracks: for
// each (role, range name), how many of the CTA's warps of that role are
// inside a range of that name (a warp inside nested ranges of one name
// counts once); and, when warps dropped events, the cumulative dropped
// events. Unless Options.NoSummary, it feeds the launch summary from the
// same counts.
func (w *Writer) ctaCounters(ctaID, ctaSlot uint64) {
	write := w.opt.Counters
	c := &w.cta
	c.drops = c.drops[:0]
	c.keys = c.keys[:0] // the CTA's keys in order of appearance; n = index
	var tmin int64 = math.MaxInt64
	for i := range c.warps {
		cw := &c.warps[i]
		for j := cw.r0; j < cw.r1; j++ {
			tmin = min(tmin, c.ranges[j].Start)
		}
	}
	for i := range c.warps {
		cw := &c.warps[i]
		in := &cw.info
		w.sum.add(keyRunning, in.first, in.last, 1)
		if in.dropped > 0 {
			t := in.first
			if w.lm.Mode != "wrap" && in.hasEv {
				t = in.lastEv
			}
			c.drops = append(c.drops, delta{t: t, d: int64(in.dropped)})
		}
		// The warp's ranges are sorted by start: the union of each key's
		// intervals comes out in one pass, in time order. c.open holds, per
		// key index, the current union's end (or minInt64 when none is
		// open).
		c.open = c.open[:0]
		for j := cw.r0; j < cw.r1; j++ {
			r := &c.ranges[j]
			ki := c.keyIndex(uint32(in.role)<<16 | uint32(r.Name))
			for len(c.open) <= ki {
				c.open = append(c.open, openUnion{end: math.MinInt64})
			}
			o := &c.open[ki]
			end := max(r.End, r.Start)
			if o.end != math.MinInt64 && r.Start <= o.end {
				o.end = max(o.end, end)
				continue
			}
			if o.end != math.MinInt64 {
				c.emitUnion(ki, i, o.start, o.end, tmin)
			}
			o.start, o.end = r.Start, end
		}
		for ki := range c.open {
			if o := &c.open[ki]; o.end != math.MinInt64 {
				c.emitUnion(ki, i, o.start, o.end, tmin)
			}
		}
	}
	if c.packedOverflow {
		// The CTA's warps are written; its counters, and its ranges' part
		// of the launch summary, are not, and the launch track says so.
		c.packedOverflow = false
		what := "its part of the launch summary"
		if write {
			what = "its counters and " + what
		}
		w.AddProblem(fmt.Sprintf("CTA %d: %s left out: more than %d range keys (role and range name) or a span over %d ns", c.linear, what, maxPackedKeys, int64(1)<<packedTimeBits))
		return
	}
	// Tracks in key order (role, then name id), the same in every CTA.
	for i := range c.keys {
		c.keys[i].n = int64(i)
	}
	slices.SortFunc(c.keys, func(a, b keyCount) int { return cmp.Compare(a.key, b.key) })
	rank := int32(-1000)
	for si := range c.keys {
		key := c.keys[si].key
		ts := c.mergeRuns(int(c.keys[si].n))
		if len(ts) == 0 {
			continue
		}
		var ct counterTmpl
		if write {
			id := w.slotTrack(ctaSlot, subCounter+uint64(si)) // si < maxPackedKeys
			w.sc = appendKeyName(w.sc[:0], w.lm, key)
			w.track(id, ctaID, rank, true, false, true, w.sc, "")
			rank++
			ct = w.counterTemplate(id)
		}
		w.counterSteps(&ct, key, ts, tmin, write)
	}
	if len(c.drops) > 0 && write {
		slices.SortFunc(c.drops, cmpDeltaTime)
		id := w.slotTrack(ctaSlot, subDrops)
		w.track(id, ctaID, -2000, true, false, true, []byte("dropped events"), "cumulative events the CTA's warps attempted but did not store")
		ct := w.counterTemplate(id)
		var total int64
		for k := 0; k < len(c.drops); {
			t := c.drops[k].t
			for k < len(c.drops) && c.drops[k].t == t {
				total += c.drops[k].d
				k++
			}
			w.counter(&ct, t, total)
		}
	}
}

// counterSteps writes the samples of one CTA counter track from its sorted
// transitions ts ((time - tmin) << 1 | begin): at each distinct time, the
// count after all the transitions at that time. It feeds the launch
// summary (when the launch keeps one) and, unless write is false, writes
// nothing else. The packets are those of [Writer.counter], encoded with the
// buffer and the incremental clock's state in locals.
func (w *Writer) counterSteps(ct *counterTmpl, key uint32, ts []uint64, tmin int64, write bool) {
	b, flushAt := w.buf, defaultFlushBytes
	if w.opt.Compress {
		b, flushAt = w.chunk, defaultCompressChunk
	}
	tc := w.ts
	sw := w.sum.walk(key)
	var v, prevT int64
	for k := 0; k < len(ts); {
		rel := ts[k] >> 1
		t := tmin + int64(rel)
		if v != 0 {
			if sw.x != nil && prevT >= sw.lo && prevT >= 0 && t <= sw.lo+sw.width {
				sw.x[sw.i] += float64(v) * float64(t-prevT) // within the walk's bin
			} else {
				sw.add(prevT, t, float64(v))
			}
		}
		for k < len(ts) && ts[k]>>1 == rel {
			v += int64(ts[k]&1)*2 - 1
			k++
		}
		prevT = t
		if !write {
			continue
		}
		if cap(b)-len(b) < packetSlack {
			b = slices.Grow(b, packetSlack)
		}
		p0 := len(b)
		q := b[:p0+packetSlack]
		q[p0] = byte(fTracePacket<<3 | 2)
		q[p0+2] = byte(fPktTimestamp << 3)
		i := tc.put(q, p0+3, t)
		*(*[32]byte)(q[i : i+32]) = ct.b
		te := i + int(ct.lenAt)
		i = putUv(q, i+int(ct.n), uint64(v))
		q[te] = byte(i - te - 1)
		q[p0+1] = byte(i - p0 - 2)
		b = q[:i]
		w.stats.CounterEvents++
		if len(b) >= flushAt { // where commit flushes
			w.ts = tc
			w.commit(b)
			b = w.buf
			if w.opt.Compress {
				b = w.chunk
			}
		}
	}
	w.ts = tc
	if w.opt.Compress {
		w.chunk = b
	} else {
		w.buf = b
	}
}

// Counter transitions are integers, (time since the CTA's first range) << 1
// | begin, so that integer order is time order with ends before begins;
// times must fit packedTimeBits. A CTA has at most maxPackedKeys keys (the
// counter tracks' uuids number them in 10 bits).
const (
	packedTimeBits = 52
	maxPackedKeys  = 1 << 10
)

type openUnion struct{ start, end int64 }

// keyTrans holds one key's transitions in the CTA: one run per warp that
// has the key, each sorted by time.
type keyTrans struct {
	t    []uint64
	runs []int32 // start of each run in t
	warp int     // warp of the last run
}

func (c *ctaBuf) keyIndex(key uint32) int {
	for i := range c.keys {
		if c.keys[i].key == key {
			return i
		}
	}
	c.keys = append(c.keys, keyCount{key: key})
	ki := len(c.keys) - 1
	if ki == len(c.kts) {
		c.kts = append(c.kts, keyTrans{})
	}
	kt := &c.kts[ki]
	kt.t, kt.runs, kt.warp = kt.t[:0], kt.runs[:0], -1
	return ki
}

// emitUnion adds warp's +1 at start and -1 at end for key index ki.
func (c *ctaBuf) emitUnion(ki, warp int, start, end, tmin int64) {
	rs, re := start-tmin, end-tmin
	if ki >= maxPackedKeys || rs < 0 || re >= 1<<packedTimeBits {
		c.packedOverflow = true
		return
	}
	kt := &c.kts[ki]
	if kt.warp != warp {
		kt.warp = warp
		kt.runs = append(kt.runs, int32(len(kt.t)))
	}
	kt.t = append(kt.t, uint64(rs)<<1|1, uint64(re)<<1)
}

// mergeRuns merges key index ki's runs (bottom-up, in pairs) and returns
// its transitions sorted.
func (c *ctaBuf) mergeRuns(ki int) []uint64 {
	kt := &c.kts[ki]
	for len(kt.runs) > 1 {
		src := kt.t
		dst := slices.Grow(c.mergeTmp[:0], len(src))[:len(src)]
		n := 0
		for i := 0; i < len(kt.runs); i += 2 {
			a0 := int(kt.runs[i])
			a1, b1 := len(src), len(src)
			if i+1 < len(kt.runs) {
				a1 = int(kt.runs[i+1])
				if i+2 < len(kt.runs) {
					b1 = int(kt.runs[i+2])
				}
			}
			merge2(dst[a0:b1], src[a0:a1], src[a1:b1])
			kt.runs[n] = int32(a0)
			n++
		}
		kt.runs = kt.runs[:n]
		kt.t, c.mergeTmp = dst, src
	}
	return kt.t
}

// merge2 merges the sorted slices a and b into dst (len(a)+len(b) long).
func merge2(dst, a, b []uint64) {
	dst = dst[:len(a)+len(b)]
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		x, y := a[i], b[j]
		if x <= y {
			dst[k] = x
			i++
		} else {
			dst[k] = y
			j++
		}
		k++
	}
	k += copy(dst[k:], a[i:])
	copy(dst[k:], b[j:])
}

func appendKeyName(b []byte, lm interface{ NameText(uint16) string }, key uint32) []byte {
	if key == keyRunning {
		return append(b, "warps running"...)
	}
	role, name := uint16(key>>16), uint16(key)
	if role == 0 {
		b = append(b, "warps"...)
	} else {
		b = append(b, lm.NameText(role)...)
	}
	b = append(b, " in "...)
	if name == 0 {
		return append(b, "(unnamed)"...)
	}
	return append(b, lm.NameText(name)...)
}

// counterTmpl is what the samples of one counter track share after their
// timestamp: the sequence id and the TrackEvent up to the counter_value
// tag (type COUNTER, track_uuid), at most 22 bytes.
type counterTmpl struct {
	b     [32]byte
	n     uint8 // bytes used
	lenAt uint8 // index of the TrackEvent's length byte
}

func (w *Writer) counterTemplate(track uint64) counterTmpl {
	var t counterTmpl
	b := append(t.b[:0], w.seqField...)
	t.lenAt = uint8(len(b) + 1)
	b = append(b, byte(fPktTrackEvent<<3|2), 0, byte(fTEType<<3), typeCounter, byte(fTETrackUUID<<3))
	b = protowire.AppendVarint(b, track)
	b = append(b, byte(fTECounterValue<<3&0x7f|0x80), byte(fTECounterValue>>4))
	t.n = uint8(copy(t.b[:], b))
	return t
}

// counter writes one integer counter sample on the track of template ct,
// into the window past the output buffer's end (see writeEvent): the
// packet is at most 2 + 11 + 22 + 10 bytes, so its lengths take one byte.
func (w *Writer) counter(ct *counterTmpl, t int64, v int64) {
	b := w.buf
	if w.opt.Compress {
		b = w.chunk
	}
	b = grow(b, packetSlack)
	p0 := len(b)
	q := b[:p0+packetSlack]
	q[p0] = byte(fTracePacket<<3 | 2)
	q[p0+2] = byte(fPktTimestamp << 3)
	k := w.ts.put(q, p0+3, t)
	*(*[32]byte)(q[k : k+32]) = ct.b
	te := k + int(ct.lenAt)
	k = putUv(q, k+int(ct.n), uint64(v))
	q[te] = byte(k - te - 1)
	q[p0+1] = byte(k - p0 - 2)
	w.stats.CounterEvents++
	w.commit(q[:k])
}

// doubleCounter writes one floating-point counter sample: a whole number
// from 0 to 2^53 as counter_value (a varint, one byte for most), any other
// as double_counter_value (eight bytes). The trace processor reads both into
// the track's double values.
func (w *Writer) doubleCounter(track uint64, t int64, v float64) {
	b := w.packetHead(w.pk[:0], t)
	var at int
	b, at = openLen(b, fPktTrackEvent)
	b = appendVarintField(b, fTEType, typeCounter)
	b = appendVarintField(b, fTETrackUUID, track)
	if v >= 0 && v <= 1<<53 && v == math.Trunc(v) {
		b = appendVarintField(b, fTECounterValue, uint64(v))
	} else {
		b = appendDoubleField(b, fTEDoubleCounter, v)
	}
	w.pk = closeLen(b, at)
	w.emitPacket()
	w.stats.CounterEvents++
}
