package trace

import (
	"encoding/binary"
	"fmt"

	"github.com/iket-trace/iket/internal/raw"
)

// A capture's size bounds what decoding it costs only if a warp's claimed
// count cannot make the decoder allocate for records that are not there: a
// sparse file can claim 2^27 records a warp and hold only zeros. Spans
// longer than scanChunk records are therefore scanned a chunk at a time
// before they are read whole, and a run of zeroRun all-zero records in the
// span of a finished warp marks its buffer as damaged: a written record is
// zero only by the rare coincidence docs/FORMAT.md section 4 describes, and
// zeroRun of them in a row do not happen.
const (
	scanChunk = 1 << 16
	zeroRun   = 4096
)

// spanScan is what a scan of a ring span found.
type spanScan struct {
	firstZero int // index in the span of the first all-zero record, or the span's length
	beyond    int // non-zero records after firstZero
	run       int // index in the span where a run of zeroRun zeros starts, -1 if none
}

// scanSpan reads n records of slot's ring from record index first,
// wrapping at the capacity, scanChunk records at a time, into a buffer of
// that size.
func (d *Decoder) scanSpan(slot uint64, first, n uint32) (spanScan, *WarpError) {
	s := spanScan{firstZero: int(n), run: -1}
	if cap(d.scan) < scanChunk*raw.RecordSize {
		d.scan = make([]byte, scanChunk*raw.RecordSize)
	}
	base := d.meta.Offset + int64(slot)*d.stride + raw.WarpHeaderSize
	zeros := 0
	for i := uint32(0); i < n; {
		idx := (first + i) % d.meta.Capacity
		k := min(n-i, d.meta.Capacity-idx, scanChunk)
		b := d.scan[:int(k)*raw.RecordSize]
		off := base + int64(idx)*raw.RecordSize
		if err := d.ra.readAt(b, off); err != nil {
			return s, &WarpError{Launch: d.l.Index, Slot: slot, Offset: off, Msg: "read records", Err: err}
		}
		for j := 0; j < int(k); j++ {
			at := int(i) + j
			if binary.LittleEndian.Uint64(b[j*raw.RecordSize:]) != 0 {
				zeros = 0
				if at > s.firstZero {
					s.beyond++
				}
				continue
			}
			if at < s.firstZero {
				s.firstZero = at
			}
			if zeros++; zeros == zeroRun && s.run < 0 {
				s.run = at - zeroRun + 1
			}
		}
		i += k
	}
	return s, nil
}

// damaged returns the WarpError of a finished warp whose span holds a run
// of unwritten records.
func (d *Decoder) damaged(slot uint64, s spanScan, n uint32) *WarpError {
	return &WarpError{Launch: d.l.Index, Slot: slot, Offset: d.meta.Offset + int64(slot)*d.stride,
		Msg: fmt.Sprintf("records %d to %d of the %d the finished warp stored are all zero (unwritten): the buffer is damaged; the warp is not decoded", s.run, s.run+zeroRun-1, n)}
}
