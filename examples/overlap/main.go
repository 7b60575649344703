// Overlap computes how much two ranges of a capture overlap across the warps
// of each CTA, and writes the capture as a Perfetto trace: the Go API's
// analysis and export in one small program.
//
//	go run ./examples/overlap -x compute -y issue -o gemm.pftrace internal/bundled/testdata/gemm_h200.iket
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/iket-trace/iket/perfetto"
	"github.com/iket-trace/iket/trace"
)

func main() {
	x := flag.String("x", "compute", "range x: the share of its time ...")
	y := flag.String("y", "issue", "... with range y active on another warp of the CTA")
	out := flag.String("o", "", "also write a .pftrace here")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: overlap [-x RANGE] [-y RANGE] [-o FILE.pftrace] CAPTURE")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *x, *y, *out, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "overlap:", err)
		os.Exit(1)
	}
}

func run(path, x, y, pftrace string, w io.Writer) error {
	c, err := trace.Open(path)
	if err != nil {
		return err
	}
	defer c.Close()
	l := c.Launch(0)
	an, err := trace.Analyze(context.Background(), l, trace.Options{Strict: true})
	if err != nil {
		return err
	}
	a := an.Analyzer
	o, err := a.Overlap(x, y)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %s overlaps %s on another warp for %.1f%% of its time (lowest CTA %.1f%%)\n",
		l.Meta.Kernel, x, y, 100*o.Overall, 100*o.MinCTA)
	if pftrace == "" {
		return nil
	}
	f, err := os.Create(pftrace)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	if err := perfetto.ExportCapture(bw, c, perfetto.Options{Flows: true, Counters: true}); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
