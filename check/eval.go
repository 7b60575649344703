package check

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/iket-trace/iket/trace"
)

// Result is the outcome of one rule.
type Result struct {
	Rule Rule `json:"rule"`
	Pass bool `json:"pass"`
	// Value is what was measured: a ratio, a duration in ns, a count, or the
	// number of violations for strict, no_drops and before; Bound what it was
	// compared with.
	Value float64 `json:"value"`
	Bound float64 `json:"bound"`
	// Worst locates the worst offender (a CTA, a warp, a range), "" when
	// there is none.
	Worst   string `json:"worst,omitempty"`
	Message string `json:"message"`
	// BaselineValue is the baseline's measure, for rules relative to one.
	BaselineValue *float64 `json:"baseline_value,omitempty"`

	failed bool // the rule could not be evaluated
}

// Evaluate evaluates every rule against the analysis of one launch
// ([trace.Analyze]) and returns one Result per rule, in order. Rules
// relative to a baseline ("p50(consumer:compute) <= 1.05 * baseline")
// measure their bound on baseline, which may be nil when there are none. A
// rule that cannot be evaluated (an unknown range or role, a range that
// never ran, no latency measurement, no analyzer, no baseline) fails with
// a message saying why. in may be nil: then only strict, latency_ratio,
// dormant_ratio and control_ratio can pass.
func Evaluate(rules []Rule, in, baseline *trace.Analysis) []Result {
	if in == nil {
		in = &trace.Analysis{}
	}
	out := make([]Result, 0, len(rules))
	for _, r := range rules {
		res := Result{Rule: r, Bound: r.Bound}
		if r.Baseline && !baselineBound(&res, baseline) {
			out = append(out, res)
			continue
		}
		eval(&res, in)
		if math.IsNaN(res.Value) || math.IsInf(res.Value, 0) {
			res.Value = 0
		}
		out = append(out, res)
	}
	return out
}

// baselineBound sets res.Bound to the rule's factor times its measure on
// the baseline, or fails res and returns false.
func baselineBound(res *Result, baseline *trace.Analysis) bool {
	r := &res.Rule
	switch {
	case baseline == nil:
		res.fail("the rule is relative to a baseline and none was given (iket check --baseline BASE.iket)")
		return false
	case r.Kind == KindStrict || r.Kind == KindNoDrops || r.Kind == KindBefore:
		res.fail("%s takes no comparison, so no baseline", r.Func)
		return false
	}
	b := Result{Rule: *r}
	eval(&b, baseline)
	if b.failed {
		res.fail("on the baseline: %s", b.Message)
		return false
	}
	v := b.Value
	res.BaselineValue = &v
	res.Bound = r.Factor * v
	return true
}

// compare sets Pass from Value Op Bound.
func (res *Result) compare() { res.Pass = res.Rule.Op.Holds(res.Value, res.Bound) }

func (res *Result) fail(format string, a ...any) {
	res.Pass, res.failed = false, true
	res.Message = fmt.Sprintf(format, a...)
}

func eval(res *Result, in *trace.Analysis) {
	r := &res.Rule
	if in.Analyzer == nil && r.Kind != KindStrict && !r.Kind.latency() {
		res.fail("no analysis to check %s against", r.Func)
		return
	}
	switch r.Kind {
	case KindStrict:
		evalStrict(res, in)
	case KindNoDrops:
		evalNoDrops(res, in)
	case KindOverlap, KindOverlapMinCTA:
		evalOverlap(res, in)
	case KindDuration:
		evalDuration(res, in)
	case KindCount:
		evalCount(res, in)
	case KindBefore:
		evalBefore(res, in)
	case KindLatencyRatio, KindDormantRatio, KindControlRatio:
		evalLatency(res, in)
	case KindLag:
		evalLag(res, in)
	case KindBubble:
		evalBubble(res, in)
	default:
		res.fail("unknown rule kind %v", r.Kind)
	}
}

