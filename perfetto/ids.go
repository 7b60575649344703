package perfetto

import "fmt"

// Track uuids are derived from what a track shows, never random, so the same
// capture always gives the same trace. They are unique by construction, so
// the Writer keeps no set of the uuids it wrote and its memory does not grow
// with the number of warps: a track's identity is packed into a code that no
// other track of the file can have. The codes are small for small launches,
// slots and SMs (a warp's uuid is three or four varint bytes, not nine), as
// a lane's and a counter's uuid is in each of its events: the family is in
// the low two bits, above it the fields, the most varying lowest, with the
// launch index's bits interleaved with the slot's (or value's), one for two,
// so that neither a large slot nor a later launch makes every uuid long.
//
// The codes, from the low bits:
//
//	01 sub(12) interleave(slot(32), launch(16))    warp-level: sub 0 the warp,
//	                                               1+l its async lane l; for
//	                                               CTA tracks slot is the CTA's
//	                                               first started warp and sub
//	                                               is subCTA, subDrops or
//	                                               subCounter + key index
//	10 kind(2) interleave(value(34), launch(24))   launch-level: the launch, an
//	                                               SM (value = SM id), a summary
//	                                               (value = key)
//	11 hash(59)                                    a GPU: hash of its uuid string
//	00 hash(59), not 0                             anything with a launch or slot
//	                                               too large for the fields
//	                                               above: hashed, and checked
//	                                               against the set of such uuids
//
// Every uuid is below 2^62 and, as every code is, non-zero.
// Uniqueness within a family follows from what the Writer enforces anyway:
// launch indices are not reused, warp slots strictly increase within a
// launch (so a CTA's first slot is its own), a warp's lanes and a CTA's keys
// are numbered, and SM and summary tracks are written once per launch.
// Distinct GPUs whose uuid strings hash alike are refused (one in 2^59).
// [CheckValid] checks uniqueness on the written file.
const (
	aLaunchBits = 16
	aSlotBits   = 32
	aSubBits    = 12
	subCTA      = maxLanes + 1 // the CTA track
	subDrops    = maxLanes + 2 // the CTA's dropped-events counter
	subCounter  = maxLanes + 3 // + key index (< maxPackedKeys = 1024)
	bLaunchBits = 24
	bValueBits  = 34
	bLaunch     = 0 // kinds of launch-level tracks
	bSM         = 1
	bSummary    = 2
	hashBits    = 59
)

// interleave returns the bits of a (na bits) and b (nb bits) from the
// lowest, two of a then one of b, each in turn while it has bits left: an
// injection of [0, 2^na) x [0, 2^nb) into [0, 2^(na+nb)) that keeps small
// pairs small, a more than b (slots and SM ids grow faster than launch
// indices).
func interleave(a uint64, na uint, b uint64, nb uint) uint64 {
	var x uint64
	k := uint(0)
	for i, j := uint(0), uint(0); i < na || j < nb; {
		for range 2 {
			if i < na {
				x |= (a >> i & 1) << k
				i++
				k++
			}
		}
		if j < nb {
			x |= (b >> j & 1) << k
			j++
			k++
		}
	}
	return x
}

// slotTrack returns the uuid of a warp-level track of the current launch:
// the warp in slot with sub, or its CTA's tracks when slot is the CTA's
// first started warp.
func (w *Writer) slotTrack(slot, sub uint64) uint64 {
	if uint64(w.li) < 1<<aLaunchBits && slot < 1<<aSlotBits {
		return (interleave(slot, aSlotBits, uint64(w.li), aLaunchBits)<<aSubBits|sub)<<2 | 1
	}
	return w.overflowTrack(1, slot, sub)
}

// launchTrack returns the uuid of a launch-level track of the current
// launch.
func (w *Writer) launchTrack(kind, value uint64) uint64 {
	if uint64(w.li) < 1<<bLaunchBits && value < 1<<bValueBits {
		return (interleave(value, bValueBits, uint64(w.li), bLaunchBits)<<2|kind)<<2 | 2
	}
	return w.overflowTrack(2+kind, value, 0)
}

// gpuTrack returns the uuid of the GPU track of device key k.
func gpuTrack(k uint64) uint64 { return (k&(1<<hashBits-1))<<2 | 3 }

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
	id := h << 2
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
