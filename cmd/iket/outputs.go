package main

import (
	"context"
	"encoding/json"
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
// there that this run, writing into dirs (out itself when it traced one
// process and GPU), does not replace: the per-process folders of an earlier
// run with several, when they hold nothing but iket's outputs, the merged
// trace, and out's own outputs beside a run of several. It names what it
// removed, and leaves a folder holding anything else as it is, saying so.
func clearEarlierRun(out string, dirs []string, w io.Writer) error {
	keep := map[string]bool{}
	for _, d := range dirs {
		keep[filepath.Clean(d)] = true
	}
	var removed []string
	if keep[filepath.Clean(out)] {
		if err := removeStaleNamed(filepath.Join(out, mergedFile), &removed); err != nil {
			return err
		}
	} else {
		for _, f := range []string{captureFile, pftraceFile, reportFile, latencyFile} {
			if err := removeStaleNamed(filepath.Join(out, f), &removed); err != nil {
				return err
			}
		}
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		return failWith(exitError, fmt.Errorf("run: %w", err))
	}
	ours := map[string]bool{captureFile: true, pftraceFile: true, reportFile: true, latencyFile: true}
	for _, e := range entries {
		dir := filepath.Join(out, e.Name())
		if !e.IsDir() || !groupDir.MatchString(e.Name()) || keep[filepath.Clean(dir)] {
			continue
		}
		files, err := os.ReadDir(dir)
		if err != nil {
			return failWith(exitError, fmt.Errorf("run: %w", err))
		}
		foreign := ""
		for _, f := range files {
			if !f.Type().IsRegular() || !ours[f.Name()] {
				foreign = f.Name()
				break
			}
		}
		if foreign != "" {
			fmt.Fprintf(w, "iket: warning: %s is from an earlier run and holds %s, which iket does not write: left as it is\n", dir, foreign)
			continue
		}
		for _, f := range files {
			if err := os.Remove(filepath.Join(dir, f.Name())); err != nil {
				return failWith(exitError, fmt.Errorf("remove stale %s: %w", filepath.Join(dir, f.Name()), err))
			}
		}
		if err := os.Remove(dir); err != nil {
			return failWith(exitError, fmt.Errorf("remove stale %s: %w", dir, err))
		}
		removed = append(removed, dir)
	}
	if len(removed) > 0 {
		fmt.Fprintf(w, "iket: removed what an earlier run left in %s: %s\n", out, strings.Join(removed, ", "))
	}
	return nil
}

// removeStaleNamed is removeStale, adding path to removed when it was there.
func removeStaleNamed(path string, removed *[]string) error {
	if _, err := os.Lstat(path); err != nil {
		return removeStale(path)
	}
	if err := removeStale(path); err != nil {
		return err
	}
	*removed = append(*removed, path)
	return nil
}