// evalStrict: every violation but drops, plus corrupt warp slots.
func evalStrict(res *Result, in *trace.Analysis) {
	s := in.Summary
	var kinds []string
	n := 0
	for k, c := range s.Violations {
		if k != trace.DroppedEvents && c > 0 {
			n += c
			kinds = append(kinds, fmt.Sprintf("%d %s", c, k))
		}
	}
	if n == 0 { // a summary-less input: count the listed violations
		byKind := map[trace.ViolationKind]int{}
		for _, v := range in.Violations {
			if v.Kind != trace.DroppedEvents {
				n++
				byKind[v.Kind]++
			}
		}
		for k, c := range byKind {
			kinds = append(kinds, fmt.Sprintf("%d %s", c, k))
		}
	}
	slices.Sort(kinds)
	res.Value = float64(n + s.WarpErrors)
	res.Pass = res.Value == 0
	for _, v := range in.Violations {
		if v.Kind != trace.DroppedEvents {
			res.Worst = v.Error()
			break
		}
	}
	switch {
	case res.Pass:
		res.Message = fmt.Sprintf("no pairing violations in %d warps", s.Warps)
	case s.WarpErrors > 0 && n == 0:
		res.Message = fmt.Sprintf("%d corrupt warp slots", s.WarpErrors)
	case s.WarpErrors > 0:
		res.Message = fmt.Sprintf("%d violations (%s) and %d corrupt warp slots", n, strings.Join(kinds, ", "), s.WarpErrors)
	default:
		res.Message = fmt.Sprintf("%d violations (%s)", n, strings.Join(kinds, ", "))
	}
}

func evalNoDrops(res *Result, in *trace.Analysis) {
	d := in.Analyzer.Drops()
	res.Value = float64(max(d.Total, in.Summary.Dropped))
	res.Pass = res.Value == 0
	atLeast := ""
	if d.AtLeast {
		atLeast = "at least " // a warp's event counter saturated
	}
	if w, ok := d.Worst(); ok {
		of := ""
		if w.AtLeast {
			of = "at least "
		}
		res.Worst = fmt.Sprintf("%s dropped %s%d of %s%d events", w.WarpRef, of, w.Dropped, of, w.Count)
	}
	if res.Pass {
		res.Message = fmt.Sprintf("no events dropped (%d recorded)", d.Attempted)
		return
	}
	res.Message = fmt.Sprintf("%s%d of %s%d events dropped in %d warps (capacity %d, %s mode)",
		atLeast, uint64(res.Value), atLeast, d.Attempted, len(d.Warps), metaCapacity(in), metaMode(in))
}

func metaCapacity(in *trace.Analysis) uint32 {
	if in.Meta == nil {
		return 0
	}
	return in.Meta.Capacity
}

func metaMode(in *trace.Analysis) trace.Mode {
	if in.Meta == nil {
		return "unknown"
	}
	return in.Meta.Mode
}

func ctaString(c trace.CTAOverlap) string {
	return fmt.Sprintf("cta %d,%d,%d: %.3f (%d of %d ns)", c.CTA[0], c.CTA[1], c.CTA[2], c.Share, c.OverlappedNs, c.ActiveNs)
}

func evalOverlap(res *Result, in *trace.Analysis) {
	r := &res.Rule
	o, err := in.Analyzer.Overlap(r.Args[0], r.Args[1])
	if err != nil {
		res.fail("%v", err)
		return
	}
	if o.ActiveNs == 0 {
		res.fail("range %s never ran (no time to measure overlap over)", r.Args[0])
		return
	}
	res.Worst = ctaString(o.Worst)
	if r.Kind == KindOverlap {
		res.Value = o.Overall
		res.compare()
		res.Message = fmt.Sprintf("%s is active on another warp during %.1f%% of %s's time (%d of %d ns over %d CTAs)",
			r.Args[1], 100*o.Overall, r.Args[0], o.OverlappedNs, o.ActiveNs, o.CTAs)
		return
	}
	res.Value = o.MinCTA
	res.compare()
	res.Message = fmt.Sprintf("lowest CTA overlap %.3f (overall %.3f over %d CTAs)", o.MinCTA, o.Overall, o.CTAs)
}

