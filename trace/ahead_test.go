package trace

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// shortReader serves data up to n bytes and fails every read past it.
type shortReader struct {
	data []byte
	n    int64
	err  error
}

func (s shortReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= s.n {
		return 0, s.err
	}
	k := copy(p, s.data[off:min(s.n, int64(len(s.data)))])
	if int64(k) < int64(len(p)) {
		return k, s.err
	}
	return k, nil
}

// TestAheadReads: every read through the read-ahead block returns what a
// direct read returns, bytes and error, in order and out of order, across
// block boundaries, past the launch's end and on an input cut short.
func TestAheadReads(t *testing.T) {
	data := make([]byte, 3*aheadSize+1000)
	for i := range data {
		data[i] = byte(i*7 + i>>9)
	}
	cut := errors.New("device error")
	type read struct {
		off int64
		n   int
	}
	seq := []read{{0, 64}, {64, 136}, {200, 8}, {aheadSize - 40, 64}, {aheadSize + 24, 8}, {10, 64},
		{2 * aheadSize, aheadSize/4 + 8}, {3*aheadSize + 900, 100}, {3*aheadSize + 950, 100}}
	for _, tt := range []struct {
		name string
		r    io.ReaderAt
		max  int64
		end  int64
	}{
		{"whole", bytes.NewReader(data), aheadSize, int64(len(data))},
		{"launch ends early", bytes.NewReader(data), aheadSize, 2*aheadSize + 100},
		{"block smaller than a read", bytes.NewReader(data), 100, int64(len(data))},
		{"input cut short", shortReader{data, aheadSize + 300, cut}, aheadSize, int64(len(data))},
		{"input cut, EOF", shortReader{data, 2*aheadSize - 7, io.EOF}, aheadSize, int64(len(data))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := ahead{r: tt.r, max: tt.max, end: tt.end}
			for _, rd := range seq {
				got, want := make([]byte, rd.n), make([]byte, rd.n)
				gerr := a.readAt(got, rd.off)
				werr := readAt(tt.r, want, rd.off)
				if (gerr == nil) != (werr == nil) || (werr != nil && !errors.Is(gerr, werr)) {
					t.Errorf("read %d bytes at %d: error %v, want %v", rd.n, rd.off, gerr, werr)
				}
				if gerr == nil && !bytes.Equal(got, want) {
					t.Errorf("read %d bytes at %d: bytes differ from a direct read", rd.n, rd.off)
				}
			}
		})
	}
}
