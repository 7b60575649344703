package iket

import "testing"

func BenchmarkPackArgs(b *testing.B) {
	args := []Arg{Ptr(0x7f0000001000), Ptr(0x7f0000002000), U32(7), F32(1.5), U64(1 << 40)}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := packArgs(args); err != nil {
			b.Fatal(err)
		}
	}
}
