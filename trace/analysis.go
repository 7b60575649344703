package trace

import (
	"context"
	"fmt"
)

// Analysis is one launch decoded once: what statistics, checks and reports
// read. [Analyze] builds it in one pass of a [Decoder]; tests and other
// callers may fill it themselves (then a nil Analyzer means no warp
// statistics).
type Analysis struct {
	// Launch is the launch's index in its capture and Meta its metadata.
	Launch int
	Meta   *LaunchMeta
	// Analyzer holds the statistics, overlap, order, lag, bubbles,
	// pipeline and drops of the warps that were added to it: every warp of
	// the pass but those in Excluded.
	Analyzer *Analyzer
	// Summary is the decoder's count of the pass ([Decoder.Summary]),
	// Clocks its per-SM clock fits and Window the launch's common window.
	Summary Summary
	Clocks  []ClockFit
	Window  Window
	// Violations are the pass's first [MaxAnalysisViolations] violations,
	// in slot order; Summary counts them all.
	Violations []Violation
	// Excluded says, for the first [MaxAnalysisViolations] warps left out
	// of the Analyzer, which warp and why: a slot whose bytes broke the
	// format ([WarpError]) or a warp whose records may be overwritten
	// ([Warp.Overwritten]). NumExcluded counts them all.
	Excluded    []string
	NumExcluded int
}

// MaxAnalysisViolations bounds the violations, and the excluded warps, an
// [Analysis] keeps.
const MaxAnalysisViolations = 1000

// Analyze decodes launch l once with opt and returns its [Analysis]. Each
// warp added to the Analyzer is also passed to every function of also, in
// slot order; w is reused, so they copy what they keep. A slot that cannot
// be read, or a failing index, stops the pass with an error; a slot whose
// bytes break the format is excluded, not an error. Analyze checks ctx
// between warps and returns ctx's error once it is done.
func Analyze(ctx context.Context, l *Launch, opt Options, also ...func(w *Warp)) (*Analysis, error) {
	d, err := NewDecoder(l, opt)
	if err != nil {
		return nil, fmt.Errorf("analyze: %w", err)
	}
	a := &Analysis{Launch: l.Index, Meta: l.Meta, Analyzer: NewAnalyzer(l.Meta), Clocks: d.Clocks(), Window: d.Window()}
	exclude := func(why string) {
		if a.NumExcluded < MaxAnalysisViolations {
			a.Excluded = append(a.Excluded, why)
		}
		a.NumExcluded++
	}
	err = d.Each(func(w *Warp) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if n := min(len(w.Violations), MaxAnalysisViolations-len(a.Violations)); n > 0 {
			a.Violations = append(a.Violations, w.Violations[:n]...)
		}
		if note := w.LeftOut(); note != "" {
			exclude(fmt.Sprintf("launch %d %s", w.Launch, note))
			return nil
		}
		a.Analyzer.Add(w)
		for _, f := range also {
			f(w)
		}
		return nil
	}, func(we *WarpError) error {
		if we.Err != nil { // a read failed: the capture, not the slot
			if err := ctx.Err(); err != nil {
				return err
			}
			return we
		}
		exclude(we.Error())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("analyze launch %d (%s): %w", l.Index, l.Meta.Kernel, err)
	}
	a.Summary = d.Summary()
	return a, nil
}
