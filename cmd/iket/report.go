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
// path, through a temporary file (see internal/outfile); inputs are the
// files path must not be.
func writeReport(ctx context.Context, c *trace.Capture, i int, path string, inputs ...string) (err error) {
	if i < 0 || i >= c.NumLaunches() {
		return failWith(exitError, fmt.Errorf("report: launch %d: capture has %d launches", i, c.NumLaunches()))
	}
	col := report.NewCollector(c.Launch(i).Meta, report.Limits{})
	f, err := outfile.CreateContext(ctx, path, append(inputs, c.Path())...)
	if err != nil {
		return failWith(exitError, fmt.Errorf("report: %w", err))
	}
	defer f.Abort()
	a, err := analyze(ctx, c, i, trace.Options{}, col.Add)
	if err != nil {
		return err
	}
	names, m := a.Analyzer.OverlapMatrix()
	in := &report.Input{
		Title:      fmt.Sprintf("iket: %s", a.Meta.Kernel),
		Meta:       &c.Meta,
		Launch:     i,
		Stats:      report.StatRowsFrom(a.Analyzer.Stats()),
		Overlap:    &report.OverlapMatrix{Names: names, Share: m},
		Drops:      report.DropsFrom(a.Summary),
		Clocks:     report.ClockRowsFrom(a.Clocks),
		Violations: report.ViolationRowsFrom(a.Summary),
	}
	if note := uncheckedNote(c); note != "" {
		in.Problems = append(in.Problems, note)
	}
	for _, e := range a.Excluded {
		if len(in.Problems) >= 10 {
			in.Problems = append(in.Problems, fmt.Sprintf("%d warps excluded from the statistics in all", a.NumExcluded))
			break
		}
		in.Problems = append(in.Problems, "excluded: "+e)
	}
	for _, v := range a.Violations {
		if len(in.Problems) == 20 {
			in.Problems = append(in.Problems, fmt.Sprintf("and %d more", a.Summary.TotalViolations()-20))
			break
		}
		in.Problems = append(in.Problems, v.Error())
	}
	col.Fill(in)
	bw := bufio.NewWriter(f)
	if err := report.Write(bw, in); err != nil {
		return failWith(exitError, fmt.Errorf("report %s: %w", path, err))
	}
	if err := bw.Flush(); err != nil {
		return failWith(exitError, fmt.Errorf("report %s: %w", path, err))
	}
	if err := f.Commit(); err != nil {
		return failWith(exitError, fmt.Errorf("report: %w", err))
	}
	return nil
}
