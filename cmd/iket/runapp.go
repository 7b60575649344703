package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/iket-trace/iket/attach"
	"github.com/iket-trace/iket/iket"
	"github.com/iket-trace/iket/internal/outfile"
	"github.com/iket-trace/iket/internal/raw"
	"github.com/iket-trace/iket/trace"
)

const appHelp = `run -- CMD runs your program with iket attached (through the CUDA driver's
injection mechanism: nothing in the program is changed or relinked) and traces
the launches of its instrumented kernels (built with -DIKET_ENABLE=1): the
first one, or those --kernel and --launch select. Every other launch runs
untouched. A traced launch runs alone (the GPU drained before it, left idle 20 ms and, unless
--no-flush-l2, the L2 flushed; with it, the baseline's launch follows a write of as many bytes
as the traced launch's zeroed buffers) and is timed with CUDA events on the launch's
stream; with --baseline, the same program built without IKET_ENABLE runs
too and the same launches are timed there, paired by kernel and occurrence; with
--dormant as well, the program runs once more and the same launches are timed untraced
(what leaving tracing compiled in costs when nobody traces); with --control, the
baseline runs a second time, its launches paired with its first run's (what two
runs of one build differ by here, the noise the ratios stand on). The program's stdin, stdout and stderr are its own;
iket reports on stderr and exits with the program's exit status. In the
output folder (one folder per process and GPU when there are several):

  trace.iket     the raw capture of the traced launches
  trace.pftrace  the Perfetto trace (GPU > launch > SM > CTA > warp)
  report.html    a self-contained timeline, stats and latency page
  latency.json   per kernel: traced and baseline times, ratios, resources

With several, OUT/merged.pftrace holds them all on one timeline, the host's
CLOCK_REALTIME, a track per process and GPU (as iket export A B ... -o
writes it), to lay beside a host trace of the same run.
`

type appOptions struct {
	kernel   string
	launch   string
	baseline string
	dormant  bool
	control  bool
}

// appFlags are the flags of run -- CMD alone.
var appFlags = []string{"kernel", "launch", "baseline", "dormant", "control"}

func (a *appOptions) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&a.kernel, "kernel", "", "with -- CMD: trace only kernels whose demangled or mangled name matches this regular expression")
	f.StringVar(&a.launch, "launch", "0", "with -- CMD: which matching launches to trace: N, a list N,M, a range A-B, A- or all")
	f.StringVar(&a.baseline, "baseline", "", "with -- CMD: the command line of the same program built without IKET_ENABLE, timed for comparison")
	f.BoolVar(&a.dormant, "dormant", false, "with -- CMD and --baseline: run CMD once more and time the same launches untraced, what its build with tracing costs while nobody traces it")
	f.BoolVar(&a.control, "control", false, "with -- CMD and --baseline: run the baseline a second time and pair its launches with its first run's, what two runs of one build differ by here")
}

// appLatencyJSON is latency.json of an application run.
type appLatencyJSON struct {
	Source     string                 `json:"source"` // "application"
	Program    []string               `json:"program"`
	Baseline   []string               `json:"baseline,omitempty"`
	Process    *trace.Process         `json:"process"`
	Device     *trace.Device          `json:"device,omitempty"`
	Serialized bool                   `json:"serialized"`
	Boundary   string                 `json:"boundary"`
	Kernels    []attach.KernelLatency `json:"kernels"`
	// Dormant, with --dormant: the same launches of the program timed
	// without tracing them (its build with tracing, dormant), paired with
	// the baseline's.
	Dormant []attach.KernelLatency `json:"dormant,omitempty"`
	// Control, with --control: the same launches of the baseline program
	// timed in its second run, paired with its first run's.
	Control []attach.KernelLatency `json:"control,omitempty"`
}

