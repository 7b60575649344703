package perfetto

import "fmt"

// Track uuids are derived from what a track shows, never random, so the same
// capture always gives the same trace. They are unique by construction, so
// the Writer keeps no set of the uuids it wrote and its memory does not grow
// with the number of warps: a track's identity is packed into a 62-bit code
// that no other track of the file can have, and the code goes through a
// bijection on [0, 2^62) that scatters the bits (perm62). The uuid is that
// image: below 2^62 and, as every code is, non-zero.
//
// The codes, by their top bits:
//
//	1 launch(17) slot(32) sub(12)     warp-level: sub 0 the warp, 1+l its async
//	                                  lane l; for CTA tracks slot is the CTA's
//	                                  first started warp and sub is subCTA,
//	                                  subDrops or subCounter + key index
//	01 launch(24) kind(2) value(34)   launch-level: the launch, an SM (value = SM
//	                                  id), a summary (value = key)
//	001 hash(59)                      a GPU: hash of its uuid string
//	000 hash(59)                      anything with a launch or slot too large
//	                                  for the fields above: hashed, and checked
//	                                  against the set of such uuids
//
// Uniqueness within a family follows from what the Writer enforces anyway:
// launch indices are not reused, warp slots strictly increase within a
// launch (so a CTA's first slot is its own), a warp's lanes and a CTA's keys
// are numbered, and SM and summary tracks are written once per launch.
// Distinct GPUs whose uuid strings hash alike are refused (one in 2^59).
// [CheckValid] checks uniqueness on the written file.
const (
	aLaunchBits = 17
	aSlotBits   = 32
	aSubBits    = 12
	subCTA      = 0x800 // the CTA track
	subDrops    = 0x801 // the CTA's dropped-events counter
	subCounter  = 0xc00 // + key index (< maxPackedKeys = 1024)
	bLaunchBits = 24
	bValueBits  = 34
	bLaunch     = 0 // kinds of launch-level tracks
	bSM         = 1
	bSummary    = 2
	hashBits    = 59
)

// perm62 is a bijection on [0, 2^62): splitmix64's finaliser with every
// step reduced to 62 bits (an xor with a right shift and a multiplication
// by an odd number modulo 2^62 are each invertible). perm62(0) = 0.
func perm62(x uint64) uint64 {
	const m = 1<<62 - 1
	x ^= x >> 31
	x = x * 0xbf58476d1ce4e5b9 & m
	x ^= x >> 29
	x = x * 0x94d049bb133111eb & m
	x ^= x >> 32
	return x
}

// slotTrack returns the uuid of a warp-level track of the current launch:
// the warp in slot with sub, or its CTA's tracks when slot is the CTA's
// first started warp.
func (w *Writer) slotTrack(slot, sub uint64) uint64 {
	if uint64(w.li) < 1<<aLaunchBits && slot < 1<<aSlotBits {
		return perm62(1<<61 | uint64(w.li)<<(aSlotBits+aSubBits) | slot<<aSubBits | sub)
	}
	return w.overflowTrack(1, slot, sub)
}

// launchTrack returns the uuid of a launch-level track of the current
// launch.
func (w *Writer) launchTrack(kind, value uint64) uint64 {
	if uint64(w.li) < 1<<bLaunchBits {
		return perm62(1<<60 | uint64(w.li)<<(bValueBits+2) | kind<<bValueBits | value)
	}
	return w.overflowTrack(2+kind, value, 0)
}

// gpuTrack returns the uuid of the GPU track of device key k.
func gpuTrack(k uint64) uint64 { return perm62(1<<hashBits | k&(1<<hashBits-1)) }

// overflowTrack hashes a track whose launch or slot does not fit its
// family's fields and checks it against the uuids hashed so far (only such
// tracks are remembered).
func (w *Writer) overflowTrack(family, a, b uint64) uint64 {
	h := mix(family*0x9e3779b97f4a7c15 ^ uint64(w.li))
	h = mix(h ^ a)
	h = mix(h^b*0xd1342543de82ef95) & (1<<hashBits - 1)
	if h == 0 {
		h = 1
	}
	id := perm62(h)
	if w.overflow == nil {
		w.overflow = make(map[uint64]struct{})
	}
	if _, dup := w.overflow[id]; dup {
		w.fail(fmt.Errorf("write track of launch %d (%d, %d): hashed uuid %#x already used", w.li, a, b, id))
	}
	w.overflow[id] = struct{}{}
	return id
}

// mix is splitmix64's finaliser: a bijection on uint64 with good avalanche.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// The sub fields of warp-level codes do not overlap: lanes take 1..maxLanes,
// then come the CTA's; a negative difference would not compile.
const _ = uint(subCTA-maxLanes-1) + uint(1<<aSubBits-subCounter-maxPackedKeys)
