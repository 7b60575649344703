package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/iket-trace/iket/perfetto"
	"github.com/iket-trace/iket/trace"
)

// Output file names inside the output folder.
const (
	captureFile = "trace.iket"
	pftraceFile = "trace.pftrace"
	latencyFile = "latency.json"
)

// latencyJSON is latency.json: the comparison of the two builds with the
// device and the conditions it ran under.
type latencyJSON struct {
	Kernel  string         `json:"kernel"`
	Grid    [3]uint32      `json:"grid"`
	Block   [3]uint32      `json:"block"`
	Device  *trace.Device  `json:"device,omitempty"`
	Latency *trace.Latency `json:"latency"`
	Source  string         `json:"source"` // "measured" or "bundled capture"
}

// writeOutputs writes the pftrace and latency.json next to the capture at
// dir/trace.iket and prints a summary of the first launch.
func writeOutputs(dir string, source string, stdout io.Writer) error {
	capPath := filepath.Join(dir, captureFile)
	c, err := openCapture(capPath)
	if err != nil {
		return err
	}
	defer c.Close()
	pf := filepath.Join(dir, pftraceFile)
	if err := writeExport(c, pf, "pftrace", perfetto.Options{Flows: true, Counters: true}); err != nil {
		return err
	}
	l := c.Launch(0).Meta
	if l.Latency == nil { // no timing this time: leave no older numbers behind
		if err := os.Remove(filepath.Join(dir, latencyFile)); err != nil && !os.IsNotExist(err) {
			return failWith(exitError, fmt.Errorf("remove stale %s: %w", latencyFile, err))
		}
	}
	if l.Latency != nil {
		b, err := json.MarshalIndent(latencyJSON{
			Kernel: l.Kernel, Grid: l.Grid, Block: l.Block, Device: c.Meta.Device, Latency: l.Latency, Source: source,
		}, "", "  ")
		if err != nil {
			return failWith(exitError, fmt.Errorf("encode %s: %w", latencyFile, err))
		}
		if err := os.WriteFile(filepath.Join(dir, latencyFile), append(b, '\n'), 0o644); err != nil {
			return failWith(exitError, fmt.Errorf("write %s: %w", latencyFile, err))
		}
	}
	if err := writeReport(c, 0, filepath.Join(dir, reportFile)); err != nil {
		return err
	}
	a, err := analyze(c, 0, trace.Options{})
	if err != nil {
		return err
	}
	names, m := a.Analyzer.OverlapMatrix()
	if d := c.Meta.Device; d != nil {
		fmt.Fprintf(stdout, "device: %s, driver %s, CUDA %s\n", d.Name, d.Driver, d.CUDA)
	}
	writeStatsTable(stdout, a, names, m)
	if len(a.Violations) > 0 {
		fmt.Fprintf(stdout, "\n%d pairing violations, the first: %v\n", a.Summary.TotalViolations(), a.Violations[0])
	}
	fmt.Fprintf(stdout, "\nwrote %s, %s, %s", capPath, pf, filepath.Join(dir, reportFile))
	if l.Latency != nil {
		fmt.Fprintf(stdout, ", %s", filepath.Join(dir, latencyFile))
	}
	fmt.Fprintln(stdout)
	return nil
}