func runApp(cmd *cobra.Command, o runOptions, argv []string, stdout, stderr io.Writer) error {
	ctx := cmd.Context()
	if len(argv) == 0 {
		return failWith(exitError, errors.New("run: no program after --"))
	}
	var re *regexp.Regexp
	if o.app.kernel != "" {
		var err error
		if re, err = regexp.Compile(o.app.kernel); err != nil {
			return failWith(exitError, fmt.Errorf("--kernel: %w", err))
		}
	}
	sel, err := attach.ParseSelection(o.app.launch)
	if err != nil {
		return failWith(exitError, fmt.Errorf("--launch: %w", err))
	}
	var baseArgs []string
	if cmd.Flags().Changed("baseline") {
		if baseArgs, err = splitCommand(o.app.baseline); err != nil || len(baseArgs) == 0 {
			return failWith(exitError, fmt.Errorf("--baseline %q: want a command line: %v", o.app.baseline, err))
		}
	}
	if o.app.dormant && baseArgs == nil {
		return failWith(exitError, errors.New("--dormant needs --baseline: the program built without IKET_ENABLE, to compare the untraced launches with"))
	}
	if o.app.control && baseArgs == nil {
		return failWith(exitError, errors.New("--control needs --baseline: the program built without IKET_ENABLE, whose second run it pairs with its first"))
	}
	for _, f := range []string{"spec", "arch", "device", "rounds", "calls", "warmup", "no-control", "no-timing", "mode"} {
		if cmd.Flags().Changed(f) {
			return failWith(exitError, fmt.Errorf("run -- CMD: --%s is for run KERNEL; the program decides (the buffer mode is the build's: -DIKET_WRAP=1)", f))
		}
	}
	if o.capacity > raw.MaxCapacity {
		return failWith(exitError, fmt.Errorf("--capacity %d: at most %d records per warp", o.capacity, raw.MaxCapacity))
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return failWith(exitError, fmt.Errorf("run: %w", err))
	}
	lib, err := attach.Library(ctx, "")
	if err != nil {
		return failWith(exitError, fmt.Errorf("run: %w", err))
	}
	opt := attach.Options{
		Args: argv, Stdin: os.Stdin, Stdout: stdout, Stderr: stderr,
		Mode: attach.ModeTrace, Kernel: re, Launches: sel,
		Capacity: o.capacity, Watch: o.watch, LaunchTimeout: o.timeout, FlushL2: flushL2Bytes(o),
		Library: lib, CUPTI: attach.FindCUPTI(),
	}
	// The GPUs' driver, clocks, temperature and power before and after the
	// program, through NVML (none when it is missing).
	before, _ := iket.ReadGPUs()
	res, err := attach.Run(ctx, opt)
	if err != nil {
		return failWith(exitError, fmt.Errorf("run: %w", err))
	}
	defer res.Close()
	after, _ := iket.ReadGPUs()
	runs := appRuns{traced: res}
	if baseArgs != nil && ctx.Err() == nil && res.Hung == nil {
		if times := attach.Times(res.Processes); len(times) > 0 {
			fmt.Fprintf(stderr, "iket: running the baseline %s\n", strings.Join(baseArgs, " "))
			bo := opt
			bo.Args, bo.Mode, bo.Times = baseArgs, attach.ModeTime, times
			bo.Stdin = nil // the traced run had the terminal's input
			if runs.base, err = attach.Run(ctx, bo); err != nil {
				return failWith(exitError, fmt.Errorf("run the baseline: %w", err))
			}
			defer runs.base.Close()
			if o.app.dormant && ctx.Err() == nil {
				// The same launches of the program itself, timed as the
				// baseline's are and not traced.
				fmt.Fprintf(stderr, "iket: running %s again, its launches untraced\n", strings.Join(argv, " "))
				do := bo
				do.Args = argv
				if runs.dormant, err = attach.Run(ctx, do); err != nil {
					return failWith(exitError, fmt.Errorf("run the program untraced: %w", err))
				}
				defer runs.dormant.Close()
			}
			if o.app.control && ctx.Err() == nil {
				// The baseline again, last, so that its pairs with the
				// first run span the whole sequence's drift.
				fmt.Fprintf(stderr, "iket: running the baseline again (the control)\n")
				if runs.control, err = attach.Run(ctx, bo); err != nil {
					return failWith(exitError, fmt.Errorf("run the baseline again: %w", err))
				}
				defer runs.control.Close()
			}
		}
	}
	return reportApp(ctx, o, argv, baseArgs, runs, gpuReadings{before, after}, stderr)
}

// appRuns are the runs of one iket run -- CMD: the traced one, and in
// timing mode the baseline, the program untraced (--dormant) and the
// baseline again (--control), each nil when it did not run.
type appRuns struct{ traced, base, dormant, control *attach.Result }

