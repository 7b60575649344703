package iket

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/iket-trace/iket/trace"
)

// RunOptions configure [Run].
type RunOptions struct {
	Arch   string        // default [DefaultArch]
	Config *LaunchConfig // nil: the program's configuration for the device
	// Source replaces the program's source (a user's copy of a built-in
	// kernel). A prebuilt image (.ptx, .cubin, .fatbin), the program's or
	// this one, is one build: it must be instrumented, and Baseline gives
	// the uninstrumented image to time against (without it timing is
	// skipped).
	Source   *Source
	Baseline *Source
	Trace    TraceOptions
	Timing   TimingOptions
	// SkipTiming skips the latency comparison.
	SkipTiming bool
	// SkipControl times the two builds only. By default the uninstrumented
	// build is loaded a second time and timed in every round as a control
	// (TimingOptions.Control; when that load fails, Run times without one
	// and says so in Warnings); Timing.Control, when set, is used instead.
	SkipControl bool
	// Progress, when set, is called with a short description as each step
	// starts ("compile", "check", "trace", "time"); the CLI shows it on a
	// terminal. It is called from Run's goroutine.
	Progress func(step string)
}

// RunResult is everything [Run] measured: what the CLI writes to trace.iket
// and latency.json.
type RunResult struct {
	Program string
	Config  LaunchConfig
	// Device describes the GPU, with conditions read before compiling and
	// after timing (nil when NVML is unavailable).
	Device  trace.Device
	Launch  *TraceResult   // the traced launch; Launch.Meta.Latency = Latency
	Latency *trace.Latency // nil with SkipTiming
	// CompileLog holds NVRTC's warnings for the two builds, if any.
	CompileLog string
	// Warnings are findings about the comparison itself, for the user to
	// read before trusting the latency ratio (see [PipelineWarnings]).
	Warnings []string
}

// pipelineWarning matches the ptxas notes that say a build lost its fast
// path on Hopper: wgmma serialized (C7510, C7515, ...) or setmaxnreg
// ignored (C7508). Instrumentation can trigger them in the instrumented
// build only.
var pipelineWarning = regexp.MustCompile(`(?m)^.*(C75\d\d|Potential Performance Loss).*$`)

// PipelineWarnings compares the compiler logs of the two builds and returns
// one line per ptxas performance warning that the instrumented build has and
// the uninstrumented one does not: such a build is not the kernel the
// baseline is, and its trace may show a slower pipeline than the real one.
func PipelineWarnings(baseLog, instLog string) []string {
	seen := map[string]bool{}
	for _, m := range pipelineWarning.FindAllString(baseLog, -1) {
		seen[strings.TrimSpace(m)] = true
	}
	var out []string
	for _, m := range pipelineWarning.FindAllString(instLog, -1) {
		m = strings.TrimSpace(m)
		if seen[m] {
			continue
		}
		seen[m] = true
		out = append(out, "only the instrumented build: "+m+" (the instrumentation changed how ptxas compiled the kernel: trace phases may be slower than in the baseline; move or drop events in that loop)")
	}
	return out
}

// Meta returns the capture metadata for the run (without launches and
// version, which [WriteCapture] fills in from the traced launch).
func (r *RunResult) Meta(tool string) trace.Meta {
	host, _ := os.Hostname()
	dev := r.Device
	return trace.Meta{Tool: tool, Created: time.Now().UTC(), Host: host, Device: &dev}
}

