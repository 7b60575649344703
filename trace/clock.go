package trace

import (
	"fmt"
	"math"
	"slices"
)

// ClockFit converts one SM's cycle counter to globaltimer nanoseconds. It is
// a least-squares line through every (clock, globaltimer) anchor pair of the
// SM's warps: the start anchor of each started warp and the end anchor of each
// finished one.
//
// Parametrisation: the fit is centred on the anchors' centroid, so both terms
// stay small whatever the magnitudes (cycles near 1e12, ns near 1e18):
//
//	ns = RefNs + OffsetNs + NsPerCycle * float64(int64(cycles - RefCycles))
//
// RefCycles and RefNs are the centroid of the anchors rounded to integers and
// OffsetNs is the fitted line's value at RefCycles minus RefNs (|OffsetNs| is
// below a nanosecond plus NsPerCycle). The cycle difference is taken in
// integer arithmetic first, so no precision is lost before the multiply.
type ClockFit struct {
	SM         uint32  `json:"sm"`
	RefCycles  uint64  `json:"ref_cycles"`
	RefNs      int64   `json:"ref_ns"`
	NsPerCycle float64 `json:"ns_per_cycle"`
	OffsetNs   float64 `json:"offset_ns"`
	MHz        float64 `json:"mhz"`    // 1000 / NsPerCycle
	Points     int     `json:"points"` // anchor pairs used
	// ResidualRMSNs and ResidualMaxNs measure the anchors' distance from the
	// line (0 with a single anchor).
	ResidualRMSNs float64 `json:"residual_rms_ns"`
	ResidualMaxNs float64 `json:"residual_max_ns"`
	// Fallback says why the slope did not come from this SM's anchors (a
	// single distinct anchor, a non-positive fitted slope), and what was used
	// instead; "" for a regular fit.
	Fallback string `json:"fallback,omitempty"`
}

// Ns converts an unwrapped cycle count of the SM to globaltimer ns, rounded
// to the nearest ns.
//
// The rounding adds 2^40 + 0.5 and truncates, which is a floor (so a round)
// without a branch for times within 2^40 ns (18 minutes) of RefNs; values
// within 2^-12 ns of a tie may round either way. Non-finite fits give an
// unspecified value, never a panic.
func (f *ClockFit) Ns(cycles uint64) int64 {
	// float64() rounds the product, so no platform fuses it with the add
	// (Go allows an FMA otherwise) and the decoder's copy of this
	// expression gives the same bits everywhere.
	return f.RefNs - 1<<40 + int64(f.OffsetNs+(0x1p40+0.5)+float64(f.NsPerCycle*float64(int64(cycles-f.RefCycles))))
}

// Cycles is the inverse of [ClockFit.Ns], rounded to the nearest cycle.
func (f *ClockFit) Cycles(ns int64) uint64 {
	return f.RefCycles + uint64(int64(math.Floor((float64(ns-f.RefNs)-f.OffsetNs)/f.NsPerCycle+0.5)))
}

// clockAcc accumulates one SM's anchors. Means and co-moments are updated
// with Welford's method on differences from the first anchor, which is exact
// in float64 for spans below 2^53 cycles and ns.
type clockAcc struct {
	sm         uint32
	refC       uint64
	refN       int64
	n          int
	mx, my     float64
	sxx, sxy   float64
	latest     uint64  // the largest anchor cycle count
	cx, cy     float64 // the rounded centroid, set by fitClocks
	oldest     uint64  // wrap mode: latest oldest-stored cycle of a wrapped warp
	haveOldest bool
	ss         float64 // sum of squared residuals, see residual
}

func (a *clockAcc) add(cycles, ns uint64) {
	if a.n == 0 {
		a.refC, a.refN = cycles, int64(ns)
	}
	dc, dn := int64(cycles-a.refC), int64(ns)-a.refN
	if a.n == 0 || cycles > a.latest {
		a.latest = cycles
	}
	x, y := float64(dc), float64(dn)
	a.n++
	ddx := x - a.mx
	a.mx += ddx / float64(a.n)
	a.my += (y - a.my) / float64(a.n)
	a.sxx += ddx * (x - a.mx)
	a.sxy += ddx * (y - a.my)
}