func evalDuration(res *Result, in *trace.Analysis) {
	r := &res.Rule
	s, err := in.Analyzer.RangeStat(r.Role, r.Args[0])
	if err != nil {
		res.fail("%v", err)
		return
	}
	who := ""
	if r.Role != "" {
		who = " on role " + r.Role
	}
	if s.Count == 0 {
		res.fail("no %s ranges%s: nothing to measure", r.Args[0], who)
		return
	}
	switch r.Func {
	case "p50":
		res.Value = s.P50Ns
	case "p90":
		res.Value = s.P90Ns
	case "p99":
		res.Value = s.P99Ns
	case "mean":
		res.Value = s.MeanNs
	case "min":
		res.Value = s.MinNs
	case "max":
		res.Value = s.MaxNs
	}
	res.compare()
	res.Worst = fmt.Sprintf("longest %s on %s", FormatNs(s.MaxNs), s.LongestWarp)
	approx := ""
	if !s.Exact && r.Func[0] == 'p' {
		approx = fmt.Sprintf(" (within %.1f%%)", 100*trace.SketchRelativeError)
	}
	res.Message = fmt.Sprintf("%s of %d %s ranges%s is %s%s", r.Func, s.Count, r.Args[0], who, FormatNs(res.Value), approx)
}

func evalCount(res *Result, in *trace.Analysis) {
	r := &res.Rule
	s, err := in.Analyzer.RangeStat(r.Role, r.Args[0])
	if err != nil {
		res.fail("%v", err)
		return
	}
	if r.Role == "" {
		res.Value = float64(s.Count)
		res.compare()
		res.Message = fmt.Sprintf("%d %s ranges in %d warps", s.Count, r.Args[0], s.Warps)
		return
	}
	// Every warp of the role: the extreme that can break the bound.
	lo, hi := float64(s.MinPerWarp), float64(s.MaxPerWarp)
	res.Value, res.Worst = lo, fmt.Sprintf("%s ran %d", s.MinWarp, s.MinPerWarp)
	switch r.Op {
	case OpLE, OpLT:
		res.Value, res.Worst = hi, fmt.Sprintf("%s ran %d", s.MaxWarp, s.MaxPerWarp)
	case OpEQ:
		if lo == res.Bound {
			res.Value, res.Worst = hi, fmt.Sprintf("%s ran %d", s.MaxWarp, s.MaxPerWarp)
		}
	}
	res.Pass = r.Op.Holds(lo, res.Bound) && r.Op.Holds(hi, res.Bound)
	res.Message = fmt.Sprintf("the %d warps of role %s ran %d to %d %s ranges each", s.RoleWarps, r.Role, s.MinPerWarp, s.MaxPerWarp, r.Args[0])
}

func evalBefore(res *Result, in *trace.Analysis) {
	r := &res.Rule
	o, err := in.Analyzer.Order(r.Args[0], r.Args[1])
	if err != nil {
		res.fail("%v", err)
		return
	}
	if o.Checked == 0 {
		res.fail("range %s never ran: nothing to check", r.Args[1])
		return
	}
	res.Value = float64(o.Violations)
	res.Pass = o.Violations == 0
	if o.Worst != nil {
		res.Worst = o.Worst.String()
	}
	res.Message = fmt.Sprintf("%d of %d %s ranges started before their matching %s ended", o.Violations, o.Checked, r.Args[1], r.Args[0])
}

func evalLag(res *Result, in *trace.Analysis) {
	r := &res.Rule
	l, err := in.Analyzer.Lag(r.Args[0], r.Args[1])
	if err != nil {
		res.fail("%v", err)
		return
	}
	if l.Count == 0 {
		res.fail("no %s range matched a %s range of its stage (%d unmatched): nothing to measure", r.Args[1], r.Args[0], l.Unmatched)
		return
	}
	switch r.Func {
	case "p50":
		res.Value = l.P50Ns
	case "p90":
		res.Value = l.P90Ns
	case "p99":
		res.Value = l.P99Ns
	case "mean":
		res.Value = l.MeanNs
	case "min":
		res.Value = l.MinNs
	case "max":
		res.Value = l.MaxNs
	}
	res.compare()
	w := l.Worst
	res.Worst = fmt.Sprintf("cta %d,%d,%d stage %d: %s started %s after %s ended on %s", w.CTA[0], w.CTA[1], w.CTA[2], w.Payload, w.Y, FormatNs(float64(w.LagNs)), r.Args[0], w.X)
	approx := ""
	if !l.Exact && r.Func[0] == 'p' {
		approx = fmt.Sprintf(" (within %.1f%%)", 100*trace.SketchRelativeError)
	}
	res.Message = fmt.Sprintf("%s of the lag from %s's end to %s's start over %d stages' ranges is %s%s (%d started early, %d unmatched)",
		r.Func, r.Args[0], r.Args[1], l.Count, FormatNs(res.Value), approx, l.Early, l.Unmatched)
}

