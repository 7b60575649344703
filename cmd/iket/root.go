package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// Exit codes, documented in the command's help.
const (
	exitOK          = 0
	exitCheckFail   = 1
	exitError       = 2
	exitInterrupted = 130 // 128 + SIGINT, as shells report it
)

// exitError carries an exit code through cobra's error path.
type codeError struct {
	code int
	err  error
}

func (e *codeError) Error() string { return e.err.Error() }
func (e *codeError) Unwrap() error { return e.err }

// failWith wraps err so run exits with code.
func failWith(code int, err error) error { return &codeError{code: code, err: err} }

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "iket",
		Short: "In-kernel event tracing for warp-specialized CUDA kernels",
		Long: `iket records per-warp events (marks, push/pop and start/end ranges) inside
CUDA kernels, places them on one nanosecond timeline, and shows when each
warp's phases were active, waiting or overlapping. Latency always comes from
the uninstrumented build; the trace explains the phases.

Exit codes: 0 success, 1 a check failed, 2 bad input or usage, or a CUDA error,
130 interrupted (Ctrl-C or SIGTERM). Outputs are written to a temporary file
beside the target and renamed into place, so an error or an interruption
leaves each output as it was or whole; iket never writes over its input.`,
		Example: `  iket demo                         # run the built-in example (or replay the bundled H200 capture)
  iket run warp_roles -o out        # trace a built-in kernel, write out/trace.pftrace
  iket export out/trace.iket -o t.pftrace
  iket check out/trace.iket --expect 'overlap(producer_load, consumer_compute) >= 0.5'`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(
		newDemoCmd(stdout, stderr),
		newRunCmd(stdout, stderr),
		newExportCmd(stdout, stderr),
		newCheckCmd(stdout, stderr),
		newStatsCmd(stdout, stderr),
		newDiffCmd(stdout, stderr),
		newValidateCmd(stdout, stderr),
		newDevicesCmd(stdout, stderr),
		newCalibrateCmd(stdout, stderr),
	)
	registerCompletions(root) // completion.go
	return root
}

// run executes the command line and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd(stdout, stderr)
	root.SetArgs(append([]string{}, args...)) // never nil: cobra would read os.Args
	err := root.ExecuteContext(ctx)
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		if err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintf(stderr, "iket: %s\n", safeText(err.Error()))
		}
		fmt.Fprintln(stderr, "iket: interrupted")
		return exitInterrupted
	}
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "iket: %s\n", safeText(err.Error()))
	var ce *codeError
	if errors.As(err, &ce) {
		return ce.code
	}
	return exitError
}
