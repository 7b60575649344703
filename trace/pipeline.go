package trace

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// This file measures a warp-specialised pipeline: per stage (the ranges'
// payload), how long a consumer's range starts after the producer's range
// of the same stage ended (lag), and when one side idles while the other
// waits (bubble).

// ExactLags is how many lags an [Analyzer] keeps per series pair for exact
// quantiles; past it, quantiles come from logarithmic histograms within
// [SketchRelativeError] of the exact value (Count, MeanNs, MinNs, MaxNs
// stay exact).
const ExactLags = 1 << 14

// MaxLagStages bounds the stages (payloads) a [LagResult] breaks the lag
// down by: the first ones seen; the others count in OtherStages.
const MaxLagStages = 256

// LagSample is one y range matched to its stage's x ranges.
type LagSample struct {
	CTA        [3]uint32 `json:"cta"`
	CTALinear  uint64    `json:"cta_linear"`
	Payload    uint16    `json:"payload"`
	Occurrence int       `json:"occurrence"` // the y range is the k-th (1-based) of its warp with this payload
	X          WarpRef   `json:"x"`          // the warp whose k-th x range of the stage ended last
	XEnd       int64     `json:"x_end"`
	Y          WarpRef   `json:"y"`
	YStart     int64     `json:"y_start"`
	LagNs      int64     `json:"lag_ns"` // YStart - XEnd
}

// StageLag is the lag of one stage (payload).
type StageLag struct {
	Payload uint16  `json:"payload"`
	Count   uint64  `json:"count"`
	MeanNs  float64 `json:"mean_ns"`
	MinNs   int64   `json:"min_ns"`
	MaxNs   int64   `json:"max_ns"`
}

// LagResult is lag(X, Y): for each Y range, the k-th of its warp with
// payload p in a CTA, the time from the end of the k-th X range with payload
// p (the latest such end over the CTA's X warps) to the Y range's start. So
// with a producer loading stage p (X) and consumers computing on it (Y), it
// is how long stage p's data waited for its consumer; negative when the
// consumer started before the load ended (which [Analyzer.Order] reports).
// A Y range whose CTA has no k-th X range of its payload on any warp is
// Unmatched. Quantiles are nearest-rank over the matched lags.
type LagResult struct {
	X         string  `json:"x"`
	Y         string  `json:"y"`
	Count     uint64  `json:"count"` // matched Y ranges
	Unmatched uint64  `json:"unmatched"`
	Early     uint64  `json:"early"` // lags < 0
	MeanNs    float64 `json:"mean_ns"`
	P50Ns     float64 `json:"p50_ns"`
	P90Ns     float64 `json:"p90_ns"`
	P99Ns     float64 `json:"p99_ns"`
	MinNs     float64 `json:"min_ns"`
	MaxNs     float64 `json:"max_ns"`
	Exact     bool    `json:"exact"` // quantiles are exact (see [ExactLags])
	// Worst is the largest lag (the first one on ties); zero when Count is 0.
	Worst LagSample `json:"worst"`
	// Stages are the first [MaxLagStages] payloads, by payload; the lags of
	// the others count in OtherStages.
	Stages      []StageLag `json:"stages"`
	OtherStages uint64     `json:"other_stages,omitempty"`
}

// CTABubble is the bubble of one CTA.
type CTABubble struct {
	CTA       [3]uint32 `json:"cta"`
	CTALinear uint64    `json:"cta_linear"`
	BubbleNs  int64     `json:"bubble_ns"`
	SpanNs    int64     `json:"span_ns"` // the CTA's first warp start to its last warp end
	Share     float64   `json:"share"`   // BubbleNs / SpanNs
}

// BubbleResult is bubble(X, Y): the time Y is active on some warp of a CTA
// while X is active on no warp of it, as a share of the CTAs' time. With X a
// consumer's compute and Y the producer's wait, it is when the producer
// waits and no consumer computes: the pipeline idles. Per CTA, with X and Y
// the unions over the CTA's warps:
//
//	bubble = | Y \ X |
//	span   = the CTA's first warp start to its last warp end
//
// over the CTAs where X or Y ran. Overall is Σ bubble / Σ span; OfY is
// Σ bubble / Y's active time.
type BubbleResult struct {
	X         string    `json:"x"`
	Y         string    `json:"y"`
	Overall   float64   `json:"overall"`
	OfY       float64   `json:"of_y"`
	BubbleNs  int64     `json:"bubble_ns"`
	SpanNs    int64     `json:"span_ns"`
	YActiveNs int64     `json:"y_active_ns"`
	Worst     CTABubble `json:"worst"` // the CTA with the largest share; zero when there is no bubble
}

// Pipeline is the pipeline analysis of a launch: lag and bubble of every
// ordered pair of role series of two different roles (see
// [Analyzer.Pipeline]).
type Pipeline struct {
	Lags    []LagResult    `json:"lags"`
	Bubbles []BubbleResult `json:"bubbles"`
}

