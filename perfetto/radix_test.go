package perfetto

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSortUint64(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	gen := map[string]func(i int) uint64{
		"random":        func(int) uint64 { return r.Uint64() },
		"packed":        func(int) uint64 { return uint64(r.IntN(5))<<53 | uint64(r.IntN(70000))<<1 | uint64(r.IntN(2)) },
		"sorted":        func(i int) uint64 { return uint64(i) * 3 },
		"reversed":      func(i int) uint64 { return uint64(1000-i) << 40 },
		"one byte":      func(int) uint64 { return 7<<56 | uint64(r.IntN(256))<<16 },
		"all equal":     func(int) uint64 { return 42 },
		"top bit mixes": func(int) uint64 { return uint64(r.IntN(2))<<63 | uint64(r.IntN(4)) },
	}
	var tmp []uint64
	for name, g := range gen {
		for _, n := range []int{0, 1, 2, 63, 64, 65, 1000} {
			ks := make([]uint64, n)
			for i := range ks {
				ks[i] = g(i)
			}
			want := slices.Clone(ks)
			slices.Sort(want)
			tmp = sortUint64(ks, tmp)
			if diff := cmp.Diff(want, ks); diff != "" {
				t.Errorf("%s, %d keys: (-want +got):\n%s", name, n, diff)
			}
		}
	}
}
