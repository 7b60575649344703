package perfetto

import "slices"

// grouper sorts the writer's flow candidate keys: uint64 keys whose low 32
// bits (a range index) increase along the slice and whose high 32 bits (a
// range name and payload, or a payload) take few distinct values, the
// pipeline stages. A stable counting sort by the high halves then sorts the
// keys fully, in two linear passes: indexed by the high half itself when
// its values span a small range, else by numbers given to the distinct
// values with a small open-addressing table (then sorted).
type grouper struct {
	slots []int32  // 1 + group number, 0 = free; a power of two long
	keys  []uint32 // high half of each group
	gid   []int32  // group of each key
	order []uint64 // high half << 32 | group, sorted
	pos   []int    // per group: count, then next output position
	tmp   []uint64
	shift uint
}

// sort sorts ks (see grouper) in place.
func (g *grouper) sort(ks []uint64) {
	if len(ks) < 2 || slices.IsSorted(ks) {
		return
	}
	lo, hi := uint32(ks[0]>>32), uint32(ks[0]>>32)
	for _, k := range ks {
		lo, hi = min(lo, uint32(k>>32)), max(hi, uint32(k>>32))
	}
	if hi-lo < uint32(max(256, len(ks))) {
		g.sortDense(ks, lo, int(hi-lo)+1)
		return
	}
	g.reset(len(ks))
	g.gid = slices.Grow(g.gid[:0], len(ks))
	for _, k := range ks {
		g.gid = append(g.gid, g.id(uint32(k>>32)))
	}
	g.order = g.order[:0]
	for i, k := range g.keys {
		g.order = append(g.order, uint64(k)<<32|uint64(i))
	}
	slices.Sort(g.order)
	g.pos = slices.Grow(g.pos[:0], len(g.keys))[:len(g.keys)]
	clear(g.pos)
	for _, i := range g.gid {
		g.pos[i]++
	}
	at := 0
	for _, o := range g.order {
		i := uint32(o)
		n := g.pos[i]
		g.pos[i] = at
		at += n
	}
	g.tmp = slices.Grow(g.tmp[:0], len(ks))[:len(ks)]
	for j, k := range ks {
		i := g.gid[j]
		g.tmp[g.pos[i]] = k
		g.pos[i]++
	}
	copy(ks, g.tmp)
}

// sortDense is sort for high halves in [lo, lo+n): a counting sort indexed
// by the high half itself.
func (g *grouper) sortDense(ks []uint64, lo uint32, n int) {
	g.pos = slices.Grow(g.pos[:0], n)[:n]
	clear(g.pos)
	for _, k := range ks {
		g.pos[uint32(k>>32)-lo]++
	}
	at := 0
	for i, c := range g.pos {
		g.pos[i] = at
		at += c
	}
	g.tmp = slices.Grow(g.tmp[:0], len(ks))[:len(ks)]
	for _, k := range ks {
		i := uint32(k>>32) - lo
		g.tmp[g.pos[i]] = k
		g.pos[i]++
	}
	copy(ks, g.tmp)
}

// reset empties the table, sized for n keys.
func (g *grouper) reset(n int) {
	size, bits := 16, uint(4)
	for size < 2*n {
		size, bits = size*2, bits+1
	}
	if cap(g.slots) < size {
		g.slots = make([]int32, size)
	}
	g.slots = g.slots[:size]
	clear(g.slots)
	g.keys = g.keys[:0]
	g.shift = 32 - bits
}

// id returns the group number of high half k, adding it when new.
func (g *grouper) id(k uint32) int32 {
	mask := len(g.slots) - 1
	h := int(k*0x9e3779b1>>g.shift) & mask
	for {
		s := g.slots[h]
		if s == 0 {
			g.keys = append(g.keys, k)
			g.slots[h] = int32(len(g.keys))
			return int32(len(g.keys) - 1)
		}
		if g.keys[s-1] == k {
			return s - 1
		}
		h = (h + 1) & mask
	}
}
