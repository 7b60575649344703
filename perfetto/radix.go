package perfetto

import "slices"

// sortUint64 sorts ks in place, using tmp (grown as needed and returned) as
// scratch. Above a few dozen keys it is an LSD radix sort by bytes that
// skips the bytes in which no two keys differ: the writer's packed keys
// (counter transitions, flow candidates) vary in a few low bytes and one
// high one, so that is 3-4 linear passes instead of a comparison sort.
func sortUint64(ks, tmp []uint64) []uint64 {
	if len(ks) < 64 {
		slices.Sort(ks)
		return tmp
	}
	var varying uint64
	sorted := true
	for i := 1; i < len(ks); i++ {
		varying |= ks[i] ^ ks[0]
		sorted = sorted && ks[i-1] <= ks[i]
	}
	if sorted {
		return tmp
	}
	tmp = slices.Grow(tmp[:0], len(ks))[:len(ks)]
	src, dst := ks, tmp
	var count [256]int
	for shift := uint(0); shift < 64; shift += 8 {
		if (varying>>shift)&0xff == 0 {
			continue
		}
		clear(count[:])
		for _, k := range src {
			count[byte(k>>shift)]++
		}
		pos := 0
		for i, c := range count {
			count[i] = pos
			pos += c
		}
		for _, k := range src {
			d := byte(k >> shift)
			dst[count[d]] = k
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &ks[0] {
		copy(ks, src)
	}
	return tmp
}
