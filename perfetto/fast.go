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
	flags  [16]byte // trusted_packet_sequence_id and sequence_flags = NEEDS_INCREMENTAL_STATE
	flagsN uint8
	annots [48]byte // the sm, cta and warp debug annotations
	annotN uint8
	lanes  []laneTemplate // per local track: 0 = warp, 1+l = async lane l
}

// laneTemplate is what the events of one local track share.
type laneTemplate struct {
	// te starts a TrackEvent: its tag, a length byte (patched), the type
	// tag and a type byte (patched), and track_uuid.
	te  [32]byte
	teN uint8
	// end is a whole slice end after the timestamp: the sequence id and a
	// TrackEvent {type: SLICE_END, track_uuid}.
	end  [32]byte
	endN uint8
}

func (t *warpTemplate) set(seq uint32, in *warpInfo, warpTrack uint64, lanes []uint64) {
	var sf [16]byte
	seqF := appendVarintField(sf[:0], fPktSequenceID, uint64(seq))
	t.flagsN = uint8(copy(t.flags[:], appendVarintField(seqF, fPktSequenceFlags, seqNeedsIncremental)))
	an := appendAnnotUint(t.annots[:0], daSM, uint64(in.sm))
	an = appendAnnotUint(an, daCTA, in.ctaLinear)
	an = appendAnnotUint(an, daWarp, uint64(in.warp))
	t.annotN = uint8(len(an))
	n := len(lanes) + 1
	t.lanes = slices.Grow(t.lanes[:0], n)[:n]
	var sc [32]byte
	for i := range n {
		id := warpTrack
		if i > 0 {
			id = lanes[i-1]
		}
		tr := appendVarintField(sc[:0], fTETrackUUID, id)
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

// tsCache holds the varint bytes of a timestamp's bits from 28 up: events
// of a warp are close in time, so their timestamps differ in the low four
// 7-bit groups only, and those are spread with a few shifts.
type tsCache struct {
	hi  uint64 // v >> 28 of the cached encoding; MaxUint64 when none
	enc uint64 // its varint bytes, little-endian
	n   int    // their number (at most 6)
}

// put stores timestamp v as a varint at q[k:]; q must have 12 bytes from k
// on.
func (c *tsCache) put(q []byte, k int, v uint64) int {
	if v>>28 == c.hi {
		x := uint32(v) & (1<<28 - 1)
		binary.LittleEndian.PutUint32(q[k:k+4], x&0x7f|(x<<1)&0x7f00|(x<<2)&0x7f0000|(x<<3)&0x7f000000|0x80808080)
		binary.LittleEndian.PutUint64(q[k+4:k+12], c.enc)
		return k + 4 + c.n
	}
	return c.miss(q, k, v)
}

func (c *tsCache) miss(q []byte, k int, v uint64) int {
	if v >= 1<<28 {
		var s [16]byte
		c.hi = v >> 28
		c.n = putUv(s[:], 0, c.hi)
		c.enc = binary.LittleEndian.Uint64(s[:8])
	}
	return putUv(q, k, v)
}
