package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

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

// analysis is one decoding pass over a launch: the analyzer's statistics,
// the decoder's summary and clocks, and the violations found.
type analysis struct {
	Launch     *trace.Launch
	Analyzer   *trace.Analyzer
	Summary    trace.Summary
	Clocks     []trace.ClockFit
	Violations []trace.Violation
	// Excluded lists the warps left out of the statistics because their
	// records cannot be trusted (the first maxKeptViolations), each with
	// why; NumExcluded counts them all.
	Excluded    []string
	NumExcluded int
}

// maxKeptViolations bounds the violations one analysis keeps in memory; the
// summary still counts them all.
const maxKeptViolations = 1000

// analyze decodes launch i of c once, feeding an Analyzer and, when given,
// each of also (which must copy what they keep: the warp is reused). A warp
// whose slot breaks the format ([trace.WarpError]) or whose lanes recorded
// different numbers of events (records may be overwritten) is left out of
// the Analyzer and of also, and listed in Excluded. It stops with ctx's
// error once ctx is done.
func analyze(ctx context.Context, c *trace.Capture, i int, opt trace.Options, also ...func(*trace.Warp)) (*analysis, error) {
	if i < 0 || i >= c.NumLaunches() {
		return nil, failWith(exitError, fmt.Errorf("launch %d: capture has %d launches", i, c.NumLaunches()))
	}
	l := c.Launch(i)
	d, err := trace.NewDecoder(l, opt)
	if err != nil {
		return nil, failWith(exitError, err)
	}
	a := &analysis{Launch: l, Analyzer: trace.NewAnalyzer(l.Meta)}
	exclude := func(why string) {
		if a.NumExcluded < maxKeptViolations {
			a.Excluded = append(a.Excluded, why)
		}
		a.NumExcluded++
	}
	var w trace.Warp
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		err := d.Next(&w)
		if errors.Is(err, io.EOF) {
			break
		}
		var we *trace.WarpError
		if errors.As(err, &we) && we.Err == nil {
			exclude(we.Error())
			continue
		}
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return nil, cerr
			}
			return nil, failWith(exitError, err)
		}
		for _, v := range w.Violations {
			if len(a.Violations) < maxKeptViolations {
				a.Violations = append(a.Violations, v)
			}
		}
		if w.LanesDiverged {
			exclude(fmt.Sprintf("launch %d warp %d (sm %d, cta %d,%d,%d, warp %d): lanes recorded different numbers of events, so records may be overwritten",
				w.Launch, w.Slot, w.SM, w.CTA[0], w.CTA[1], w.CTA[2], w.Warp))
			continue
		}
		a.Analyzer.Add(&w)
		for _, f := range also {
			f(&w)
		}
	}
	a.Summary = d.Summary()
	a.Clocks = d.Clocks()
	return a, nil
}

// writeExcluded prints the warps an analysis left out, the first few in
// full.
func writeExcluded(w io.Writer, a *analysis) {
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

// safeName returns s fit for a terminal table: control characters
// (terminal escapes among them), other non-printing runes and invalid
// UTF-8 are written as Go escapes (\x1b, \u200b).
func safeName(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsPrint(r):
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}

// safeText is [safeName] for messages of several lines: each line is made
// safe and the line breaks are kept.
func safeText(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = safeName(l)
	}
	return strings.Join(lines, "\n")
}
