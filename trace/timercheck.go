package trace

import (
	"fmt"
	"math"
	"slices"
)

// TimerCheck compares the timeline with %globaltimer itself. A kernel reads
// the timer and records its low 16 bits as the payload of a mark whose clock
// is read right after; the mark's converted time minus the timer value
// (reconstructed from the low bits) is the error of one sample, plus the
// timer's quantisation (it advances in 32 ns steps on the H200, so a perfect
// timeline gives errors spread over [0, 32) ns plus the few ns between the
// two reads). The same offset on every SM means the SMs are aligned with
// each other; the spread of the per-SM means bounds the cross-SM alignment
// error.
type TimerCheck struct {
	Kernel  string       `json:"kernel"`
	Mark    string       `json:"mark"`
	Samples int          `json:"samples"`
	SMs     []SMTimerErr `json:"sms"`
	// MeanNs, MinNs and MaxNs are over every sample.
	MeanNs float64 `json:"mean_ns"`
	MinNs  float64 `json:"min_ns"`
	MaxNs  float64 `json:"max_ns"`
	// SMMeanSpreadNs is the largest minus the smallest per-SM mean error:
	// how far apart the SMs' timelines sit.
	SMMeanSpreadNs float64 `json:"sm_mean_spread_ns"`
}

// SMTimerErr is one SM's samples.
type SMTimerErr struct {
	SM      uint32  `json:"sm"`
	Samples int     `json:"samples"`
	MeanNs  float64 `json:"mean_ns"`
}

// CheckTimer computes a [TimerCheck] from the MARK named mark of launch l.
func CheckTimer(l *Launch, mark string, opt Options) (TimerCheck, error) {
	res := TimerCheck{Kernel: l.Meta.Kernel, Mark: mark, MinNs: math.Inf(1), MaxNs: math.Inf(-1)}
	var id uint16
	for _, n := range l.Meta.Names {
		if n.Kind == NameMark && n.Text == mark {
			id = n.ID
		}
	}
	if id == 0 {
		return res, fmt.Errorf("check timer: launch %d (%s) has no MARK %q", l.Index, l.Meta.Kernel, mark)
	}
	d, err := NewDecoder(l, opt)
	if err != nil {
		return res, fmt.Errorf("check timer: %w", err)
	}
	type acc struct {
		n   int
		sum float64
	}
	per := map[uint32]*acc{}
	var sum float64
	err = d.Each(func(w *Warp) error {
		fit := d.Clock(w.SM)
		for _, m := range w.Marks {
			if m.Name != id {
				continue
			}
			// Whole ns in int64 (float64 cannot hold 1.8e18 to the ns).
			rel := fit.OffsetNs + fit.NsPerCycle*float64(int64(m.Cycles-fit.RefCycles))
			whole := math.Floor(rel)
			e := timerError(fit.RefNs+int64(whole), rel-whole, m.Payload)
			a := per[w.SM]
			if a == nil {
				a = &acc{}
				per[w.SM] = a
			}
			a.n++
			a.sum += e
			sum += e
			res.Samples++
			res.MinNs = math.Min(res.MinNs, e)
			res.MaxNs = math.Max(res.MaxNs, e)
		}
		return nil
	}, nil)
	if err != nil {
		return res, fmt.Errorf("check timer: %w", err)
	}
	if res.Samples == 0 {
		return res, fmt.Errorf("check timer: launch %d (%s): MARK %s: %w", l.Index, l.Meta.Kernel, mark, ErrNoMarks)
	}
	res.MeanNs = sum / float64(res.Samples)
	lo, hi := math.Inf(1), math.Inf(-1)
	for sm, a := range per {
		m := a.sum / float64(a.n)
		res.SMs = append(res.SMs, SMTimerErr{SM: sm, Samples: a.n, MeanNs: m})
		lo, hi = math.Min(lo, m), math.Max(hi, m)
	}
	slices.SortFunc(res.SMs, func(a, b SMTimerErr) int { return int(int64(a.SM) - int64(b.SM)) })
	res.SMMeanSpreadNs = hi - lo
	return res, nil
}

// timerError returns the converted time (ns + frac) minus the timer value
// whose low 16 bits are low, taking the value nearest to it.
func timerError(ns int64, frac float64, low uint16) float64 {
	d := ns - int64(low)
	d = ((d % 65536) + 65536) % 65536
	if d >= 32768 {
		d -= 65536
	}
	return float64(d) + frac
}
