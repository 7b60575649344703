package trace

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// RoundSpread is how far apart one round's marks landed on the timeline:
// the marks of one name with one payload, which a calibration kernel
// records at the same true instant on every warp (see
// kernels/examples/calibrate.cu).
type RoundSpread struct {
	Payload uint16 `json:"payload"`
	Warps   int    `json:"warps"` // marks in the round
	SMs     int    `json:"sms"`   // distinct SMs among them
	// WarpSpreadNs is the latest mark's time minus the earliest's, over
	// every warp. SMSpreadNs takes each SM's earliest mark first, so it
	// leaves out the spread within an SM (warps released one after another)
	// and measures the SMs' clocks against each other.
	WarpSpreadNs float64 `json:"warp_spread_ns"`
	SMSpreadNs   float64 `json:"sm_spread_ns"`
	// EarliestSM and LatestSM are the SMs whose earliest marks were first
	// and last.
	EarliestSM uint32 `json:"earliest_sm"`
	LatestSM   uint32 `json:"latest_sm"`
}

// ClockSummary sums up a launch's per-SM clock fits.
type ClockSummary struct {
	SMs int `json:"sms"`
	// ResidualMaxNs is the largest anchor residual of any SM; ResidualRMSNs
	// the RMS of every anchor's residual, over all SMs.
	ResidualMaxNs float64 `json:"residual_max_ns"`
	ResidualRMSNs float64 `json:"residual_rms_ns"`
	WorstSM       uint32  `json:"worst_sm"` // the SM with ResidualMaxNs
	MinMHz        float64 `json:"min_mhz"`
	MaxMHz        float64 `json:"max_mhz"`
	// NsPerCycle is the median SM's ns per cycle: the timeline's resolution
	// within one SM.
	NsPerCycle float64 `json:"ns_per_cycle"`
	Fallbacks  int     `json:"fallbacks"` // SMs without a fit of their own
}

// SpreadResult is the calibration of a launch by one mark: per round (mark
// payload) the spread of its times across warps and across SMs, summed up
// over the rounds, next to the clock fits that placed them.
type SpreadResult struct {
	Kernel string        `json:"kernel"`
	Mark   string        `json:"mark"`
	Rounds []RoundSpread `json:"rounds"`
	// Warps and SMs are how many warps and SMs recorded the mark at all.
	Warps int `json:"warps"`
	SMs   int `json:"sms"`
	// Incomplete counts rounds with fewer marks than the fullest round.
	Incomplete int `json:"incomplete"`
	// Median and max over rounds of RoundSpread's spreads.
	WarpSpreadMedianNs float64      `json:"warp_spread_median_ns"`
	WarpSpreadMaxNs    float64      `json:"warp_spread_max_ns"`
	SMSpreadMedianNs   float64      `json:"sm_spread_median_ns"`
	SMSpreadMaxNs      float64      `json:"sm_spread_max_ns"`
	Clocks             ClockSummary `json:"clocks"`
	// SkippedWarps counts warp slots the decoder could not read
	// ([WarpError]); their marks are missing.
	SkippedWarps int `json:"skipped_warps"`
}

// UnknownMarkError says a launch's name table has no MARK of that name.
type UnknownMarkError struct {
	Kernel, Mark string
	Have         []string // the MARK names it has
}

func (e *UnknownMarkError) Error() string {
	return fmt.Sprintf("kernel %s has no MARK %q (have %v)", e.Kernel, e.Mark, e.Have)
}

// ErrNoMarks is returned (wrapped) when no warp recorded the mark.
var ErrNoMarks = errors.New("no warp recorded the mark")

// markTime is one mark's time relative to the launch's reference, in ns with
// the fit's sub-ns precision (Mark.Time is rounded to whole ns).
type markTime struct {
	payload uint16
	sm      uint32
	ns      float64
}

