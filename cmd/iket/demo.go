package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/iket-trace/iket/builtin"
	"github.com/iket-trace/iket/iket"
	"github.com/iket-trace/iket/internal/bundled"
	"github.com/iket-trace/iket/internal/outfile"
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
					prog, err := builtin.Lookup("warp_roles")
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
			return replayBundled(cmd.Context(), o.out, stdout)
		},
	}
	o.flags(cmd)
	cmd.Flags().BoolVar(&replay, "replay", false, "replay the bundled capture even when a GPU is present")
	return cmd
}

// replayBundled writes the bundled capture to out and the outputs from it.
// It refuses to replace a trace.iket in out that is another capture (say,
// one iket run wrote); one from an earlier replay is the same bytes.
func replayBundled(ctx context.Context, out string, stdout io.Writer) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return failWith(exitError, fmt.Errorf("demo: %w", err))
	}
	data, err := bundled.WarpRolesH200()
	if err != nil {
		return failWith(exitError, fmt.Errorf("demo: %w", err))
	}
	capPath := filepath.Join(out, captureFile)
	if old, err := os.Lstat(capPath); err == nil {
		same := false
		if old.Mode().IsRegular() && old.Size() == int64(len(data)) {
			b, err := os.ReadFile(capPath)
			same = err == nil && bytes.Equal(b, data)
		}
		if !same {
			return failWith(exitError, fmt.Errorf("demo: %s holds another capture; iket will not replace it with the bundled one (give another -o)", capPath))
		}
	} else if err := outfile.WriteFile(ctx, capPath, data); err != nil {
		return failWith(exitError, fmt.Errorf("demo: %w", err))
	}
	return writeOutputs(ctx, out, "bundled capture (recorded on an NVIDIA H200)", stdout)
}
