// Timeline prints, for the first CTAs of a capture, each warp's ranges and
// marks on the common nanosecond timeline: the smallest program that reads a
// capture with package trace.
//
//	go run ./examples/timeline iket-out/trace.iket
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/iket-trace/iket/trace"
)

func main() {
	ctas := flag.Uint64("ctas", 1, "how many CTAs to print")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: timeline [-ctas N] CAPTURE")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *ctas, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "timeline:", err)
		os.Exit(1)
	}
}

func run(path string, ctas uint64, out io.Writer) error {
	c, err := trace.Open(path)
	if err != nil {
		return err
	}
	defer c.Close()
	l := c.Launch(0)
	meta := l.Meta
	d, err := trace.NewDecoder(l, trace.Options{})
	if err != nil {
		return err
	}
	var w trace.Warp
	var t0 int64
	for {
		if err := d.Next(&w); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if w.CTALinear >= ctas {
			return nil
		}
		if !w.Started {
			continue
		}
		if t0 == 0 {
			t0 = w.First // times relative to the first warp's start
		}
		role := "-"
		if w.Role != 0 {
			role = meta.NameText(w.Role)
		}
		fmt.Fprintf(out, "cta %d warp %d (sm %d, %s): %d events, %d dropped\n",
			w.CTALinear, w.Warp, w.SM, role, w.Stored, w.Dropped)
		for _, r := range w.Ranges {
			fmt.Fprintf(out, "  %s%-20s %8d .. %8d ns  (%d ns, payload %d)\n", strings.Repeat("  ", int(r.Depth)),
				meta.NameText(r.Name), r.Start-t0, r.End-t0, r.Duration(), r.Payload)
		}
		for _, m := range w.Marks {
			fmt.Fprintf(out, "  mark %-15s %8d ns  (payload %d)\n", meta.NameText(m.Name), m.Time-t0, m.Payload)
		}
	}
}
