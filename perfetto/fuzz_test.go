package perfetto

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/iket-trace/iket/trace"
)

// FuzzWriter builds warps from arbitrary bytes (ranges in any order, with
// any times, depths, lanes and flags) and checks that the writer never
// panics and always writes a trace CheckValid accepts.
func FuzzWriter(f *testing.F) {
	f.Add([]byte{1, 0, 10, 0, 20, 0, 0, 0, 2, 1, 15, 0, 5, 1, 1, 3})
	f.Add(bytes.Repeat([]byte{3, 1, 0, 200, 7, 9, 2, 1}, 20))
	f.Fuzz(func(t *testing.T, data []byte) {
		meta := testMeta()
		ws := testWarps()[:2]
		for i := range ws {
			ws[i].Ranges, ws[i].Marks = nil, nil
		}
		for len(data) >= 8 {
			wi := int(data[0] & 1)
			start := int64(binary.LittleEndian.Uint16(data[2:])) - 100
			r := trace.Range{
				Name: uint16(data[1] % 10), Payload: uint16(data[7] % 3),
				Start: t0 + start, End: t0 + start + int64(int8(data[4]))*3,
				Depth: int32(int8(data[5])) % 8, Async: data[6]&1 != 0, Lane: int32(data[6]>>1) % 5,
				Flags: trace.RangeFlags(data[0]>>1) & 3,
			}
			if data[0]&0x80 != 0 {
				ws[wi].Marks = append(ws[wi].Marks, trace.Mark{Name: nKernelStart, Time: r.Start})
			} else {
				ws[wi].Ranges = append(ws[wi].Ranges, r)
			}
			if data[0]&0x40 != 0 {
				ws[wi].Dropped = uint64(data[3])
			}
			data = data[8:]
		}
		for _, opt := range []Options{{Flows: true, Counters: true}, {}, {RawCycles: true, NoSummary: true}} {
			var buf bytes.Buffer
			w := NewWriter(&buf, opt)
			if err := w.BeginLaunch(meta, 0, &meta.Launches[0], LaunchInfo{}); err != nil {
				t.Fatal(err)
			}
			for i := range ws {
				if err := w.AddWarp(&ws[i]); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if err := CheckValid(bytes.NewReader(buf.Bytes())); err != nil {
				t.Fatalf("CheckValid: %v", err)
			}
		}
	})
}
