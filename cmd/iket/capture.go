package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/iket-trace/iket/trace"
)

// openCapture opens a capture; errors name the file.
func openCapture(path string) (*trace.Capture, error) {
	c, err := trace.Open(path)
	if err != nil {
		return nil, failWith(exitError, err)
	}
	return c, nil
}

// analysis is one decoding pass over a launch: the analyzer's statistics,
// the decoder's summary and clocks, and the violations found.
type analysis struct {
	Launch     *trace.Launch
	Analyzer   *trace.Analyzer
	Summary    trace.Summary
	Clocks     []trace.ClockFit
	Violations []trace.Violation
}

// maxKeptViolations bounds the violations one analysis keeps in memory; the
// summary still counts them all.
const maxKeptViolations = 1000

// analyze decodes launch i of c once, feeding an Analyzer and, when given,
// each of also (which must copy what they keep: the warp is reused).
func analyze(c *trace.Capture, i int, opt trace.Options, also ...func(*trace.Warp)) (*analysis, error) {
	if i < 0 || i >= c.NumLaunches() {
		return nil, failWith(exitError, fmt.Errorf("launch %d: capture has %d launches", i, c.NumLaunches()))
	}
	l := c.Launch(i)
	d, err := trace.NewDecoder(l, opt)
	if err != nil {
		return nil, failWith(exitError, err)
	}
	a := &analysis{Launch: l, Analyzer: trace.NewAnalyzer(l.Meta)}
	var w trace.Warp
	for {
		err := d.Next(&w)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, failWith(exitError, err)
		}
		a.Analyzer.Add(&w)
		for _, f := range also {
			f(&w)
		}
		for _, v := range w.Violations {
			if len(a.Violations) < maxKeptViolations {
				a.Violations = append(a.Violations, v)
			}
		}
	}
	a.Summary = d.Summary()
	a.Clocks = d.Clocks()
	return a, nil
}

// droppedText says how many events were dropped, "at least" when a warp's
// count saturated, and names the warps whose records cannot be trusted
// (lanes that disagreed, saturated counts): empty for neither.
func droppedText(s trace.Summary) string {
	out := fmt.Sprintf("%d dropped", s.Dropped)
	if s.CountSaturated > 0 {
		out = fmt.Sprintf("at least %d dropped (%d warps' counts saturated)", s.Dropped, s.CountSaturated)
	}
	if s.LanesDiverged > 0 {
		out += fmt.Sprintf(", %d warps whose lanes recorded different numbers of events (records may be overwritten; see tr.sync_lanes)", s.LanesDiverged)
	}
	return out
}