// lagAcc accumulates lag(x, y).
type lagAcc struct {
	unmatched, early uint64
	// warps counts the (CTA, stage, y warp) groups matched, uneven those
	// whose y warp has another number of ranges of the stage than the CTA's
	// x warp with the most (see [Analyzer.Pipeline]); neither counts a
	// group with a stop-mode warp that dropped events.
	warps, uneven uint64
	sum           float64
	min, max      int64
	worst         LagSample
	d             signedDurations
	stageIdx      map[uint16]int32
	stages        []StageLag // Count, MinNs, MaxNs; MeanNs holds the sum
	other         uint64
}

// stage returns the index in l.stages of payload p, adding it while there
// are fewer than MaxLagStages, or -1.
func (l *lagAcc) stage(p uint16) int32 {
	if i, ok := l.stageIdx[p]; ok {
		return i
	}
	if len(l.stages) >= MaxLagStages {
		return -1
	}
	if l.stageIdx == nil {
		l.stageIdx = map[uint16]int32{}
	}
	i := int32(len(l.stages))
	l.stageIdx[p] = i
	l.stages = append(l.stages, StageLag{Payload: p, MinNs: math.MaxInt64, MaxNs: math.MinInt64})
	return i
}

// add accounts lag sample s of stage st (an index from stage, or -1).
func (l *lagAcc) add(s LagSample, st int32) {
	v := s.LagNs
	if l.d.n() == 0 || v < l.min {
		l.min = v
	}
	if l.d.n() == 0 || v > l.max {
		l.max, l.worst = v, s
	}
	if v < 0 {
		l.early++
	}
	l.sum += float64(v)
	l.d.add(v, ExactLags)
	if st < 0 {
		l.other++
		return
	}
	g := &l.stages[st]
	g.Count++
	g.MeanNs += float64(v)
	g.MinNs, g.MaxNs = min(g.MinNs, v), max(g.MaxNs, v)
}

// even reports whether at most half the matched y warps' stages are uneven
// (see lagAcc.warps).
func (l *lagAcc) even() bool { return l == nil || 2*l.uneven <= l.warps }

func (l *lagAcc) clone() *lagAcc {
	c := *l
	c.d = l.d.clone()
	if l.stageIdx != nil {
		c.stageIdx = make(map[uint16]int32, len(l.stageIdx))
		for k, v := range l.stageIdx {
			c.stageIdx[k] = v
		}
	}
	c.stages = slices.Clone(l.stages)
	return &c
}

func (l *lagAcc) result(x, y string) LagResult {
	r := LagResult{X: x, Y: y, Exact: true, Stages: []StageLag{}}
	if l == nil {
		return r
	}
	r.Count, r.Unmatched, r.Early, r.OtherStages = l.d.n(), l.unmatched, l.early, l.other
	if r.Count == 0 {
		return r
	}
	r.MeanNs = l.sum / float64(r.Count)
	r.MinNs, r.MaxNs, r.Worst = float64(l.min), float64(l.max), l.worst
	q, exact := l.d.quantiles()
	clamp := func(v float64) float64 { return min(max(v, r.MinNs), r.MaxNs) }
	r.P50Ns, r.P90Ns, r.P99Ns, r.Exact = clamp(q(0.50)), clamp(q(0.90)), clamp(q(0.99)), exact
	for _, s := range l.stages {
		if s.Count == 0 {
			continue
		}
		s.MeanNs /= float64(s.Count)
		r.Stages = append(r.Stages, s)
	}
	slices.SortFunc(r.Stages, func(a, b StageLag) int { return cmp.Compare(a.Payload, b.Payload) })
	return r
}

// Lag returns lag(x, y) over the warps added so far (see [LagResult]). x
// and y are series (see [Series]) of different range names.
func (a *Analyzer) Lag(x, y string) (LagResult, error) {
	xr, yr, xs, ys, err := a.pairOf("lag", x, y)
	if err != nil {
		return LagResult{}, err
	}
	if xr.name == yr.name {
		return LagResult{}, fmt.Errorf("lag(%s, %s): %w", x, y, errSameRange)
	}
	if ys < 0 {
		return (*lagAcc)(nil).result(x, y), nil
	}
	st := a.view()
	if xs < 0 {
		r := (*lagAcc)(nil).result(x, y)
		r.Unmatched = st.series[ys].ranges
		return r, nil
	}
	return st.pairs[xs][ys].lag.result(x, y), nil
}

// Bubble returns bubble(x, y) over the warps added so far (see
// [BubbleResult]). x and y are series (see [Series]).
func (a *Analyzer) Bubble(x, y string) (BubbleResult, error) {
	_, _, xs, ys, err := a.pairOf("bubble", x, y)
	if err != nil {
		return BubbleResult{}, err
	}
	return bubbleOf(a.view(), xs, ys, x, y), nil
}

