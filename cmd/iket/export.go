package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/iket-trace/iket/internal/outfile"
	"github.com/iket-trace/iket/perfetto"
	"github.com/iket-trace/iket/trace"
)

type exportOptions struct {
	output   string
	format   string
	compress bool
	flows    bool
	counters bool
	noFlows  bool // deprecated: flows are off unless --flows
	rawCyc   bool
	launch   int
}

// writer is the Writer's options the flags ask for.
func (o *exportOptions) writer() perfetto.Options {
	return perfetto.Options{Compress: o.compress, Flows: o.flows && !o.noFlows, Counters: o.counters, RawCycles: o.rawCyc}
}

func newExportCmd(stdout, stderr io.Writer) *cobra.Command {
	var o exportOptions
	cmd := &cobra.Command{
		Use:   "export CAPTURE... -o FILE",
		Short: "Convert a capture to a Perfetto trace (.pftrace), Chrome JSON or an HTML report",
		Long: `export reads a capture (.iket) and writes it for a viewer. The default format
is Perfetto's protobuf trace (open it at ui.perfetto.dev); --format json writes
Chrome's trace-event JSON for tools that read only that; --format html a
self-contained report (timeline by role, stats, latency, conditions) that
needs no network. No GPU is needed.

The .pftrace holds every warp's slices and marks (about 24 bytes per recorded
event) and the launch's summary tracks; --flows adds producer-to-consumer
arrows and --counters per-CTA counter tracks, each about as large again.

Several captures (of the processes and GPUs of one run, as iket run -- CMD
writes them) make one .pftrace: a track per capture, named after its host,
rank, pid and GPU, and every launch's times moved from the GPU's clock onto
the host's CLOCK_REALTIME (ns), each launch within the uncertainty its track
states (docs/CLOCKS.md, "Aligning with the host"), so that it lines up with a
host trace of the same run. Every capture must hold host clocks: one that does
not (a capture of iket run KERNEL) is refused, exit status 2.`,
		Example: `  iket export out/trace.iket -o trace.pftrace
  iket export out/trace.iket --format json -o trace.json
  iket export out/trace.iket -o report.html
  iket export out/pid*-gpu*/trace.iket -o merged.pftrace`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return runExportMerged(cmd.Context(), args, o, stdout)
			}
			return runExport(cmd.Context(), args[0], o, stdout)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "", "output file (default: CAPTURE with the format's extension)")
	f.StringVar(&o.format, "format", "", "pftrace, json or html (default: from the output's extension, else pftrace)")
	f.BoolVar(&o.compress, "compress", false, "deflate packets (compressed_packets) for large traces")
	f.BoolVar(&o.flows, "flows", false, "pftrace: add producer-to-consumer flow arrows (about 20 bytes per arrow)")
	f.BoolVar(&o.counters, "counters", false, "pftrace: add per-CTA counter tracks, warps of each role inside each range (about 20 bytes per change)")
	f.BoolVar(&o.rawCyc, "raw-cycles", false, "pftrace: add each range's and mark's raw SM cycle counts as annotations")
	f.BoolVar(&o.noFlows, "no-flows", false, "omit flow arrows (the default; see --flows)")
	_ = f.MarkDeprecated("no-flows", "flows are off unless --flows")
	f.IntVar(&o.launch, "launch", -1, "html: the launch to report (needed when the capture has several; pftrace and json hold every launch)")
	return cmd
}

func exportFormat(o exportOptions) (string, error) {
	format := o.format
	if format == "" {
		switch strings.ToLower(filepath.Ext(o.output)) {
		case ".json":
			format = "json"
		case ".html":
			format = "html"
		default:
			format = "pftrace"
		}
	}
	switch format {
	case "pftrace", "json", "html":
		return format, nil
	}
	return "", failWith(exitError, fmt.Errorf("--format %q: want pftrace, json or html", o.format))
}

