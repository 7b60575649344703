package perfetto

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// varintVals are values around every varint length boundary plus random
// ones of every magnitude.
func varintVals() []uint64 {
	vals := []uint64{0, 1, 127, 128, 300, 16383, 16384, 1<<21 - 1, 1 << 21, 1<<28 - 1, 1 << 28, 1<<49 - 1, 1 << 49,
		1<<56 - 1, 1 << 56, 1<<63 - 1, 1 << 63, math.MaxUint64, 1_700_000_000_123_456_789}
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		vals = append(vals, r.Uint64()>>r.IntN(64))
	}
	return vals
}

func TestPutUv(t *testing.T) {
	for _, v := range varintVals() {
		q := make([]byte, 32)
		k := putUv(q, 3, v)
		if want := protowire.AppendVarint(nil, v); !bytes.Equal(q[3:k], want) {
			t.Errorf("putUv(%d) = %x, want %x", v, q[3:k], want)
		}
	}
}

func TestPutAnnot(t *testing.T) {
	for _, v := range varintVals() {
		q := make([]byte, 32)
		k := putAnnot(q, 1, daCycles, v)
		if want := appendAnnotUint(nil, daCycles, v); !bytes.Equal(q[1:k], want) {
			t.Errorf("putAnnot(%d) = %x, want %x", v, q[1:k], want)
		}
	}
}

// TestTimestampCache encodes timestamps that step around, across and far
// from the cached high bits, in that order, and compares each with
// protowire.
func TestTimestampCache(t *testing.T) {
	c := tsCache{hi: math.MaxUint64}
	var vals []uint64
	for _, base := range []uint64{1_700_000_000_000_000_000, 1<<28 - 50, 5, 1<<63 - 100, 1 << 40, 1_700_000_000_000_000_000} {
		for _, d := range []uint64{0, 1, 40, 127, 128, 1<<28 - 1, 1 << 28, 99, 1 << 35, 3} {
			vals = append(vals, base+d)
		}
	}
	vals = append(vals, varintVals()...)
	for i, v := range vals {
		q := make([]byte, 32)
		k := c.put(q, 2, v)
		if want := protowire.AppendVarint(nil, v); !bytes.Equal(q[2:k], want) {
			t.Errorf("value %d: put(%d) = %x, want %x", i, v, q[2:k], want)
		}
	}
}