func bubbleOf(st *ctaState, xs, ys int32, x, y string) BubbleResult {
	r := BubbleResult{X: x, Y: y}
	if ys < 0 {
		if xs >= 0 {
			r.SpanNs = st.series[xs].span
		}
		return r
	}
	s := &st.series[ys]
	r.YActiveNs = s.active
	if xs < 0 {
		r.BubbleNs, r.SpanNs, r.Worst = s.active, s.span, s.busiest
	} else {
		p := &st.pairs[xs][ys]
		r.BubbleNs, r.SpanNs, r.Worst = p.bubble, p.span, p.bworst
	}
	if r.SpanNs > 0 {
		r.Overall = float64(r.BubbleNs) / float64(r.SpanNs)
	}
	if r.YActiveNs > 0 {
		r.OfY = float64(r.BubbleNs) / float64(r.YActiveNs)
	}
	return r
}

// Pipeline returns lag(x, y) and bubble(x, y) for every ordered pair of
// tracked role series (x, y) of two different roles and range names, in the
// order of [Analyzer.OverlapMatrix]'s names: Lags keeps the pairs with
// matched ranges whose median lag is not negative (y follows x) but for a
// pair of which only one side has stages (a range with a payload other than
// 0): the other side's ranges carry no stage, and their payload 0 is not the
// first stage's; and but for a pair whose y warps mostly run another number
// of ranges of a stage than its x warps (a sync the producer waits at every
// tile against the consumers' one epilogue): the k-th of each is then not
// the k-th step of one pipeline. [Analyzer.Lag] measures any pair. Bubbles
// keeps the pairs with a bubble. Both are the caller's.
func (a *Analyzer) Pipeline() Pipeline {
	st := a.view()
	p := Pipeline{Lags: []LagResult{}, Bubbles: []BubbleResult{}}
	ids := a.matrixSeries(st)
	for _, x := range ids {
		sx := &st.series[x]
		for _, y := range ids {
			sy := &st.series[y]
			if sx.g == aggGroup || sy.g == aggGroup || sx.g == sy.g || sx.name == sy.name {
				continue
			}
			xl, yl := a.seriesLabel(sx.g, sx.name), a.seriesLabel(sy.g, sy.name)
			acc := st.pairs[x][y].lag
			if l := acc.result(xl, yl); sx.staged == sy.staged && l.Count > 0 && l.P50Ns >= 0 && acc.even() {
				p.Lags = append(p.Lags, l)
			}
			if b := bubbleOf(st, x, y, xl, yl); b.BubbleNs > 0 {
				p.Bubbles = append(p.Bubbles, b)
			}
		}
	}
	return p
}

// signedDurations holds values that may be negative: exact up to a limit,
// then two logarithmic histograms (values >= 0, and the magnitudes of the
// negative ones).
type signedDurations struct {
	exact    []int64
	sorted   bool
	pos, neg *logSketch
}

func (d *signedDurations) n() uint64 {
	if d.pos != nil {
		return d.pos.n + d.neg.n
	}
	return uint64(len(d.exact))
}

func (d *signedDurations) add(v int64, limit int) {
	if d.pos == nil {
		d.exact = append(d.exact, v)
		d.sorted = false
		if len(d.exact) <= limit {
			return
		}
		d.pos, d.neg = &logSketch{}, &logSketch{}
		for _, x := range d.exact {
			d.sketch(x)
		}
		d.exact = nil
		return
	}
	d.sketch(v)
}

func (d *signedDurations) sketch(v int64) {
	if v < 0 {
		d.neg.add(-v)
		return
	}
	d.pos.add(v)
}

func (d signedDurations) clone() signedDurations {
	d.exact = slices.Clone(d.exact)
	if d.pos != nil {
		p, n := *d.pos, *d.neg
		p.counts, n.counts = slices.Clone(p.counts), slices.Clone(n.counts)
		d.pos, d.neg = &p, &n
	}
	return d
}

// quantiles returns the nearest-rank quantile function and whether it is
// exact. It sorts the exact values in place.
func (d *signedDurations) quantiles() (func(float64) float64, bool) {
	if d.pos == nil {
		return exactQuantiles(d.exact, &d.sorted), true
	}
	pos, neg := d.pos, d.neg
	return func(p float64) float64 {
		n := pos.n + neg.n
		if n == 0 {
			return 0
		}
		r := nearestRank(p, n)
		if r <= neg.n { // the negatives come first, largest magnitude first
			return -neg.atRank(neg.n - r + 1)
		}
		return pos.atRank(r - neg.n)
	}, false
}

// atRank returns the value of rank r (1-based) of the histogram.
func (s *logSketch) atRank(r uint64) float64 {
	seen := s.zero
	if seen >= r {
		return 0
	}
	for j, c := range s.counts {
		seen += c
		if seen >= r {
			return 2 * math.Pow(sketchGamma, float64(s.off+j)) / (sketchGamma + 1)
		}
	}
	return 2 * math.Pow(sketchGamma, float64(s.off+len(s.counts)-1)) / (sketchGamma + 1)
}