// timedProcs are one traced process's counterparts in the timed runs.
type timedProcs struct{ base, dormant, control *attach.Process }

// timedRun matches r's processes (a run in timing mode: the baseline, the
// program untraced or the baseline again) to the traced run's, and lists
// its errors: each process's error notes (who names it) and a non-zero
// exit (what).
func timedRun(res, r *attach.Result, who, what string) (map[*attach.Process]*attach.Process, []string) {
	if r == nil {
		return nil, nil
	}
	var problems []string
	for _, p := range r.Processes {
		for _, n := range p.Notes {
			if n.Level == "error" {
				problems = append(problems, fmt.Sprintf("%s %d: %s", who, p.Hello.PID, safeText(n.Text())))
			}
		}
	}
	if r.ExitCode != 0 {
		problems = append(problems, fmt.Sprintf("%s exited with status %d", what, r.ExitCode))
	}
	return attach.MatchProcesses(res.Processes, r.Processes), problems
}

// gpuReadings are the GPUs as NVML read them before and after the traced
// program, by UUID.
type gpuReadings struct{ before, after map[string]iket.GPUReading }

// fill completes the capture's device with what NVML says of it.
func (g gpuReadings) fill(d *trace.Device) {
	if d == nil {
		return
	}
	if b, ok := g.before[d.UUID]; ok {
		d.Driver = b.Driver
		if b.MaxSMClockMHz != 0 {
			d.MaxSMClockMHz = b.MaxSMClockMHz
		}
		d.Before = b.Conditions
	}
	if a, ok := g.after[d.UUID]; ok {
		d.After = a.Conditions
	}
}

// flushL2Bytes is what the injection library writes before each timed
// launch: the runtime's flush size, or nothing with --no-flush-l2.
func flushL2Bytes(o runOptions) int64 {
	if o.noFlushL2 {
		return 0
	}
	return iket.DefaultFlushBytes
}

// appGroup is one process's traced launches on one GPU: one capture.
type appGroup struct {
	proc     *attach.Process
	device   int
	launches []*attach.Launch
}

