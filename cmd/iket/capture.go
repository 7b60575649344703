package main

import (
	"context"
	"fmt"
	"io"

	"github.com/iket-trace/iket/internal/safe"
	"github.com/iket-trace/iket/trace"
)

// openCapture opens a capture, verifying its checksums; errors name the
// file. Reads fail once ctx is done, so a pass over it stops promptly.
func openCapture(ctx context.Context, path string) (*trace.Capture, error) {
	c, err := trace.OpenContext(ctx, path)
	if err != nil {
		return nil, failWith(exitError, err)
	}
	return c, nil
}

// uncheckedNote says, for a capture without checksums, that corruption of
// it cannot be detected; "" for a checked one.
func uncheckedNote(c *trace.Capture) string {
	if c.Checked() {
		return ""
	}
	return fmt.Sprintf("unchecked capture (file version %d, before checksums): damage to its bytes cannot be detected", c.FileVersion())
}

// pickLaunch resolves a --launch flag for a command that covers one
// launch: n < 0 (not given) is launch 0 when the capture has one launch
// and a usage error naming the count when it has several.
func pickLaunch(c *trace.Capture, n int, cmd string) (int, error) {
	k := c.NumLaunches()
	switch {
	case n < 0 && k == 1:
		return 0, nil
	case n < 0:
		return 0, failWith(exitError, fmt.Errorf("%s covers one launch and the capture has %d: give --launch 0 to %d", cmd, k, k-1))
	case n >= k:
		return 0, failWith(exitError, fmt.Errorf("--launch %d: capture has %d launches (0 to %d)", n, k, k-1))
	}
	return n, nil
}

// analyze decodes launch i of c once ([trace.Analyze]), feeding the
// analysis and each of also (which copy what they keep: the warp is
// reused). Errors other than ctx's exit with [exitError].
func analyze(ctx context.Context, c *trace.Capture, i int, opt trace.Options, also ...func(*trace.Warp)) (*trace.Analysis, error) {
	if i < 0 || i >= c.NumLaunches() {
		return nil, failWith(exitError, fmt.Errorf("launch %d: capture has %d launches", i, c.NumLaunches()))
	}
	a, err := trace.Analyze(ctx, c.Launch(i), opt, also...)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, failWith(exitError, err)
	}
	return a, nil
}

// writeExcluded prints the warps an analysis left out, the first few in
// full.
func writeExcluded(w io.Writer, a *trace.Analysis) {
	if a.NumExcluded == 0 {
		return
	}
	fmt.Fprintf(w, "\n%d warps excluded from the statistics (their records cannot be trusted):\n", a.NumExcluded)
	for i, e := range a.Excluded {
		if i == 10 {
			fmt.Fprintf(w, "  and %d more\n", a.NumExcluded-10)
			break
		}
		fmt.Fprintf(w, "  %s\n", safeText(e))
	}
}

// droppedText says how many events were dropped, "at least" when a warp's
// count saturated, how many were recorded without lane 0, and names the
// warps whose records cannot be trusted (records maybe overwritten).
func droppedText(s trace.Summary) string {
	out := fmt.Sprintf("%d dropped", s.Dropped)
	if s.CountSaturated > 0 {
		out = fmt.Sprintf("at least %d dropped (%d warps' counts saturated)", s.Dropped, s.CountSaturated)
	}
	if s.Side > 0 {
		out += fmt.Sprintf(", %d recorded without lane 0 (stored apart and merged by time)", s.Side)
	}
	if s.LanesDiverged > 0 {
		out += fmt.Sprintf(", %d warps whose records may be overwritten (lanes that disagreed, or side events of several lanes; iket validate names them)", s.LanesDiverged)
	}
	return out
}

// safeName returns s fit for a terminal table ([safe.Name]).
func safeName(s string) string { return safe.Name(s) }

// safeText is [safeName] for messages of several lines ([safe.Text]).
func safeText(s string) string { return safe.Text(s) }
