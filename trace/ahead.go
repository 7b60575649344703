package trace

import "io"

// aheadSize is the block a Decoder reads ahead of its per-warp reads.
const aheadSize = 256 << 10

// ahead serves a Decoder's per-warp reads (headers, records, tail words)
// from one block of the launch's bytes, read from where the first read that
// misses it starts up to aheadSize further (not past the launch's end). A
// pass goes through the slots in order, so a launch of small warps costs one
// read per block instead of two per warp. Reads larger than a quarter block
// go straight to the reader. The block is no larger than the launch.
type ahead struct {
	r   io.ReaderAt
	max int64  // the block's size: aheadSize, or the launch's when smaller
	end int64  // the launch's end offset
	off int64  // blk's offset
	blk []byte // the bytes at off
}

// readAt fills b from off, as the package's readAt does with the reader.
func (a *ahead) readAt(b []byte, off int64) error {
	if off >= a.off && off+int64(len(b)) <= a.off+int64(len(a.blk)) {
		copy(b, a.blk[off-a.off:])
		return nil
	}
	if len(b) > aheadSize/4 || off < 0 || off+int64(len(b)) > a.end {
		return readAt(a.r, b, off)
	}
	if int64(cap(a.blk)) < a.max {
		a.blk = make([]byte, a.max)
	}
	n, _ := a.r.ReadAt(a.blk[:min(a.max, a.end-off)], off)
	if n < len(b) {
		// Not even the bytes asked for: read them alone, for the error a
		// direct read gives.
		a.blk = a.blk[:0]
		return readAt(a.r, b, off)
	}
	a.off, a.blk = off, a.blk[:n]
	copy(b, a.blk)
	return nil
}
