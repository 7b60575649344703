package main

import (
	"bufio"
	"context"
	"fmt"

	"github.com/iket-trace/iket/internal/outfile"
	"github.com/iket-trace/iket/report"
	"github.com/iket-trace/iket/trace"
)

const reportFile = "report.html"

// writeReport writes the self-contained HTML report of launch i of c to
// path, through a temporary file (see internal/outfile). It decodes the
// launch once.
func writeReport(ctx context.Context, c *trace.Capture, i int, path string) error {
	a, col, err := analyzeForReport(ctx, c, i, trace.Options{})
	if err != nil {
		return err
	}
	return writeAnalysedReport(ctx, c, a, col, path)
}

// analyzeForReport decodes launch i of c once for both its analysis and
// its report's timeline: write the report with [writeAnalysedReport].
func analyzeForReport(ctx context.Context, c *trace.Capture, i int, opt trace.Options) (*trace.Analysis, *report.Collector, error) {
	if i < 0 || i >= c.NumLaunches() {
		return nil, nil, failWith(exitError, fmt.Errorf("report: launch %d: capture has %d launches", i, c.NumLaunches()))
	}
	col := report.NewCollector(c.Launch(i).Meta, report.Limits{})
	a, err := analyze(ctx, c, i, opt, col.Add)
	if err != nil {
		return nil, nil, err
	}
	return a, col, nil
}

// writeAnalysedReport writes the report of an analysis of c whose pass fed
// col to path, as writeReport does, without decoding again.
func writeAnalysedReport(ctx context.Context, c *trace.Capture, a *trace.Analysis, col *report.Collector, path string) error {
	f, err := outfile.CreateContext(ctx, path, c.Path())
	if err != nil {
		return failWith(exitError, fmt.Errorf("report: %w", err))
	}
	defer f.Abort()
	return commitReport(f, c, a, col)
}

// commitReport writes the report of a to f and commits it.
func commitReport(f *outfile.File, c *trace.Capture, a *trace.Analysis, col *report.Collector) error {
	in := &report.Input{
		Title:    fmt.Sprintf("iket: %s", a.Meta.Kernel),
		Meta:     &c.Meta,
		Launch:   a.Launch,
		Analysis: a,
	}
	if note := uncheckedNote(c); note != "" {
		in.Problems = append(in.Problems, note)
	}
	col.Fill(in)
	bw := bufio.NewWriter(f)
	if err := report.Write(bw, in); err != nil {
		return failWith(exitError, fmt.Errorf("report %s: %w", f.Name(), err))
	}
	if err := bw.Flush(); err != nil {
		return failWith(exitError, fmt.Errorf("report %s: %w", f.Name(), err))
	}
	if err := f.Commit(); err != nil {
		return failWith(exitError, fmt.Errorf("report: %w", err))
	}
	return nil
}