func runExport(ctx context.Context, path string, o exportOptions, stdout io.Writer) error {
	format, err := exportFormat(o)
	if err != nil {
		return err
	}
	if o.output == "" {
		o.output = strings.TrimSuffix(path, filepath.Ext(path)) + "." + format
	}
	if same, _ := sameFile(path, o.output); same {
		return failWith(exitError, fmt.Errorf("export: output %s is the capture itself; give another -o", o.output))
	}
	c, err := openCapture(ctx, path)
	if err != nil {
		return err
	}
	defer c.Close()
	if format == "html" {
		i, err := pickLaunch(c, o.launch, "export --format html")
		if err != nil {
			return err
		}
		if err := writeReport(ctx, c, i, o.output); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s\n", o.output)
		return nil
	}
	if o.launch >= 0 {
		return failWith(exitError, fmt.Errorf("export: --launch is for --format html; a %s export holds every launch", format))
	}
	if err := writeExport(ctx, c, o.output, format, o.writer()); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", o.output)
	return nil
}

// writeExport writes c to path in format through a temporary file renamed
// into place (internal/outfile), so an error or a signal leaves path as it
// was; it refuses to write over the capture itself.
func writeExport(ctx context.Context, c *trace.Capture, path, format string, opt perfetto.Options) error {
	return writeBuffered(ctx, path, []string{c.Path()}, func(w io.Writer) error {
		if format == "json" {
			return perfetto.WriteJSON(w, c)
		}
		return perfetto.ExportCapture(w, c, opt)
	})
}

// writeBuffered runs write into a buffered temporary file renamed onto path
// when write and the flush succeed; it refuses to write over any of inputs.
func writeBuffered(ctx context.Context, path string, inputs []string, write func(io.Writer) error) error {
	f, err := outfile.CreateContext(ctx, path, inputs...)
	if err != nil {
		return failWith(exitError, fmt.Errorf("export: %w", err))
	}
	defer f.Abort()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := write(bw); err != nil {
		return failWith(exitError, fmt.Errorf("export %s: %w", path, err))
	}
	if err := bw.Flush(); err != nil {
		return failWith(exitError, fmt.Errorf("export %s: %w", path, err))
	}
	if err := f.Commit(); err != nil {
		return failWith(exitError, fmt.Errorf("export: %w", err))
	}
	return nil
}

// sameFile reports whether a and b name one existing file.
func sameFile(a, b string) (bool, error) {
	sa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	sb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(sa, sb), nil
}

// runExportMerged writes several captures as one pftrace on the host's
// clock (perfetto.ExportMerged).
func runExportMerged(ctx context.Context, paths []string, o exportOptions, stdout io.Writer) error {
	if o.output == "" {
		return failWith(exitError, errors.New("export: several captures make one trace: give it with -o"))
	}
	if format, err := exportFormat(o); err != nil {
		return err
	} else if format != "pftrace" {
		return failWith(exitError, fmt.Errorf("export: several captures make one pftrace, not %s", format))
	}
	if o.launch >= 0 {
		return failWith(exitError, errors.New("export: --launch is for --format html of one capture"))
	}
	var cs []*trace.Capture
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	for _, p := range paths {
		c, err := openCapture(ctx, p)
		if err != nil {
			return err
		}
		cs = append(cs, c)
	}
	if err := writeMerged(ctx, cs, o.output, o.writer()); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", o.output)
	return nil
}

// writeMerged writes cs to path as one pftrace on the host's clock, through
// a temporary file renamed into place, refusing to write over a capture.
func writeMerged(ctx context.Context, cs []*trace.Capture, path string, opt perfetto.Options) error {
	inputs := make([]string, 0, len(cs))
	for _, c := range cs {
		inputs = append(inputs, c.Path())
	}
	return writeBuffered(ctx, path, inputs, func(w io.Writer) error { return perfetto.ExportMerged(w, cs, opt) })
}