func reportApp(ctx context.Context, o runOptions, argv, baseArgs []string, runs appRuns, gpus gpuReadings, w io.Writer) error {
	res := runs.traced
	var problems []string
	for _, p := range res.Processes {
		for _, n := range p.Notes {
			msg := safeText(n.Text())
			if n.Level == "error" {
				problems = append(problems, fmt.Sprintf("process %d: %s", p.Hello.PID, msg))
			} else {
				fmt.Fprintf(w, "iket: warning: process %d: %s\n", p.Hello.PID, msg)
			}
		}
		for _, r := range p.Refused {
			problems = append(problems, fmt.Sprintf("process %d: %s", p.Hello.PID, r))
		}
		if p.Err != nil {
			problems = append(problems, fmt.Sprintf("process %d: %v", p.Hello.PID, p.Err))
		}
		for _, s := range p.Skipped {
			name := "a launch"
			if s.Kernel != nil {
				name = attach.Demangle(*s.Kernel)
			}
			fmt.Fprintf(w, "iket: not traced: process %d: %s: %s\n", p.Hello.PID, safeText(name), s.Why)
		}
		if p.Bye != nil && p.Bye.JITLoads > 0 {
			fmt.Fprintf(w, "iket: process %d: looked into %d module images at their load for dormant builds, %d compiled again with their events on: %.1f ms\n",
				p.Hello.PID, p.Bye.JITLoads, p.Bye.JITReplaced, float64(p.Bye.JITNs)/1e6)
		}
		if p.Bye != nil && p.Bye.RuntimeUnseen > 0 {
			problems = append(problems, fmt.Sprintf("process %d: %d CUDA runtime launches reached no driver launch entry point iket sees: they ran untraced", p.Hello.PID, p.Bye.RuntimeUnseen))
		}
	}
	var groups []*appGroup
	for _, p := range res.Processes {
		byDev := map[int]*appGroup{}
		for _, l := range p.Traced() {
			g := byDev[l.Info.Device.Ordinal]
			if g == nil {
				g = &appGroup{proc: p, device: l.Info.Device.Ordinal}
				byDev[g.device] = g
				groups = append(groups, g)
			}
			g.launches = append(g.launches, l)
		}
	}
	matched, bp := timedRun(res, runs.base, "baseline process", "the baseline program")
	dmatched, dp := timedRun(res, runs.dormant, "untraced run, process", "the program run again untraced")
	cmatched, cp := timedRun(res, runs.control, "control run, process", "the baseline program run again")
	problems = append(append(append(problems, bp...), dp...), cp...)
	var firstErr error
	var written []string // the groups' captures, for the merged trace
	dirs := make([]string, len(groups))
	for i, g := range groups {
		dirs[i] = o.out
		if len(groups) > 1 {
			dirs[i] = filepath.Join(o.out, fmt.Sprintf("pid%d-gpu%d", g.proc.Hello.PID, g.device))
		}
	}
	for i, g := range groups {
		dir := dirs[i]
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return failWith(exitError, fmt.Errorf("run: %w", err))
		}
		var args []string
		if g.proc == res.Processes[0] {
			args = argv
		}
		tp := timedProcs{base: matched[g.proc], dormant: dmatched[g.proc], control: cmatched[g.proc]}
		if err := writeAppGroup(ctx, dir, g, args, baseArgs, tp, gpus, w); err != nil {
			if firstErr == nil {
				firstErr = err
			}
		} else {
			written = append(written, filepath.Join(dir, captureFile))
		}
	}
	// Only once this run's captures are written: an interrupted or failed
	// run leaves the earlier one's outputs as they were.
	if len(written) > 0 && ctx.Err() == nil {
		clearEarlierRun(o.out, dirs, w)
	}
	if len(groups) > 1 && ctx.Err() == nil {
		writeAppMerged(ctx, o.out, written, w)
	}
	if res.Hung != nil {
		fmt.Fprintf(w, "iket: %s did not finish within %v: its process was killed\n", safeText(res.Hung.Kernel), o.timeout)
	}
	for _, l := range faults(res) {
		fmt.Fprintf(w, "iket: %s faulted: %s\n", safeText(l.Kernel), l.Info.Error)
	}
	if firstErr != nil {
		return firstErr
	}
	if len(problems) > 0 {
		return failWith(exitError, errors.New(strings.Join(problems, "\n")))
	}
	if res.Hung != nil || len(faults(res)) > 0 {
		code := res.ExitCode
		if code == 0 || res.Hung != nil {
			code = exitError
		}
		return failWith(code, errors.New("the traced kernel did not complete (see above)"))
	}
	if len(groups) == 0 {
		if res.ExitCode != 0 {
			return failWith(res.ExitCode, fmt.Errorf("the program exited with status %d%s before any traced launch", res.ExitCode, signalText(res)))
		}
		return failWith(exitError, noLaunchError(o, res))
	}
	if res.ExitCode != 0 {
		return failWith(res.ExitCode, fmt.Errorf("the program exited with status %d%s", res.ExitCode, signalText(res)))
	}
	return nil
}

func signalText(r *attach.Result) string {
	if r.Signal != "" {
		return " (" + r.Signal + ")"
	}
	return ""
}

func faults(r *attach.Result) []*attach.Launch {
	var out []*attach.Launch
	for _, p := range r.Processes {
		for _, l := range p.Launches {
			if l.Info.Status == "fault" || l.Info.Status == "launch_error" {
				out = append(out, l)
			}
		}
	}
	return out
}

