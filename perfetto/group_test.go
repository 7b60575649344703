package perfetto

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGrouperSort(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	gen := map[string]func(i int) uint32{
		"stages":      func(i int) uint32 { return uint32(i % 4) },
		"name+stage":  func(int) uint32 { return uint32(r.IntN(3))<<16 | uint32(r.IntN(6)) },
		"random":      func(int) uint32 { return r.Uint32() },
		"sorted":      func(i int) uint32 { return uint32(i / 7) },
		"reversed":    func(i int) uint32 { return uint32(5000 - i) },
		"all equal":   func(int) uint32 { return 42 },
		"extremes":    func(int) uint32 { return []uint32{0, 1 << 31, 1<<32 - 1}[r.IntN(3)] },
		"hash clumps": func(int) uint32 { return uint32(r.IntN(8)) << 28 },
	}
	var g grouper
	for name, gen := range gen {
		for _, n := range []int{0, 1, 2, 3, 17, 64, 1000} {
			ks := make([]uint64, n)
			for i := range ks {
				ks[i] = uint64(gen(i))<<32 | uint64(i*3)
			}
			want := slices.Clone(ks)
			slices.Sort(want)
			g.sort(ks)
			if diff := cmp.Diff(want, ks); diff != "" {
				t.Errorf("%s, %d keys: (-want +got):\n%s", name, n, diff)
			}
		}
	}
}
