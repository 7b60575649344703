package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/iket-trace/iket/builtin"
	"github.com/iket-trace/iket/iket"
	"github.com/iket-trace/iket/spec"
	"github.com/iket-trace/iket/trace"
)

type runOptions struct {
	out       string
	device    int
	arch      string
	capacity  uint32
	mode      string
	watch     bool
	timeout   time.Duration
	rounds    int
	calls     int
	warmup    int
	noFlushL2 bool
	noControl bool
	noTiming  bool
	spec      string
	app       appOptions
}

func (o *runOptions) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVarP(&o.out, "output", "o", "iket-out", "output folder")
	f.IntVar(&o.device, "device", 0, "CUDA device ordinal")
	f.StringVar(&o.arch, "arch", iket.DefaultArch, "NVRTC target architecture")
	f.Uint32Var(&o.capacity, "capacity", 0, "records per warp (default: the runtime's; run -- CMD lowers it for a launch whose buffers would take more than 4 GiB)")
	f.StringVar(&o.mode, "mode", "stop", "full buffer: stop (count drops) or wrap (keep the newest)")
	f.BoolVar(&o.watch, "watch", false, "host-mapped buffers, readable while the kernel runs (slower; for hangs and faults)")
	f.DurationVar(&o.timeout, "timeout", 10*time.Second, "report the kernel as hung after this long")
	f.IntVar(&o.rounds, "rounds", 0, "timing rounds per build (default 5)")
	f.IntVar(&o.calls, "calls", 0, "timed calls per round (default 20)")
	f.IntVar(&o.warmup, "warmup", 0, "warm-up calls (default: until stable)")
	f.BoolVar(&o.noFlushL2, "no-flush-l2", false, "do not flush the L2 (write 256 MiB) before each timed call (under run -- CMD, each still follows 20 ms of an idle GPU)")
	f.BoolVar(&o.noControl, "no-control", false, "time the two builds only, without the control (the uninstrumented build loaded again)")
	f.BoolVar(&o.noTiming, "no-timing", false, "trace only; skip the latency comparison")
}

func newRunCmd(stdout, stderr io.Writer) *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run [flags] -- CMD [ARGS...] | run KERNEL",
		Short: "Trace the kernels of your program, or time a standalone kernel",
		Long: appHelp + `
run KERNEL (the standalone micro-benchmark path) compiles a kernel twice
(with and without tracing), checks that both builds compute the exact
output, traces one launch, times both builds with CUDA events (warm-up
until stable, rounds in rotating order with a control,
the uninstrumented build loaded again, L2 flushed before each call, medians,
paired ratios and every round kept) and writes, in the output folder:

  trace.iket     the raw capture: every warp's buffer, the launch, the device
  trace.pftrace  the Perfetto trace (GPU > launch > SM > CTA > warp)
  report.html    a self-contained timeline, stats and latency page
  latency.json   uninstrumented vs instrumented latency and the conditions

KERNEL is a built-in program's name or its source file (built-ins: ` + builtinNames() + `);
for any other kernel, --spec FILE describes it (docs/SPEC.md).
A kernel that faults or does not finish within --timeout is reported with what
its warps recorded; iket exits 2.`,
		Example: `  iket run -o out -- ./app --its --own --flags
  iket run -o out --kernel 'gemm.*' --launch 3 -- python serve.py
  iket run -o out --launch 0-9 --baseline './app_plain --n 4' -- ./app --n 4
  iket run -o out --launch 0-9 --baseline ./app_plain --dormant --control -- ./app
  iket run warp_roles -o out
  iket run kernels/examples/warp_roles.cu --mode wrap --capacity 64
  iket run hang --watch --timeout 2s     # diagnose a deadlock
  iket run --spec my_kernel.yaml          # your own kernel`,
		Args: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() >= 0 {
				return nil
			}
			return cobra.MaximumNArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if n := cmd.ArgsLenAtDash(); n >= 0 {
				if n > 0 || o.spec != "" {
					return failWith(exitError, fmt.Errorf("run: give KERNEL, --spec FILE or -- CMD, one of them"))
				}
				return runApp(cmd, o, args, stdout, stderr)
			}
			for _, f := range appFlags {
				if cmd.Flags().Changed(f) {
					return failWith(exitError, fmt.Errorf("run KERNEL: --%s is for run -- CMD", f))
				}
			}
			var prog *iket.Program
			var src, base *iket.Source
			switch {
			case o.spec != "" && len(args) == 1:
				return failWith(exitError, fmt.Errorf("run: give KERNEL or --spec, not both"))
			case o.spec != "":
				s, err := spec.Load(o.spec)
				if err != nil {
					return failWith(exitError, err)
				}
				if err := s.CheckFiles(); err != nil {
					return failWith(exitError, fmt.Errorf("%s: %w", o.spec, err))
				}
				if prog, base, err = s.Program(); err != nil {
					return failWith(exitError, err)
				}
				o = specRunOptions(s, o, cmd.Flags().Changed("capacity"), cmd.Flags().Changed("mode"), cmd.Flags().Changed("arch"))
			case len(args) == 1:
				var err error
				if prog, src, err = resolveProgram(args[0]); err != nil {
					return err
				}
			default:
				return failWith(exitError, fmt.Errorf("run: give a kernel (%s or its source file) or --spec FILE", builtinNames()))
			}
			dev, err := iket.OpenDevice(o.device)
			if err != nil {
				return failWith(exitError, err)
			}
			defer dev.Close()
			return runKernel(cmd, dev, prog, src, base, o, stdout, stderr)
		},
	}
	o.flags(cmd)
	o.app.flags(cmd)
	cmd.Flags().StringVar(&o.spec, "spec", "", "YAML spec of your own kernel's launch (docs/SPEC.md)")
	return cmd
}