// noLaunchError explains a run that traced nothing.
func noLaunchError(o runOptions, r *attach.Result) error {
	if len(r.Processes) == 0 {
		return errors.New("no traced launch: the program never initialized CUDA with iket attached (it did not call cuInit, or is linked statically against a CUDA driver iket cannot inject into)")
	}
	// Kernels that constructed no Warp, and dormant builds iket could not
	// compile again, record nothing: not listed as instrumented, but named
	// when they are all there was. The other skips' codes (and dormant's)
	// say why selected launches were not traced.
	seen := map[string]bool{}
	var silent, dormant, skipped []string
	named := map[string]*[]string{attach.SkipNoWarp: &silent, attach.SkipDormant: &dormant}
	for _, p := range r.Processes {
		for _, s := range p.Skipped {
			if list, ok := named[s.Code]; ok && s.Kernel != nil {
				if k := attach.Demangle(*s.Kernel); !seen[k] {
					seen[k] = true
					*list = append(*list, safeText(k))
				}
			}
			if s.Code != attach.SkipNoWarp && !slices.Contains(skipped, s.Code) {
				skipped = append(skipped, s.Code)
			}
		}
	}
	var inst []string
	for _, p := range r.Processes {
		for _, k := range p.Instrumented {
			if !seen[k] {
				seen[k] = true
				inst = append(inst, safeText(k))
			}
		}
	}
	if len(inst) == 0 && len(dormant) > 0 {
		return fmt.Errorf("no traced launch: iket could not compile the module of %s (a dormant build: built with -DIKET_ENABLE=1, its SASS runs no event) again with the events on; the lines above say why", strings.Join(dormant, ", "))
	}
	if len(inst) == 0 && len(silent) > 0 {
		return fmt.Errorf("no instrumented kernel launched: %s, in a module built with -DIKET_ENABLE=1, constructed no iket::Warp (construct one, first, in the kernel to trace)", strings.Join(silent, ", "))
	}
	if len(inst) == 0 {
		return errors.New("no instrumented kernel launched: was the program built with -DIKET_ENABLE=1 (and does a kernel include iket.cuh and construct iket::Warp)?")
	}
	why := ""
	if len(skipped) > 0 {
		why = fmt.Sprintf(" that iket could trace (not traced: %s; the lines above say why)", strings.Join(skipped, ", "))
	}
	if o.app.kernel != "" {
		return fmt.Errorf("no traced launch: instrumented kernels launched: %s; --kernel %q matched no launch in --launch %s%s", strings.Join(inst, ", "), o.app.kernel, o.app.launch, why)
	}
	return fmt.Errorf("no traced launch: instrumented kernels launched: %s; --launch %s selected none of their launches%s", strings.Join(inst, ", "), o.app.launch, why)
}

