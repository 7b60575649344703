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

// TestTimestampDelta encodes timestamps that step forward, stay, and
// step back by every magnitude, and compares each with protowire's varint
// of the difference from the previous one.
func TestTimestampDelta(t *testing.T) {
	var c tsDelta
	vals := []int64{0, 0, 1, 128, 16511, 16512, 1_700_000_000_000_000_000, 1_700_000_000_000_000_100, 5, 1<<63 - 1, 0}
	for _, v := range varintVals() {
		vals = append(vals, int64(v>>1))
	}
	prev := int64(0)
	for i, v := range vals {
		q := make([]byte, 32)
		k := c.put(q, 2, v)
		if want := protowire.AppendVarint(nil, uint64(v-prev)); !bytes.Equal(q[2:k], want) {
			t.Errorf("value %d: put(%d) after %d = %x, want %x", i, v, prev, q[2:k], want)
		}
		prev = v
	}
}
