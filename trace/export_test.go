package trace

// GeneralPairingOnly makes d pair every event on the general path, without
// the fast loop, so tests can compare the two and benchmarks time them.
func GeneralPairingOnly(d *Decoder) { d.generalOnly = true }