// writeAppGroup writes one capture and its outputs, and prints a summary.
func writeAppGroup(ctx context.Context, dir string, g *appGroup, argv, baseArgs []string, tp timedProcs, gpus gpuReadings, w io.Writer) error {
	meta, bufs, left, err := g.proc.Capture("iket "+version, argv, g.launches)
	gpus.fill(meta.Device)
	for _, l := range left {
		fmt.Fprintf(w, "iket: left out: %s\n", safeText(l))
	}
	if err != nil {
		return failWith(exitError, err)
	}
	status := map[launchKey]string{}
	for _, l := range g.launches {
		status[launchKey{l.Info.Kernel, l.Info.Occurrence}] = l.Info.Status
	}
	// This capture's launches only: a process on several GPUs writes one
	// capture, and one latency.json, per GPU.
	lat := attach.Compare(&attach.Process{Hello: g.proc.Hello, Launches: g.launches}, tp.base)
	dormant := timedAgainst(tp.dormant, tp.base, status)
	control := timedAgainst(tp.control, tp.base, status)
	byKernel := map[string]*attach.KernelLatency{}
	for i := range lat {
		byKernel[lat[i].Mangled] = &lat[i]
	}
	dormantOf, controlOf := pairedByKernel(dormant), pairedByKernel(control)
	for i := range meta.Launches {
		lm := &meta.Launches[i]
		k := byKernel[lm.Mangled]
		if k == nil {
			continue
		}
		lm.Latency = k.Latency()
		if lm.Latency == nil {
			continue
		}
		if d := dormantOf[lm.Mangled]; d != nil {
			lm.Latency.Dormant, lm.Latency.DormantRatio, lm.Latency.DormantPairedRatio = &d.Instrumented, d.Ratio, d.PairedRatio
			lm.Latency.Settings.Order += ", then the program untraced"
		}
		if c := controlOf[lm.Mangled]; c != nil {
			lm.Latency.Control, lm.Latency.ControlRatio, lm.Latency.ControlPairedRatio = &c.Instrumented, c.Ratio, c.PairedRatio
			lm.Latency.Settings.Order += ", then the baseline program again"
		}
	}
	capPath := filepath.Join(dir, captureFile)
	f, err := outfile.CreateContext(ctx, capPath)
	if err != nil {
		return failWith(exitError, err)
	}
	defer f.Abort()
	if err := trace.WriteCapture(f, &meta, bufs); err != nil {
		return failWith(exitError, fmt.Errorf("write %s: %w", capPath, err))
	}
	if err := f.Commit(); err != nil {
		return failWith(exitError, fmt.Errorf("write %s: %w", capPath, err))
	}
	lj := appLatencyJSON{
		Source: "application", Program: argv, Baseline: baseArgs, Process: meta.Process, Device: meta.Device,
		Serialized: true, Boundary: attach.Boundary, Kernels: lat, Dormant: dormant, Control: control,
	}
	b, err := json.MarshalIndent(lj, "", "  ")
	if err != nil {
		return failWith(exitError, fmt.Errorf("encode %s: %w", latencyFile, err))
	}
	if err := outfile.WriteFile(ctx, filepath.Join(dir, latencyFile), append(b, '\n'), capPath); err != nil {
		return failWith(exitError, fmt.Errorf("write %s: %w", latencyFile, err))
	}
	c, err := openWithPftrace(ctx, dir)
	if err != nil {
		return err
	}
	defer c.Close()
	pf := filepath.Join(dir, pftraceFile)
	// Launch 0's one decoding pass feeds report.html and its summary below.
	a0, col, err := analyzeForReport(ctx, c, 0, trace.Options{})
	if err != nil {
		return err
	}
	if err := writeAnalysedReport(ctx, c, a0, col, filepath.Join(dir, reportFile)); err != nil {
		return err
	}
	fmt.Fprintf(w, "\niket: process %d (%s), GPU %d (%s): %d traced launches\n", g.proc.Hello.PID, safeText(g.proc.Hello.Exe), g.device, safeText(meta.Device.Name), len(meta.Launches))
	// Each kernel's first traced launch gets the whole table; later ones a
	// line (iket stats --launch N has the rest).
	shown := map[string]bool{}
	for i := 0; i < c.NumLaunches(); i++ {
		lm := c.Launch(i).Meta
		a := a0
		if i > 0 {
			if a, err = analyze(ctx, c, i, trace.Options{}); err != nil {
				return err
			}
		}
		if shown[lm.Mangled] {
			fmt.Fprintf(w, "launch %d: %s, occurrence %d: %d warps, %d events, %s, %d violations\n", i, safeText(lm.Kernel), lm.Occurrence,
				a.Summary.Warps, a.Summary.Stored, droppedText(a.Summary), a.Summary.TotalViolations())
		} else {
			shown[lm.Mangled] = true
			fmt.Fprintf(w, "\nlaunch %d: %s, occurrence %d, grid %v, block %v\n", i, safeText(lm.Kernel), lm.Occurrence, lm.Grid, lm.Block)
			names, m := a.Analyzer.OverlapMatrix()
			writeStatsTable(w, a, names, m)
		}
		if len(a.Violations) > 0 {
			fmt.Fprintf(w, "%d pairing violations, the first: %v\n", a.Summary.TotalViolations(), a.Violations[0])
		}
		if st := status[launchKey{lm.Mangled, lm.Occurrence}]; st != "ok" {
			fmt.Fprintf(w, "this launch ended with status %s\n", st)
			if rep, err := diagnoseHang(c.Launch(i)); err == nil {
				rep.write(w)
			}
		}
	}
	writeAppLatency(w, lat)
	// The untraced runs' tables: their resources and warnings are the
	// traced table's.
	writeLatencyTable(w, "untraced (the build with tracing, iket not tracing these launches) against the baseline", "untraced p50 us", dormant, nil)
	writeLatencyTable(w, "control (the baseline program again) against the baseline: two runs of one build differ by this much here", "again p50 us", control, nil)
	writeWithinNoise(w, lat, controlOf)
	fmt.Fprintf(w, "\nwrote %s, %s, %s, %s\n", capPath, pf, filepath.Join(dir, reportFile), filepath.Join(dir, latencyFile))
	return nil
}

type launchKey struct {
	mangled    string
	occurrence uint64
}