// minNsPerCycle and maxNsPerCycle bound a fitted slope: an SM clock of 1 MHz
// to 100 GHz.
const minNsPerCycle, maxNsPerCycle = 0.01, 1000

// slope returns the fitted ns per cycle, or ok false when the anchors do not
// determine a positive one.
func (a *clockAcc) slope() (s float64, why string) {
	if a.n < 2 || a.sxx <= 0 {
		return 0, "single distinct anchor"
	}
	s = a.sxy / a.sxx
	if !(s > 0) || math.IsInf(s, 0) {
		return 0, fmt.Sprintf("fitted slope %g ns/cycle is not positive", s)
	}
	if s < minNsPerCycle || s > maxNsPerCycle {
		return 0, fmt.Sprintf("fitted slope %g ns/cycle (%.3g MHz) is no SM clock: corrupt anchors", s, 1000/s)
	}
	return s, ""
}

// fitClocks turns the accumulators into fits, sorted by SM. maxMHz is the
// device's maximum SM clock from the metadata (0 when unknown).
func fitClocks(accs []*clockAcc, maxMHz uint32) []ClockFit {
	fits := make([]ClockFit, len(accs))
	var good []float64
	for i, a := range accs {
		s, why := a.slope()
		fits[i] = ClockFit{SM: a.sm, Points: a.n, NsPerCycle: s, Fallback: why}
		if why == "" {
			good = append(good, s)
		}
	}
	fallback, how := 1.0, "1 ns/cycle (no other SM fitted and no device clock)"
	if len(good) > 0 {
		slices.Sort(good)
		fallback = good[len(good)/2]
		if len(good)%2 == 0 {
			fallback = (good[len(good)/2-1] + good[len(good)/2]) / 2
		}
		how = fmt.Sprintf("median slope of %d other SMs", len(good))
	} else if maxMHz > 0 {
		fallback = 1000 / float64(maxMHz)
		how = fmt.Sprintf("the device's maximum SM clock, %d MHz", maxMHz)
	}
	for i, a := range accs {
		f := &fits[i]
		if f.Fallback != "" {
			f.NsPerCycle = fallback
			f.Fallback += ": used " + how
		}
		// Centre on the rounded centroid.
		a.cx, a.cy = math.Round(a.mx), math.Round(a.my)
		f.RefCycles = a.refC + uint64(int64(a.cx))
		f.RefNs = a.refN + int64(a.cy)
		f.OffsetNs = (a.my - a.cy) - f.NsPerCycle*(a.mx-a.cx)
		f.MHz = 1000 / f.NsPerCycle
	}
	return fits
}

// residual adds one anchor's distance from the fit f of a's SM; called
// after [fitClocks] for every anchor given to add, in the same order, it
// leaves f's ResidualMaxNs and (with finishResiduals) ResidualRMSNs as a
// fit over kept points would. The anchors are read again instead of kept,
// so memory does not grow with warps.
func (a *clockAcc) residual(f *ClockFit, cycles, ns uint64) {
	dc, dn := int64(cycles-a.refC), int64(ns)-a.refN
	pred := f.OffsetNs + f.NsPerCycle*float64(dc-int64(a.cx))
	r := math.Abs(float64(dn-int64(a.cy)) - pred)
	a.ss += r * r
	f.ResidualMaxNs = max(f.ResidualMaxNs, r)
}

func (a *clockAcc) finishResiduals(f *ClockFit) {
	if a.n > 0 {
		f.ResidualRMSNs = math.Sqrt(a.ss / float64(a.n))
	}
}

// Window is the part of a launch's timeline that every warp recorded
// completely. Only wrap mode loses the beginning of a warp's record: Start is
// the latest oldest-stored event among the warps that dropped events, so from
// Start on no warp's record has a hole. Start is 0 when no warp wrapped. End
// is the latest end anchor of the launch. Applied says that
// [Options.TrimCommonWindow] left out the events before Start.
type Window struct {
	Start, End int64
	Applied    bool
}