func evalBubble(res *Result, in *trace.Analysis) {
	r := &res.Rule
	b, err := in.Analyzer.Bubble(r.Args[0], r.Args[1])
	if err != nil {
		res.fail("%v", err)
		return
	}
	if b.SpanNs == 0 {
		res.fail("neither %s nor %s ran: no time to measure a bubble over", r.Args[0], r.Args[1])
		return
	}
	res.Value = b.Overall
	res.compare()
	if b.BubbleNs > 0 {
		w := b.Worst
		res.Worst = fmt.Sprintf("cta %d,%d,%d: %.3f (%d of %d ns)", w.CTA[0], w.CTA[1], w.CTA[2], w.Share, w.BubbleNs, w.SpanNs)
	}
	res.Message = fmt.Sprintf("%s is active with %s on no warp during %.1f%% of the CTAs' time (%d of %d ns; %.1f%% of %s's time)",
		r.Args[1], r.Args[0], 100*b.Overall, b.BubbleNs, b.SpanNs, 100*b.OfY, r.Args[1])
}

// ErrNoLatency is the reason a latency_ratio rule fails on a capture without
// a latency measurement.
var ErrNoLatency = errors.New("the capture has no latency measurement (iket run times the instrumented and uninstrumented builds and stores it)")

// evalLatency: latency_ratio, dormant_ratio and control_ratio, a timed
// build's median over the uninstrumented build's.
func evalLatency(res *Result, in *trace.Analysis) {
	var l *trace.Latency
	if in.Meta != nil {
		l = in.Meta.Latency
	}
	if l == nil {
		res.fail("%v", ErrNoLatency)
		return
	}
	build, s, ratio, n, of := "instrumented", &l.Instrumented, l.Ratio, len(l.Uninstrumented.RoundsUS), "rounds"
	switch res.Rule.Kind {
	case KindDormantRatio:
		// dormant_ratio: the instrumented build timed untraced (iket run
		// --dormant), its launches paired with the uninstrumented ones.
		if l.Dormant == nil {
			res.fail("%v", ErrNoDormant)
			return
		}
		build, s, ratio, n, of = "instrumented, not traced", l.Dormant, l.DormantRatio, len(l.Dormant.RoundsUS), "launches"
	case KindControlRatio:
		// control_ratio: the uninstrumented build again (iket run KERNEL's
		// control, iket run -- CMD --control): this timing's noise.
		if l.Control == nil {
			res.fail("%v", ErrNoControl)
			return
		}
		build, s, ratio, n = "uninstrumented again", l.Control, l.ControlRatio, len(l.Control.RoundsUS)
	}
	res.Value = ratio
	res.compare()
	res.Message = fmt.Sprintf("%s %.3f us / uninstrumented %.3f us (medians of %d %s) = %.4f",
		build, s.MedianUS, l.Uninstrumented.MedianUS, n, of, ratio)
}

// ErrNoControl is the reason a control_ratio rule fails on a capture
// without a control's times.
var ErrNoControl = errors.New("the capture has no control times (iket run KERNEL times a control unless --no-control; iket run -- CMD --baseline PLAIN --control)")

// ErrNoDormant is the reason a dormant_ratio rule fails on a capture
// without the instrumented build's untraced times.
var ErrNoDormant = errors.New("the capture has no untraced times of the instrumented build (iket run -- CMD --baseline PLAIN --dormant stores them)")

// FormatNs prints a duration in ns with a readable unit: 950ns, 2.31us,
// 1.50ms, 2.000s.
func FormatNs(ns float64) string {
	a := math.Abs(ns)
	switch {
	case a >= 1e9:
		return fmt.Sprintf("%.3fs", ns/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.2fms", ns/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.2fus", ns/1e3)
	}
	return fmt.Sprintf("%gns", math.Round(ns*100)/100)
}