// MarkSpread decodes launch l and measures, per payload of the MARK named
// mark, how far apart the warps' marks landed (see [RoundSpread]). Times are
// taken from each mark's cycle count through its SM's fit, without rounding
// to whole ns. Warp slots that fail to decode are skipped and counted.
func MarkSpread(l *Launch, mark string, opt Options) (SpreadResult, error) {
	if l == nil || l.Meta == nil {
		return SpreadResult{}, errors.New("mark spread: no launch")
	}
	res := SpreadResult{Kernel: l.Meta.Kernel, Mark: mark}
	var id uint16
	var have []string
	for _, n := range l.Meta.Names {
		if n.Kind != NameMark {
			continue
		}
		have = append(have, n.Text)
		if n.Text == mark {
			id = n.ID
		}
	}
	if id == 0 {
		return res, fmt.Errorf("mark spread: launch %d: %w", l.Index, &UnknownMarkError{Kernel: l.Meta.Kernel, Mark: mark, Have: have})
	}
	d, err := NewDecoder(l, opt)
	if err != nil {
		return res, fmt.Errorf("mark spread: %w", err)
	}
	fits := d.Clocks()
	res.Clocks = summarizeClocks(fits)
	if len(fits) == 0 {
		return res, fmt.Errorf("mark spread: launch %d (%s): %w (no warp started)", l.Index, l.Meta.Kernel, ErrNoMarks)
	}
	// Times relative to the first SM's reference: small, exact differences.
	ref := fits[0].RefNs
	var times []markTime
	sms := map[uint32]bool{}
	err = d.Each(func(w *Warp) error {
		fit := d.Clock(w.SM)
		seen := false
		for _, m := range w.Marks {
			if m.Name != id {
				continue
			}
			seen = true
			ns := float64(fit.RefNs-ref) + fit.OffsetNs + fit.NsPerCycle*float64(int64(m.Cycles-fit.RefCycles))
			times = append(times, markTime{payload: m.Payload, sm: w.SM, ns: ns})
		}
		if seen {
			res.Warps++
			sms[w.SM] = true
		}
		return nil
	}, func(*WarpError) error {
		res.SkippedWarps++
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("mark spread: launch %d: %w", l.Index, err)
	}
	res.SMs = len(sms)
	if len(times) == 0 {
		return res, fmt.Errorf("mark spread: launch %d (%s): MARK %s: %w", l.Index, l.Meta.Kernel, mark, ErrNoMarks)
	}
	slices.SortFunc(times, func(a, b markTime) int {
		if a.payload != b.payload {
			return int(a.payload) - int(b.payload)
		}
		if a.sm != b.sm {
			return int(int64(a.sm) - int64(b.sm))
		}
		switch {
		case a.ns < b.ns:
			return -1
		case a.ns > b.ns:
			return 1
		}
		return 0
	})
	most := 0
	for i := 0; i < len(times); {
		j := i
		for j < len(times) && times[j].payload == times[i].payload {
			j++
		}
		res.Rounds = append(res.Rounds, roundSpread(times[i:j]))
		most = max(most, j-i)
		i = j
	}
	wsp := make([]float64, len(res.Rounds))
	ssp := make([]float64, len(res.Rounds))
	for i, r := range res.Rounds {
		if r.Warps < most {
			res.Incomplete++
		}
		wsp[i], ssp[i] = r.WarpSpreadNs, r.SMSpreadNs
	}
	res.WarpSpreadMedianNs, res.WarpSpreadMaxNs = medianMax(wsp)
	res.SMSpreadMedianNs, res.SMSpreadMaxNs = medianMax(ssp)
	return res, nil
}

// roundSpread measures one round; ts holds its marks sorted by SM, then
// time, so each SM's earliest mark comes first in its run.
func roundSpread(ts []markTime) RoundSpread {
	r := RoundSpread{Payload: ts[0].payload, Warps: len(ts)}
	lo, hi := math.Inf(1), math.Inf(-1)
	smLo, smHi := math.Inf(1), math.Inf(-1)
	for i, t := range ts {
		lo, hi = min(lo, t.ns), max(hi, t.ns)
		if i > 0 && ts[i-1].sm == t.sm {
			continue
		}
		r.SMs++
		if t.ns < smLo {
			smLo, r.EarliestSM = t.ns, t.sm
		}
		if t.ns > smHi {
			smHi, r.LatestSM = t.ns, t.sm
		}
	}
	r.WarpSpreadNs, r.SMSpreadNs = hi-lo, smHi-smLo
	return r
}

// medianMax returns the median (mean of the middle two for an even count)
// and the maximum of xs, which it sorts; 0, 0 for none.
func medianMax(xs []float64) (median, maxv float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	slices.Sort(xs)
	n := len(xs)
	median = xs[n/2]
	if n%2 == 0 {
		median = (xs[n/2-1] + xs[n/2]) / 2
	}
	return median, xs[n-1]
}

// summarizeClocks sums up fits (see [ClockSummary]).
func summarizeClocks(fits []ClockFit) ClockSummary {
	s := ClockSummary{SMs: len(fits)}
	if len(fits) == 0 {
		return s
	}
	var ss float64
	points := 0
	per := make([]float64, 0, len(fits))
	s.MinMHz, s.MaxMHz = math.Inf(1), math.Inf(-1)
	s.WorstSM = fits[0].SM
	for _, f := range fits {
		if f.ResidualMaxNs > s.ResidualMaxNs {
			s.ResidualMaxNs, s.WorstSM = f.ResidualMaxNs, f.SM
		}
		ss += f.ResidualRMSNs * f.ResidualRMSNs * float64(f.Points)
		points += f.Points
		s.MinMHz, s.MaxMHz = min(s.MinMHz, f.MHz), max(s.MaxMHz, f.MHz)
		per = append(per, f.NsPerCycle)
		if f.Fallback != "" {
			s.Fallbacks++
		}
	}
	if points > 0 {
		s.ResidualRMSNs = math.Sqrt(ss / float64(points))
	}
	s.NsPerCycle, _ = medianMax(per)
	return s
}
