package perfetto

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func TestPutVarint(t *testing.T) {
	vals := []uint64{0, 1, 127, 128, 300, 16383, 16384, 1<<21 - 1, 1 << 21, 1<<49 - 1, 1 << 49, 1<<56 - 1, 1 << 56,
		1<<63 - 1, 1 << 63, math.MaxUint64, 1_700_000_000_123_456_789}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		vals = append(vals, r.Uint64()>>r.IntN(64))
	}
	for _, v := range vals {
		got := putVarint(make([]byte, 3, 16), v)[3:]
		if want := protowire.AppendVarint(nil, v); !bytes.Equal(got, want) {
			t.Errorf("putVarint(%d) = %x, want %x", v, got, want)
		}
	}
}

func TestPutAnnotUint(t *testing.T) {
	for _, v := range []uint64{0, 200, 1 << 40, math.MaxUint64} {
		got := putAnnotUint(make([]byte, 0, 32), daCycles, v)
		if want := appendAnnotUint(nil, daCycles, v); !bytes.Equal(got, want) {
			t.Errorf("putAnnotUint(%d) = %x, want %x", v, got, want)
		}
	}
}
