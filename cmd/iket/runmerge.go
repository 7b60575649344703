package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/iket-trace/iket/perfetto"
	"github.com/iket-trace/iket/trace"
)

// mergedFile is the trace of every capture of an application run that
// wrote several (processes or GPUs), on the host's clock.
const mergedFile = "merged.pftrace"

// writeAppMerged writes out/merged.pftrace from the captures an
// application run wrote (paths), as `iket export A B ... -o` does. It is
// best effort: a capture that cannot be opened is left out with a warning,
// and so is an error writing the merge; the run's exit status is not
// changed.
func writeAppMerged(ctx context.Context, out string, paths []string, w io.Writer) {
	var cs []*trace.Capture
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	for _, p := range paths {
		c, err := trace.OpenContext(ctx, p)
		if err != nil {
			fmt.Fprintf(w, "iket: warning: %s left out of %s: %v\n", p, mergedFile, err)
			continue
		}
		cs = append(cs, c)
	}
	if len(cs) < 2 {
		return
	}
	path := filepath.Join(out, mergedFile)
	if err := writeMerged(ctx, cs, path, perfetto.Options{}); err != nil {
		fmt.Fprintf(w, "iket: warning: %s not written: %v\n", path, err)
		return
	}
	fmt.Fprintf(w, "iket: wrote %s: %d captures on one timeline, on the host's CLOCK_REALTIME\n", path, len(cs))
}
