package emu

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/iket-trace/iket/trace"
)

// Reseal rewrites the capture in data through trace.WriteCapture, so that
// bytes a test changed in its warp buffers carry fresh checksums and reach
// the decoder instead of failing the checksum. The metadata is taken as it
// is; the result is a new slice.
func Reseal(data []byte) ([]byte, error) {
	if len(data) < 24 {
		return nil, fmt.Errorf("reseal: %d bytes, not a capture", len(data))
	}
	mlen := binary.LittleEndian.Uint64(data[16:])
	if mlen > uint64(len(data)-24) {
		return nil, fmt.Errorf("reseal: metadata length %d past the end", mlen)
	}
	var meta trace.Meta
	if err := json.Unmarshal(data[24:24+mlen], &meta); err != nil {
		return nil, fmt.Errorf("reseal: %w", err)
	}
	bufs := make([]io.Reader, len(meta.Launches))
	for i := range meta.Launches {
		l := &meta.Launches[i]
		if l.Offset < 0 || l.Offset+l.Size() > int64(len(data)) {
			return nil, fmt.Errorf("reseal: launch %d past the end", i)
		}
		bufs[i] = bytes.NewReader(data[l.Offset : l.Offset+l.Size()])
	}
	var b bytes.Buffer
	if err := trace.WriteCapture(&b, &meta, bufs); err != nil {
		return nil, fmt.Errorf("reseal: %w", err)
	}
	return b.Bytes(), nil
}

// ReadResealed is [Read] of [Reseal]'s result.
func ReadResealed(data []byte) (*trace.Capture, error) {
	b, err := Reseal(data)
	if err != nil {
		return nil, err
	}
	return Read(b)
}

// Damage captures l, lets patch change the capture's bytes (m is launch
// 0's metadata, whose Offset and Stride place the warp slots), and reads the
// result back resealed: a capture damaged where the test says, with fresh
// checksums.
func Damage(l *Launch, patch func(b []byte, m *trace.LaunchMeta)) (*trace.Capture, error) {
	b, err := Capture(l)
	if err != nil {
		return nil, err
	}
	c, err := Read(b)
	if err != nil {
		return nil, err
	}
	patch(b, c.Launch(0).Meta)
	return ReadResealed(b)
}

// RawCapture lays out a file version 3 capture from its parts as given,
// checked by nothing: meta is the metadata's bytes, data the warp buffers
// that follow its padding, and the checksum table covers the header, the
// metadata and slots warp slots of stride bytes (a prefix of data; what is
// left of data is junk after the buffers, before the table). It exists to
// build hostile inputs for tests of the reader; iket writes captures only
// through trace.WriteCapture.
func RawCapture(format uint32, meta, data []byte, slots uint64, stride int64) []byte {
	le := binary.LittleEndian
	b := make([]byte, 24, 24+len(meta)+8+len(data))
	copy(b, trace.Magic)
	le.PutUint32(b[8:], trace.FileVersion)
	le.PutUint32(b[12:], format)
	le.PutUint64(b[16:], uint64(len(meta)))
	b = append(b, meta...)
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	crc := func(p []byte) uint32 { return crc32.Checksum(p, crc32.MakeTable(crc32.Castagnoli)) }
	sums := []uint32{crc(b[:24]), crc(b[24:])}
	start := len(b)
	b = append(b, data...)
	for k := uint64(0); k < slots && int64(k+1)*stride <= int64(len(data)); k++ {
		off := int64(start) + int64(k)*stride
		sums = append(sums, crc(b[off:off+stride]))
	}
	t := len(b)
	b = append(b, "IKETSUM\x00"...)
	b = le.AppendUint64(b, uint64(len(sums)))
	for _, s := range sums {
		b = le.AppendUint32(b, s)
	}
	return le.AppendUint32(b, crc(b[t:]))
}
