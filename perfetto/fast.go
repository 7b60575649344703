package perfetto

import (
	"encoding/binary"
	"math/bits"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
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

// putVarint appends v; b must have 10 bytes of spare capacity. Small values
// take a byte or two; larger ones are spread into 7-bit groups with shifts
// and stored with one 8-byte write (timestamps take 9 bytes, cycles 5-6).
func putVarint(b []byte, v uint64) []byte {
	if v < 0x80 {
		return append(b, byte(v))
	}
	return putVarintLong(b, v)
}

func putVarintLong(b []byte, v uint64) []byte {
	i := len(b)
	if v < 0x4000 {
		return append(b, byte(v)|0x80, byte(v>>7))
	}
	b = b[:i+10]
	d := b[i : i+10 : i+10]
	n := (bits.Len64(v) + 6) / 7
	if n <= 8 {
		y := spread7(v) | 0x8080808080808080>>(8*(9-n))
		binary.LittleEndian.PutUint64(d, y)
		return b[:i+n]
	}
	binary.LittleEndian.PutUint64(d, spread7(v&(1<<56-1))|0x8080808080808080)
	hi := v >> 56
	if hi < 0x80 {
		d[8] = byte(hi)
		return b[:i+9]
	}
	d[8] = byte(hi) | 0x80
	d[9] = byte(hi >> 7)
	return b[:i+10]
}

// spread7 places the 7-bit groups of x (below 2^56) in the low 7 bits of
// successive bytes.
func spread7(x uint64) uint64 {
	x = x&0x000000000fffffff | (x&0x00fffffff0000000)<<4
	x = x&0x00003fff00003fff | (x&0x0fffc0000fffc000)<<2
	return x&0x007f007f007f007f | (x&0x3f803f803f803f80)<<1
}

// putTag appends a field tag below 16 (one byte) with its varint value.
func putVarintField1(b []byte, num protowire.Number, v uint64) []byte {
	b = append(b, byte(num<<3))
	return putVarint(b, v)
}

// putAnnotUint appends a debug annotation {name_iid: iid (< 128), uint_value: v}.
func putAnnotUint(b []byte, iid byte, v uint64) []byte {
	i := len(b)
	b = append(b, byte(fTEDebugAnnotations<<3|2), 0, byte(fDANameIID<<3), iid, byte(fDAUintValue<<3))
	b = putVarint(b, v)
	b[i+1] = byte(len(b) - i - 2)
	return b
}

// openPacket starts a framed Trace.packet in the output (or compression)
// buffer; closePacket ends it.
func (w *Writer) openPacket() ([]byte, int) {
	b := w.buf
	if w.opt.Compress {
		b = w.chunk
	}
	b = grow(b, packetSlack)
	b = append(b, byte(fTracePacket<<3|2), 0)
	return b, len(b) - 1
}

func (w *Writer) closePacket(b []byte, at int) {
	b = closeLen(b, at)
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

// warpTemplate precomputes the bytes that every event of a warp shares: the
// sequence header and the sm, cta and warp annotations.
type warpTemplate struct {
	seq      []byte // trusted_packet_sequence_id
	seqFlags []byte // the same plus sequence_flags = NEEDS_INCREMENTAL_STATE
	annots   []byte
	tracks   [][]byte // track_uuid field per local track
	ends     [][]byte // per local track: sequence id and a whole SLICE_END track event
}

func (t *warpTemplate) set(seq uint32, in *warpInfo, warpTrack uint64, lanes []uint64) {
	t.seq = appendVarintField(t.seq[:0], fPktSequenceID, uint64(seq))
	t.seqFlags = appendVarintField(append(t.seqFlags[:0], t.seq...), fPktSequenceFlags, seqNeedsIncremental)
	t.annots = appendAnnotUint(t.annots[:0], daSM, uint64(in.sm))
	t.annots = appendAnnotUint(t.annots, daCTA, in.ctaLinear)
	t.annots = appendAnnotUint(t.annots, daWarp, uint64(in.warp))
	n := len(lanes) + 1
	for len(t.tracks) < n {
		t.tracks = append(t.tracks, nil)
	}
	for len(t.ends) < n {
		t.ends = append(t.ends, nil)
	}
	for i := range n {
		id := warpTrack
		if i > 0 {
			id = lanes[i-1]
		}
		t.tracks[i] = appendVarintField(t.tracks[i][:0], fTETrackUUID, id)
		e := append(t.ends[i][:0], t.seq...)
		e = append(e, byte(fPktTrackEvent<<3|2), byte(2+len(t.tracks[i])), byte(fTEType<<3), typeSliceEnd)
		t.ends[i] = append(e, t.tracks[i]...)
	}
}
