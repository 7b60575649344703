package trace

import (
	"bytes"
	"fmt"
	"io"

	"github.com/iket-trace/iket/internal/raw"
)

// Shrink returns the warp buffers of a record format 3 stop-mode launch
// with as many records per warp as its fullest warp used, when every warp
// that ran finished with all its events stored: lane 0's records, then the side
// records, moved down to the new last slots, then the tail word, as a
// launch of that capacity would have them. Every byte it leaves out is
// zero, so a reader reads the same records, drops (none) and violations.
// It sets m.Capacity to the new capacity and m.RanCapacity to the one the
// launch ran with. Any other launch (wrap mode, a warp unfinished,
// saturated, with drops or with bytes where no record may be), or buffers
// not m.Size() bytes long, are returned as they are (b) and m is left as it
// was. b is read twice.
func Shrink(format int, m *LaunchMeta, b Buffers) (io.Reader, error) {
	if format != 3 || m.Mode != ModeStop || m.RanCapacity != 0 || b.Size() != m.Size() {
		return b, nil
	}
	used, ok, err := shrinkable(m, b)
	if err != nil || !ok || used >= m.Capacity {
		return b, err
	}
	s := &shrunk{r: b, warps: m.Warps, from: m.Capacity, to: max(used, 1)}
	m.RanCapacity = m.Capacity
	m.Capacity = s.to
	return s, nil
}

// Buffers are a launch's warp buffers as read from the device: a
// *bytes.Reader or an *io.SectionReader.
type Buffers interface {
	io.Reader
	io.ReaderAt
	Size() int64
}

// shrinkable reports whether every warp of m fits in its first records and
// last ones as Shrink says, and the most records a warp used.
func shrinkable(m *LaunchMeta, r io.ReaderAt) (uint32, bool, error) {
	capa := int64(m.Capacity)
	stride := m.Stride()
	buf := make([]byte, stride)
	var used uint32
	tail := raw.TailOffset(m.Capacity)
	var h raw.WarpHeader
	for i := range int64(m.Warps) {
		if _, err := r.ReadAt(buf, i*stride); err != nil {
			return 0, false, fmt.Errorf("shrink %s: warp slot %d: %w", m.Kernel, i, err)
		}
		raw.DecodeWarpHeader(buf, &h)
		side, lanes := raw.DecodeTail(buf[tail:])
		recs := buf[raw.WarpHeaderSize:tail]
		switch {
		case h.Magic == 0 && h.Flags == 0:
			if !zero(buf) {
				return 0, false, nil
			}
			continue
		case !h.Started() || !h.Finished() || h.CountSaturated():
			return 0, false, nil
		case (side == 0) != (lanes == 0) || uint64(h.Count)+uint64(side) > uint64(capa):
			return 0, false, nil
		}
		if !zero(recs[int64(h.Count)*raw.RecordSize : (capa-int64(side))*raw.RecordSize]) {
			return 0, false, nil
		}
		used = max(used, h.Count+side)
	}
	return used, true, nil
}

func zero(b []byte) bool {
	for len(b) > 0 {
		n := min(len(b), len(zeros))
		if !bytes.Equal(b[:n], zeros[:n]) {
			return false
		}
		b = b[n:]
	}
	return true
}

var zeros = make([]byte, 4096)

// shrunk reads a launch's warp buffers from r (capacity from) as buffers
// of capacity to, one warp slot at a time.
type shrunk struct {
	r        io.ReaderAt
	warps    uint64
	from, to uint32
	next     uint64 // the next warp slot to lay out
	out      []byte // what is left of the slot laid out last
	in, slot []byte // a slot as read, and as laid out
}

func (s *shrunk) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(s.out) == 0 {
			if s.next == s.warps {
				if n == 0 {
					return 0, io.EOF
				}
				return n, nil
			}
			if err := s.layout(); err != nil {
				return n, err
			}
		}
		c := copy(p[n:], s.out)
		s.out = s.out[c:]
		n += c
	}
	return n, nil
}

// layout makes warp slot s.next's bytes at the new capacity.
func (s *shrunk) layout() error {
	fromStride, toStride := raw.Stride(s.from), raw.Stride(s.to)
	if s.in == nil {
		s.in, s.slot = make([]byte, fromStride), make([]byte, toStride)
	}
	if _, err := s.r.ReadAt(s.in, int64(s.next)*fromStride); err != nil {
		return fmt.Errorf("shrink: warp slot %d: %w", s.next, err)
	}
	out := s.slot
	clear(out)
	var h raw.WarpHeader
	raw.DecodeWarpHeader(s.in, &h)
	fromTail, toTail := raw.TailOffset(s.from), raw.TailOffset(s.to)
	n, _ := raw.DecodeTail(s.in[fromTail:])
	side := int64(n)
	if int64(h.Count)+side > int64(s.to) {
		return fmt.Errorf("shrink: warp slot %d holds %d records and %d side records now, more than the %d it was measured to fit", s.next, h.Count, side, s.to)
	}
	main := raw.WarpHeaderSize + int64(h.Count)*raw.RecordSize
	copy(out, s.in[:main])
	copy(out[toTail-side*raw.RecordSize:], s.in[fromTail-side*raw.RecordSize:])
	s.out = out
	s.next++
	return nil
}