// Run runs a program end to end on d: compile both builds, check
// that each computes the exact output (outputs poisoned before each run),
// trace one instrumented launch (and check its output too), time both builds
// interleaved, and read the device's conditions before and after. ctx is
// checked between steps. Errors keep their types ([*KernelError],
// [*HangError], [*ConfigError]) for errors.As.
func Run(ctx context.Context, d *Device, prog *Program, opt RunOptions) (*RunResult, error) {
	res := &RunResult{Program: prog.Name, Device: d.info}
	res.Device.Before = d.Conditions()
	cfg := prog.Config(d)
	if opt.Config != nil {
		cfg = *opt.Config
	}
	cfg.Kernel = prog.Entry
	res.Config = cfg
	step := func(what string, err error) error {
		return fmt.Errorf("run %s: %s: %w", prog.Name, what, err)
	}
	if err := cfg.Validate(d.Limits()); err != nil {
		return nil, step("configure", err)
	}
	var src Source
	var err error
	switch {
	case opt.Source != nil:
		src = *opt.Source
	case prog.Source != nil:
		if src, err = prog.Source(); err != nil {
			return nil, step("load source", err)
		}
	default:
		return nil, step("load source", errors.New("no source: Program.Source and RunOptions.Source are both nil"))
	}
	if src.Kind == KindUnknown {
		if src.Kind, err = DetectKind(src.Path, src.Data); err != nil {
			return nil, step("load source", err)
		}
	}
	baseSrc := src
	if src.Kind.Prebuilt() {
		if opt.Baseline == nil {
			opt.SkipTiming = true
		} else {
			baseSrc = *opt.Baseline
		}
	}
	baseInstrumented := src.Kind.Prebuilt() && opt.Baseline == nil
	progress := func(s string) {
		if opt.Progress != nil {
			opt.Progress(s)
		}
	}
	progress("compile both builds (NVRTC)")
	base, err := d.Compile(baseSrc, baseInstrumented, opt.Arch)
	if err != nil {
		return nil, step("build uninstrumented", err)
	}
	defer base.Close()
	if err := ctx.Err(); err != nil {
		return nil, step("build", err)
	}
	instSrc := src
	if opt.Trace.Mode == trace.ModeWrap && src.Kind == KindCU && !definesWrap(src.Options) {
		// A build records in one mode: wrap is a compile-time choice.
		instSrc.Options = append(append([]string(nil), src.Options...), "-DIKET_WRAP=1")
	}
	inst, err := d.Compile(instSrc, true, opt.Arch)
	if err != nil {
		return nil, step("build instrumented", err)
	}
	defer inst.Close()
	res.CompileLog = joinLogs(base.Log(), inst.Log())
	res.Warnings = PipelineWarnings(base.Log(), inst.Log())

	progress("set up inputs")
	w, err := prog.Setup(d, cfg)
	if err != nil {
		return nil, step("set up", err)
	}
	defer w.Close()
	// The traced launch comes first and is itself the instrumented build's
	// correctness check: a kernel that hangs or faults then does so with
	// trace buffers attached, so the caller can say where each warp was.
	if err := ctx.Err(); err != nil {
		return nil, step("trace", err)
	}
	if err := w.Poison(); err != nil {
		return nil, step("trace", err)
	}
	progress("trace one launch of the instrumented build and check its output")
	tr, err := inst.Trace(cfg, w.Args, opt.Trace)
	if err != nil {
		return nil, step("trace", err)
	}
	if err := w.Verify(); err != nil {
		return nil, step("check instrumented build (the traced launch's output)", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, step("check", err)
	}
	progress("check the uninstrumented build's output")
	if err := prog.Check(base, cfg, w, opt.Trace.Timeout); err != nil {
		return nil, step("check uninstrumented build", err)
	}
	res.Launch = tr

	if !opt.SkipTiming {
		if err := ctx.Err(); err != nil {
			return nil, step("time", err)
		}
		t := opt.Timing
		if t.Capacity == 0 && t.Mode == "" {
			t.Capacity, t.Mode = tr.Meta.Capacity, tr.Meta.Mode
		}
		what := "time both builds (warm-up, interleaved rounds, L2 flushed)"
		if t.Control == nil && !opt.SkipControl {
			// The control only helps read the ratio: without it the two
			// builds are still timed, and the result says why it is missing.
			ctl, err := base.Reload()
			if err != nil {
				res.Warnings = append(res.Warnings, fmt.Sprintf("timed without a control: load the uninstrumented build again: %v", err))
			} else {
				defer ctl.Close()
				t.Control = ctl
			}
		}
		if t.Control != nil {
			what = "time both builds and a control (warm-up, rotating rounds, L2 flushed)"
		}
		progress(what)
		lat, err := Time(base, inst, cfg, w.Args, t)
		if err != nil {
			return nil, step("time", err)
		}
		res.Latency = lat
		tr.Meta.Latency = lat
		if r, err := base.Resources(cfg); err == nil {
			lat.UninstrumentedResources = r
		}
	}
	if r, err := inst.Resources(cfg); err == nil {
		tr.Meta.Resources = r
	}
	if res.Latency != nil {
		for _, w := range trace.Perturbation(tr.Meta.Resources, res.Latency.UninstrumentedResources) {
			res.Warnings = append(res.Warnings, cfg.Kernel+": "+w)
		}
	}
	res.Device.After = d.Conditions()
	return res, nil
}

// definesWrap reports whether the compiler options already set IKET_WRAP
// (either way: the module's mode then decides, and a mismatch is a
// ConfigError from the traced launch).
func definesWrap(opts []string) bool {
	for _, o := range opts {
		if o == "-DIKET_WRAP" || strings.HasPrefix(o, "-DIKET_WRAP=") {
			return true
		}
	}
	return false
}

func joinLogs(logs ...string) string {
	var out []string
	for _, l := range logs {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
