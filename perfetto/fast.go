package perfetto

import (
	"encoding/binary"
	"math/bits"
	"slices"
)

// The hot path writes packets straight into the output buffer. Before each
// packet it reserves packetSlack bytes, so the fixed-size parts (varints,
// tags) are stored by index without capacity checks; variable-length parts
// (strings) go through append.
const packetSlack = 256

func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		b = slices.Grow(b, n)
	}
	return b
}

// spread7 places the 7-bit groups of x (below 2^56) in the low 7 bits of
// successive bytes.
func spread7(x uint64) uint64 {
	x = x&0x000000000fffffff | (x&0x00fffffff0000000)<<4
	x = x&0x00003fff00003fff | (x&0x0fffc0000fffc000)<<2
	return x&0x007f007f007f007f | (x&0x3f803f803f803f80)<<1
}

// warpTemplate precomputes the bytes that every event of a warp shares, as
// fixed-size arrays that encodeEvents copies whole (a few register moves, no
// memmove call) before advancing by their real length.
type warpTemplate struct {
	flags  [16]byte // trusted_packet_sequence_id
	flagsN uint8
	lanes  []laneTemplate // per local track: 0 = warp, 1+l = async lane l
}

// laneTemplate is what the events of one local track share.
type laneTemplate struct {
	// te starts a TrackEvent: its tag, a length byte (patched), the type
	// tag and a type byte (patched), and track_uuid on a lane (the warp's
	// events go to the sequence's default track, the warp's).
	te  [32]byte
	teN uint8
	// end is a whole slice end after the timestamp: the sequence id and a
	// TrackEvent {type: SLICE_END, track_uuid on a lane}.
	end  [32]byte
	endN uint8
}

func (t *warpTemplate) set(seq uint32, lanes []uint64) {
	var sf [16]byte
	seqF := appendVarintField(sf[:0], fPktSequenceID, uint64(seq))
	t.flagsN = uint8(copy(t.flags[:], seqF))
	n := len(lanes) + 1
	t.lanes = slices.Grow(t.lanes[:0], n)[:n]
	var sc [32]byte
	for i := range n {
		tr := sc[:0]
		if i > 0 {
			tr = appendVarintField(tr, fTETrackUUID, lanes[i-1])
		}
		l := &t.lanes[i]
		te := append(l.te[:0], byte(fPktTrackEvent<<3|2), 0, byte(fTEType<<3), 0)
		l.teN = uint8(len(append(te, tr...)))
		e := append(l.end[:0], seqF...)
		e = append(e, byte(fPktTrackEvent<<3|2), byte(2+len(tr)), byte(fTEType<<3), typeSliceEnd)
		l.endN = uint8(len(append(e, tr...)))
	}
}

// putUv stores v as a varint at q[k:] and returns the index after it; q
// must have 10 bytes (8 for values below 2^56) from k on.
func putUv(q []byte, k int, v uint64) int {
	if v < 0x80 {
		q[k] = byte(v)
		return k + 1
	}
	return putUvLong(q, k, v)
}

func putUvLong(q []byte, k int, v uint64) int {
	if v < 1<<56 {
		n := (bits.Len64(v) + 6) / 7
		binary.LittleEndian.PutUint64(q[k:k+8], spread7(v)|0x8080808080808080>>(8*(9-n)))
		return k + n
	}
	binary.LittleEndian.PutUint64(q[k:k+8], spread7(v&(1<<56-1))|0x8080808080808080)
	hi := v >> 56
	if hi < 0x80 {
		q[k+8] = byte(hi)
		return k + 9
	}
	q[k+8] = byte(hi) | 0x80
	q[k+9] = byte(hi >> 7)
	return k + 10
}

// putAnnot stores a debug annotation {name_iid: iid (< 128), uint_value: v}
// at q[k:] and returns the index after it; q must have 16 bytes from k on.
// Below 2^56 (payloads, cycle counts) it is two 8-byte stores: the five
// bytes of tags, length and name, then the varint.
func putAnnot(q []byte, k int, iid byte, v uint64) int {
	if v >= 1<<56 {
		return putAnnotLong(q, k, iid, v)
	}
	n := (bits.Len64(v|1) + 6) / 7
	binary.LittleEndian.PutUint64(q[k:k+8], annotHead|uint64(3+n)<<8|uint64(iid)<<24)
	binary.LittleEndian.PutUint64(q[k+5:k+13], spread7(v)|0x8080808080808080>>(8*(9-n)))
	return k + 5 + n
}

// annotHead is a debug annotation's tag, then (after a length byte) the
// name_iid tag, then (after the iid) the uint_value tag.
const annotHead = fTEDebugAnnotations<<3 | 2 | fDANameIID<<3<<16 | fDAUintValue<<3<<32

func putAnnotLong(q []byte, k int, iid byte, v uint64) int {
	q[k] = byte(fTEDebugAnnotations<<3 | 2)
	q[k+2] = byte(fDANameIID << 3)
	q[k+3] = iid
	q[k+4] = byte(fDAUintValue << 3)
	e := putUvLong(q, k+5, v)
	q[k+1] = byte(e - k - 2)
	return e
}

// tsDelta is the state of a sequence's incremental clock: the time of the
// last timestamp written, of which the next one is a delta.
type tsDelta struct{ last int64 }

// delta returns the varint value that writes timestamp v and makes v the
// last one.
func (c *tsDelta) delta(v int64) uint64 {
	d := uint64(v - c.last)
	c.last = v
	return d
}

// put stores timestamp v as a delta varint at q[k:] and returns the index
// after it; q must have 10 bytes from k on. Deltas below 2^14 ns, most of
// a warp's, take one or two bytes; a step back in time takes ten.
func (c *tsDelta) put(q []byte, k int, v int64) int {
	d := uint64(v - c.last)
	c.last = v
	if d < 0x80 {
		q[k] = byte(d)
		return k + 1
	}
	if d < 1<<14 {
		q[k], q[k+1] = byte(d)|0x80, byte(d>>7)
		return k + 2
	}
	return putUvLong(q, k, d)
}