func builtinNames() string {
	return strings.Join(builtin.Names(), ", ")
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// resolveProgram maps KERNEL to a built-in program and, for a file, its source.
func resolveProgram(kernel string) (*iket.Program, *iket.Source, error) {
	if p, err := builtin.Lookup(kernel); err == nil {
		return p, nil, nil
	}
	if _, err := os.Stat(kernel); err != nil {
		return nil, nil, failWith(exitError, fmt.Errorf("run %s: not a built-in program (%s) and not a file: %w", kernel, builtinNames(), err))
	}
	base := strings.TrimSuffix(filepath.Base(kernel), filepath.Ext(kernel))
	p, err := builtin.Lookup(base)
	if err != nil {
		return nil, nil, failWith(exitError, fmt.Errorf("run %s: iket knows the launch configuration of the built-in programs only (%s); for another kernel write a spec (docs/SPEC.md)", kernel, builtinNames()))
	}
	data, err := os.ReadFile(kernel)
	if err != nil {
		return nil, nil, failWith(exitError, fmt.Errorf("run: %w", err))
	}
	kind, err := iket.DetectKind(kernel, data)
	if err != nil {
		return nil, nil, failWith(exitError, err)
	}
	return p, &iket.Source{Path: kernel, Kind: kind, Data: data}, nil
}

func runKernel(cmd *cobra.Command, dev *iket.Device, prog *iket.Program, src, base *iket.Source, o runOptions, stdout, stderr io.Writer) error {
	mode := trace.Mode(o.mode)
	if mode != trace.ModeStop && mode != trace.ModeWrap {
		return failWith(exitError, fmt.Errorf("--mode %q: want stop or wrap", o.mode))
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return failWith(exitError, fmt.Errorf("run: %w", err))
	}
	opt := iket.RunOptions{
		Arch:     o.arch,
		Source:   src,
		Baseline: base,
		Trace:    iket.TraceOptions{Capacity: o.capacity, Mode: mode, Watch: o.watch, Timeout: o.timeout},
		Timing: iket.TimingOptions{
			Warmup: o.warmup, Rounds: o.rounds, CallsPerRound: o.calls, SkipL2Flush: o.noFlushL2,
		},
		SkipTiming:  o.noTiming,
		SkipControl: o.noControl,
	}
	if isTerminal(stderr) {
		start := time.Now()
		opt.Progress = func(step string) {
			fmt.Fprintf(stderr, "  [%5.1fs] %s\n", time.Since(start).Seconds(), step)
		}
	}
	fmt.Fprintf(stderr, "running %s on %s\n", prog.Name, dev.Info().Name)
	res, err := iket.Run(cmd.Context(), dev, prog, opt)
	if err != nil {
		return reportRunError(err, prog.Name, dev, o.out, stdout)
	}
	meta := res.Meta("iket " + version)
	capPath := filepath.Join(o.out, captureFile)
	if err := iket.WriteCapture(capPath, meta, res.Launch); err != nil {
		return failWith(exitError, err)
	}
	if res.CompileLog != "" {
		fmt.Fprintf(stderr, "NVRTC said:\n%s\n", res.CompileLog)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	return writeOutputs(cmd.Context(), o.out, "measured", stdout)
}

// reportRunError explains a failed run. For a hang or a fault with readable
// buffers it writes the partial capture and diagnoses the warps.
func reportRunError(err error, name string, dev *iket.Device, out string, stdout io.Writer) error {
	var hang *iket.HangError
	var kerr *iket.KernelError
	var partial *iket.TraceResult
	switch {
	case errors.As(err, &hang):
		partial = hang.Result
	case errors.As(err, &kerr):
		partial = kerr.Result
	}
	if partial == nil {
		return failWith(exitError, err)
	}
	capPath := filepath.Join(out, captureFile)
	// Outputs of an earlier run in this folder would sit beside the partial
	// capture as if they described it.
	for _, f := range []string{pftraceFile, latencyFile, reportFile} {
		if err := removeStale(filepath.Join(out, f)); err != nil {
			return err
		}
	}
	meta := trace.Meta{Tool: "iket " + version, Created: time.Now().UTC()}
	info := dev.Info()
	meta.Device = &info
	if werr := iket.WriteCapture(capPath, meta, partial); werr != nil {
		return failWith(exitError, fmt.Errorf("%w (and the partial capture could not be written: %v)", err, werr))
	}
	c, cerr := trace.Open(capPath)
	if cerr != nil {
		return failWith(exitError, fmt.Errorf("%w (partial capture unreadable: %v)", err, cerr))
	}
	defer c.Close()
	rep, derr := diagnoseHang(c.Launch(0))
	if derr != nil {
		return failWith(exitError, fmt.Errorf("%w (diagnosis failed: %v)", err, derr))
	}
	fmt.Fprintf(stdout, "%v\n", err)
	rep.write(stdout)
	fmt.Fprintf(stdout, "partial capture: %s (iket export %s to view it)\n", capPath, capPath)
	return failWith(exitError, err)
}
