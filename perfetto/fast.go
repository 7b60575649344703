package perfetto

import (
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

// putVarint appends v; b must have 10 bytes of spare capacity.
func putVarint(b []byte, v uint64) []byte {
	i := len(b)
	b = b[:i+10]
	for v >= 0x80 {
		b[i] = byte(v) | 0x80
		v >>= 7
		i++
	}
	b[i] = byte(v)
	return b[:i+1]
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
	t.tracks[0] = appendVarintField(t.tracks[0][:0], fTETrackUUID, warpTrack)
	for i, id := range lanes {
		t.tracks[i+1] = appendVarintField(t.tracks[i+1][:0], fTETrackUUID, id)
	}
}
