package perfetto

// Track uuids are derived from what a track shows, never random, so the same
// capture always gives the same trace: uuid = mix(kind, launch, a, b), kept
// below 2^62 and non-zero. The Writer checks uniqueness as it goes.

type trackKind uint64

const (
	kindGPU trackKind = iota + 1
	kindLaunch
	kindSM
	kindCTA
	kindWarp
	kindLane
	kindCTACounter
	kindCTADrops
	kindSummary
)

// splitmix64 finaliser: a bijection on uint64 with good avalanche.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func trackUUID(k trackKind, launch int, a, b uint64) uint64 {
	h := mix(uint64(k)*0x9e3779b97f4a7c15 ^ uint64(launch))
	h = mix(h ^ a)
	h = mix(h ^ b*0xd1342543de82ef95)
	h &= 1<<62 - 1
	if h == 0 {
		h = 1
	}
	return h
}
