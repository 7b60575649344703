package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/iket-trace/iket/iket"
	"github.com/iket-trace/iket/internal/bundled"
)

func newDemoCmd(stdout, stderr io.Writer) *cobra.Command {
	var o runOptions
	var replay bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Trace the built-in warp_roles example, or replay its bundled H200 capture",
		Long: `demo runs the seed example: in each CTA, warp 0 (producer) copies 256 floats
to shared memory, both warps meet at a barrier, and warp 1 (consumer) writes
in*2+1, on a grid that fills the GPU. On a machine with a GPU it runs like
'iket run warp_roles'. Without one it says so and replays the capture recorded
on an NVIDIA H200 that ships inside iket, writing the same outputs.`,
		Example: `  iket demo
  iket demo --replay -o /tmp/demo   # the bundled capture even when a GPU is present`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !replay {
				dev, err := iket.OpenDevice(o.device)
				if err == nil {
					defer dev.Close()
					prog, err := iket.Builtin("warp_roles")
					if err != nil {
						return failWith(exitError, err)
					}
					return runKernel(cmd, dev, prog, nil, nil, o, stdout, stderr)
				}
				if !noDevice(err) {
					return failWith(exitError, err)
				}
				fmt.Fprintf(stderr, "no GPU here (%v)\nreplaying the bundled H200 capture of warp_roles instead\n", err)
			}
			return replayBundled(o.out, stdout)
		},
	}
	o.flags(cmd)
	cmd.Flags().BoolVar(&replay, "replay", false, "replay the bundled capture even when a GPU is present")
	return cmd
}

// replayBundled writes the bundled capture to out and the outputs from it.
func replayBundled(out string, stdout io.Writer) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return failWith(exitError, fmt.Errorf("demo: %w", err))
	}
	data, err := bundled.WarpRolesH200()
	if err != nil {
		return failWith(exitError, fmt.Errorf("demo: %w", err))
	}
	if err := os.WriteFile(filepath.Join(out, captureFile), data, 0o644); err != nil {
		return failWith(exitError, fmt.Errorf("demo: %w", err))
	}
	return writeOutputs(out, "bundled capture (recorded on an NVIDIA H200)", stdout)
}