func writeAppLatency(w io.Writer, lat []attach.KernelLatency) {
	writeLatencyTable(w, "latency ("+attach.Boundary+")", "traced p50 us", lat, func(k attach.KernelLatency) {
		r := k.Resources
		if r.Instrumented != nil {
			fmt.Fprintf(w, "  traced: %s", r.Instrumented.String())
			if u := r.Uninstrumented; u != nil {
				fmt.Fprintf(w, "; baseline: %s", u.String())
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "  records %s\n", trace.RecordsL2(k.RecordsL2Bytes))
		for _, m := range k.Warnings {
			fmt.Fprintf(w, "  warning: %s\n", m)
		}
	})
}

// writeLatencyTable prints one latency table: its title, a header whose
// first time column is column, and each kernel's row, sorted by name,
// followed by what more prints of it (nil: nothing) and its unpaired
// occurrences. Nothing without kernels.
func writeLatencyTable(w io.Writer, title, column string, lat []attach.KernelLatency, more func(attach.KernelLatency)) {
	if len(lat) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", title)
	fmt.Fprintf(w, "%-40s %7s %15s %16s %7s %7s\n", "kernel", "launches", column, "baseline p50 us", "ratio", "paired")
	sort.SliceStable(lat, func(i, j int) bool { return lat[i].Kernel < lat[j].Kernel })
	for _, k := range lat {
		writeLatencyRow(w, k)
		if more != nil {
			more(k)
		}
		writeUnpaired(w, k)
	}
}

// writeLatencyRow prints a kernel's row of the latency tables.
func writeLatencyRow(w io.Writer, k attach.KernelLatency) {
	name := safeName(k.Kernel)
	if len(name) > 40 {
		name = name[:37] + "..."
	}
	if k.Uninstrumented == nil {
		fmt.Fprintf(w, "%-40s %7d %15.2f %16s %7s %7s\n", name, len(k.Pairs), k.Instrumented.MedianUS, "-", "-", "-")
		return
	}
	fmt.Fprintf(w, "%-40s %7d %15.2f %16.2f %7.4f %7.4f\n", name, len(k.Pairs), k.Instrumented.MedianUS, k.Uninstrumented.MedianUS, k.Ratio, k.PairedRatio)
}

func writeUnpaired(w io.Writer, k attach.KernelLatency) {
	if len(k.Unpaired) > 0 {
		fmt.Fprintf(w, "  the baseline did not time occurrences %v\n", k.Unpaired)
	}
}

// timedAgainst pairs p's timed launches of the capture's kernels and
// occurrences (those in status) with base's: nil without either.
func timedAgainst(p, base *attach.Process, status map[launchKey]string) []attach.KernelLatency {
	if p == nil || base == nil {
		return nil
	}
	var ls []*attach.Launch
	for _, l := range p.Launches {
		if _, ok := status[launchKey{l.Info.Kernel, l.Info.Occurrence}]; ok {
			ls = append(ls, l)
		}
	}
	return attach.CompareTimed(&attach.Process{Hello: p.Hello, Launches: ls}, base)
}

// pairedByKernel indexes lat's kernels that have a baseline by mangled name.
func pairedByKernel(lat []attach.KernelLatency) map[string]*attach.KernelLatency {
	m := map[string]*attach.KernelLatency{}
	for i := range lat {
		if lat[i].Uninstrumented != nil {
			m[lat[i].Mangled] = &lat[i]
		}
	}
	return m
}

// writeWithinNoise names each kernel whose traced paired ratio is no
// farther from 1 than its control's (controlOf: pairedByKernel of the
// control): a difference this run cannot tell from two runs of one build.
func writeWithinNoise(w io.Writer, lat []attach.KernelLatency, controlOf map[string]*attach.KernelLatency) {
	for _, k := range lat {
		c := controlOf[k.Mangled]
		if c == nil || k.Uninstrumented == nil || math.Abs(k.PairedRatio-1) > math.Abs(c.PairedRatio-1) {
			continue
		}
		fmt.Fprintf(w, "iket: %s: the traced paired ratio %.4f is no farther from 1 than the control's %.4f: within this run's noise; trace more launches (--launch) for a tighter figure\n",
			safeText(k.Kernel), k.PairedRatio, c.PairedRatio)
	}
}

// splitCommand splits a command line into words: spaces separate, single
// and double quotes group, a backslash escapes the next character.
func splitCommand(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in := false
	var quote rune
	esc := false
	for _, r := range s {
		switch {
		case esc:
			cur.WriteRune(r)
			esc = false
		case r == '\\' && quote != '\'':
			esc = true
			in = true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote = r
			in = true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 || esc {
		return nil, errors.New("unterminated quote or escape")
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}
