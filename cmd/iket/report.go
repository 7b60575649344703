package main

import (
	"bufio"
	"fmt"
	"os"

	"github.com/iket-trace/iket/report"
	"github.com/iket-trace/iket/trace"
)

const reportFile = "report.html"

// writeReport writes the self-contained HTML report of launch i of c.
func writeReport(c *trace.Capture, i int, path string) (err error) {
	if i < 0 || i >= c.NumLaunches() {
		return failWith(exitError, fmt.Errorf("report: launch %d: capture has %d launches", i, c.NumLaunches()))
	}
	col := report.NewCollector(c.Launch(i).Meta, report.Limits{})
	a, err := analyze(c, i, trace.Options{}, col.Add)
	if err != nil {
		return err
	}
	names, m := a.Analyzer.OverlapMatrix()
	in := &report.Input{
		Title:      fmt.Sprintf("iket: %s", a.Launch.Meta.Kernel),
		Meta:       &c.Meta,
		Launch:     i,
		Stats:      report.StatRowsFrom(a.Analyzer.Stats()),
		Overlap:    &report.OverlapMatrix{Names: names, Share: m},
		Drops:      report.DropsFrom(a.Summary),
		Clocks:     report.ClockRowsFrom(a.Clocks),
		Violations: report.ViolationRowsFrom(a.Summary),
	}
	for _, v := range a.Violations {
		if len(in.Problems) == 20 {
			in.Problems = append(in.Problems, fmt.Sprintf("and %d more", a.Summary.TotalViolations()-20))
			break
		}
		in.Problems = append(in.Problems, v.Error())
	}
	col.Fill(in)
	f, err := os.Create(path)
	if err != nil {
		return failWith(exitError, fmt.Errorf("report: %w", err))
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = failWith(exitError, fmt.Errorf("report: %w", cerr))
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	bw := bufio.NewWriter(f)
	if err := report.Write(bw, in); err != nil {
		return failWith(exitError, fmt.Errorf("report %s: %w", path, err))
	}
	if err := bw.Flush(); err != nil {
		return failWith(exitError, fmt.Errorf("report %s: %w", path, err))
	}
	return nil
}
