package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/iket-trace/iket/internal/outfile"
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
	// Resources are the traced build's (the latency holds the
	// uninstrumented build's).
	Resources *trace.Resources `json:"resources,omitempty"`
	Source    string           `json:"source"` // "measured" or "bundled capture"
}

// openWithPftrace opens dir/trace.iket and writes dir/trace.pftrace from it;
// the caller closes the capture.
func openWithPftrace(ctx context.Context, dir string) (*trace.Capture, error) {
	c, err := openCapture(ctx, filepath.Join(dir, captureFile))
	if err != nil {
		return nil, err
	}
	if err := writeExport(ctx, c, filepath.Join(dir, pftraceFile), "pftrace", perfetto.Options{}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// writeOutputs writes the pftrace, report.html and latency.json next to the
// capture at dir/trace.iket and prints a summary of its launch (run and demo
// write captures of one launch). Each output goes through a temporary file.
// The launch is decoded twice: by the pftrace exporter, which streams it,
// and once for the report and the summary.
func writeOutputs(ctx context.Context, dir string, source string, stdout io.Writer) error {
	c, err := openWithPftrace(ctx, dir)
	if err != nil {
		return err
	}
	defer c.Close()
	capPath, pf := filepath.Join(dir, captureFile), filepath.Join(dir, pftraceFile)
	launch, err := pickLaunch(c, -1, "the summary")
	if err != nil {
		return err
	}
	l := c.Launch(launch).Meta
	if l.Latency == nil { // no timing this time: leave no older numbers behind
		if err := removeStale(filepath.Join(dir, latencyFile)); err != nil {
			return err
		}
	}
	if l.Latency != nil {
		b, err := json.MarshalIndent(latencyJSON{
			Kernel: l.Kernel, Grid: l.Grid, Block: l.Block, Device: c.Meta.Device, Latency: l.Latency, Resources: l.Resources, Source: source,
		}, "", "  ")
		if err != nil {
			return failWith(exitError, fmt.Errorf("encode %s: %w", latencyFile, err))
		}
		if err := outfile.WriteFile(ctx, filepath.Join(dir, latencyFile), append(b, '\n'), capPath); err != nil {
			return failWith(exitError, fmt.Errorf("write %s: %w", latencyFile, err))
		}
	}
	// One pass feeds the report and the summary below.
	a, col, err := analyzeForReport(ctx, c, launch, trace.Options{})
	if err != nil {
		return err
	}
	if err := writeAnalysedReport(ctx, c, a, col, filepath.Join(dir, reportFile)); err != nil {
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

// removeStale removes an output an earlier run left in the output folder
// when this run has none to replace it with: only a regular file (never a
// link's target, a device or a folder), and nothing when it is absent.
func removeStale(path string) error {
	st, err := os.Lstat(path)
	switch {
	case os.IsNotExist(err):
		return nil
	case err != nil:
		return failWith(exitError, fmt.Errorf("remove stale %s: %w", path, err))
	case !st.Mode().IsRegular():
		return failWith(exitError, fmt.Errorf("remove stale %s: not a regular file (%s); iket leaves it alone, remove it yourself", path, st.Mode().Type()))
	}
	if err := os.Remove(path); err != nil {
		return failWith(exitError, fmt.Errorf("remove stale %s: %w", path, err))
	}
	return nil
}

// groupDir matches the folder iket run -- CMD writes per process and GPU
// when a run traced several (pid123-gpu0).
var groupDir = regexp.MustCompile(`^pid[0-9]+-gpu[0-9]+$`)

// clearEarlierRun removes from out what an earlier iket run -- CMD wrote
// there that this run, which wrote into dirs (out itself when it traced one
// process and GPU), did not replace: the merged trace (a run of several
// writes its own after this), the per-process folders of an earlier run of
// several when they hold nothing but iket's outputs, and, beside a run of
// several, out's own outputs when out/trace.iket is a capture. It names
// what it removed; a folder holding anything else, and whatever cannot be
// removed, it leaves with a warning, since this run's outputs are written.
func clearEarlierRun(out string, dirs []string, w io.Writer) {
	keep := map[string]bool{}
	for _, d := range dirs {
		keep[filepath.Clean(d)] = true
	}
	var removed []string
	stale := []string{mergedFile}
	if !keep[filepath.Clean(out)] && isCapture(filepath.Join(out, captureFile)) {
		stale = append(stale, captureFile, pftraceFile, reportFile, latencyFile)
	}
	for _, f := range stale {
		p := filepath.Join(out, f)
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if err := removeStale(p); err != nil {
			fmt.Fprintf(w, "iket: warning: %v\n", err)
			continue
		}
		removed = append(removed, p)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		fmt.Fprintf(w, "iket: warning: what an earlier run left in %s was not looked for: %v\n", out, err)
	}
	ours := map[string]bool{captureFile: true, pftraceFile: true, reportFile: true, latencyFile: true}
	for _, e := range entries {
		dir := filepath.Join(out, e.Name())
		if !e.IsDir() || !groupDir.MatchString(e.Name()) || keep[filepath.Clean(dir)] {
			continue
		}
		files, err := os.ReadDir(dir)
		foreign := ""
		for _, f := range files {
			if !f.Type().IsRegular() || !ours[f.Name()] {
				foreign = f.Name()
				break
			}
		}
		if err != nil || foreign != "" {
			why := fmt.Sprintf("holds %s, which iket does not write", foreign)
			if err != nil {
				why = err.Error()
			}
			fmt.Fprintf(w, "iket: warning: %s is from an earlier run and %s: left as it is\n", dir, why)
			continue
		}
		for _, f := range files {
			err = errors.Join(err, os.Remove(filepath.Join(dir, f.Name())))
		}
		if err = errors.Join(err, os.Remove(dir)); err != nil {
			fmt.Fprintf(w, "iket: warning: %s, from an earlier run, not removed: %v\n", dir, err)
			continue
		}
		removed = append(removed, dir)
	}
	if len(removed) > 0 {
		fmt.Fprintf(w, "iket: removed what an earlier run left in %s: %s\n", out, strings.Join(removed, ", "))
	}
}

// isCapture reports whether path is a regular file that starts as a capture
// does.
func isCapture(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return false
	}
	var h [len(trace.Magic)]byte
	_, err = io.ReadFull(f, h[:])
	return err == nil && string(h[:]) == trace.Magic
}
