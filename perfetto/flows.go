package perfetto

import (
	"cmp"
	"slices"
)

// matchFlows links producer ranges to consumer ranges of the CTA. The rule
// (docs/PERFETTO-EXPORT.md):
//
//   - Roles are ordered by name id (their order in IKET_NAMES); a warp of
//     role A feeds the warps of the next role present in the CTA.
//   - Only range names used by warps of a single role take part (a barrier
//     wait shared by both roles does not).
//   - For a source warp S, a target warp T, a source range name n and a
//     payload p: S's ranges (n, p) in order of their end are matched in turn
//     to T's ranges of payload p in order of their start; each source range
//     goes to the first target range not yet matched for (n, p) that starts
//     at or after the source ends (and strictly after it starts).
func (w *Writer) matchFlows() {
	c := &w.cta
	for _, n := range c.touched {
		c.nameRole[n] = 0
	}
	c.touched = c.touched[:0]
	c.roles = c.roles[:0]
	for i := range c.warps {
		cw := &c.warps[i]
		role := cw.info.role
		if role != 0 && !slices.Contains(c.roles, role) {
			c.roles = append(c.roles, role)
		}
		for j := cw.r0; j < cw.r1; j++ {
			// nameRole holds role+1 (0 = unseen), or roleShared.
			n := c.ranges[j].Name & 0x1fff
			switch have := c.nameRole[n]; {
			case have == 0:
				c.nameRole[n] = role + 1
				c.touched = append(c.touched, n)
			case have != role+1:
				c.nameRole[n] = roleShared
			}
		}
	}
	if len(c.roles) < 2 {
		return
	}
	slices.Sort(c.roles)
	for si := range c.warps {
		s := &c.warps[si]
		a := s.info.role
		if a == 0 {
			continue
		}
		ri, _ := slices.BinarySearch(c.roles, a)
		if ri+1 >= len(c.roles) {
			continue
		}
		bRole := c.roles[ri+1]
		// Sources sorted by (name, payload, end), stable: one integer sort
		// of (name, payload, index) orders by name and payload keeping
		// start order; a group whose ends are out of order (nested or
		// overlapping ranges) is then sorted by end, stable.
		rs := c.ranges
		c.sortKeys = c.sortKeys[:0]
		for j := s.r0; j < s.r1; j++ {
			if r := &rs[j]; c.nameRole[r.Name&0x1fff] == a+1 {
				c.sortKeys = append(c.sortKeys, uint64(r.Name)<<48|uint64(r.Payload)<<32|uint64(j))
			}
		}
		if len(c.sortKeys) == 0 {
			continue
		}
		c.src = c.src[:0]
		for _, k := range c.sortedKeys(c.sortKeys) {
			c.src = append(c.src, int32(uint32(k)))
		}
		byEnd := func(x, y int32) int { return cmp.Compare(rs[x].End, rs[y].End) }
		for i := 0; i < len(c.sortKeys); {
			g := c.sortKeys[i] >> 32
			j := i + 1
			for j < len(c.sortKeys) && c.sortKeys[j]>>32 == g {
				j++
			}
			if grp := c.src[i:j]; !slices.IsSortedFunc(grp, byEnd) {
				slices.SortStableFunc(grp, byEnd)
			}
			i = j
		}
		for ti := range c.warps {
			t := &c.warps[ti]
			if t.info.role != bRole {
				continue
			}
			// Ranges are sorted by start: sorting (payload, index) keeps
			// each payload's ranges in start order.
			c.sortKeys = c.sortKeys[:0]
			for j := t.r0; j < t.r1; j++ {
				if r := &rs[j]; c.nameRole[r.Name&0x1fff] == bRole+1 {
					c.sortKeys = append(c.sortKeys, uint64(r.Payload)<<32|uint64(j))
				}
			}
			if len(c.sortKeys) == 0 {
				continue
			}
			c.dst = c.dst[:0]
			c.dstStart = c.dstStart[:0]
			for _, k := range c.sortedKeys(c.sortKeys) {
				c.dst = append(c.dst, int32(uint32(k)))
				c.dstStart = append(c.dstStart, rs[uint32(k)].Start)
			}
			w.matchPair()
		}
	}
}

// sortedKeys sorts ks (range indices in the low halves, increasing) and
// returns it.
func (c *ctaBuf) sortedKeys(ks []uint64) []uint64 {
	c.grp.sort(ks)
	return ks
}

// matchPair matches c.src (sorted by name, payload, end) to c.dst (sorted by
// payload, start; c.sortKeys holds their keys, payload<<32 | index, and
// c.dstStart their starts).
func (w *Writer) matchPair() {
	c := &w.cta
	rs := c.ranges
	dk, ds := c.sortKeys, c.dstStart
	for i := 0; i < len(c.src); {
		n, p := rs[c.src[i]].Name, rs[c.src[i]].Payload
		j := i
		for j < len(c.src) && rs[c.src[j]].Name == n && rs[c.src[j]].Payload == p {
			j++
		}
		lo, _ := slices.BinarySearch(dk, uint64(p)<<32)
		hi := lo
		for hi < len(dk) && uint16(dk[hi]>>32) == p {
			hi++
		}
		ptr := lo
		for k := i; k < j; k++ {
			x := &rs[c.src[k]]
			for ptr < hi && (ds[ptr] < x.End || ds[ptr] <= x.Start) {
				ptr++
			}
			if ptr >= hi {
				break
			}
			w.link(c.src[k], c.dst[ptr])
			ptr++
		}
		i = j
	}
}

func (w *Writer) link(src, dst int32) {
	c := &w.cta
	id := w.nextFlow
	w.nextFlow++
	c.flows = append(c.flows, flowRef{id: id, next: c.flowHead[src]})
	c.flowHead[src] = int32(len(c.flows) - 1)
	c.flows = append(c.flows, flowRef{id: id, term: true, next: c.flowHead[dst]})
	c.flowHead[dst] = int32(len(c.flows) - 1)
}
