package perfetto

import (
	"fmt"
	"io"

	"github.com/iket-trace/iket/trace"
)

// ExportCapture writes every launch of c as a Perfetto trace to out. It
// decodes each launch with a lenient [trace.Decoder] (unclosed and truncated
// ranges are shown, labelled), writing warps as they are decoded, so memory
// stays bounded by one CTA. Warp slots whose bytes are corrupt are skipped
// and shown as problems on the launch track. It does not close out.
func ExportCapture(out io.Writer, c *trace.Capture, opt Options) error {
	return exportWith(NewWriter(out, opt), c)
}

// exportWith is ExportCapture on a Writer of the caller's.
func exportWith(w *Writer, c *trace.Capture) error {
	for i := range c.NumLaunches() {
		l := c.Launch(i)
		d, err := trace.NewDecoder(l, trace.Options{})
		if err != nil {
			return fmt.Errorf("export launch %d (%s): %w", i, l.Meta.Kernel, err)
		}
		info := LaunchInfo{Clocks: d.Clocks(), Window: d.Window()}
		if err := w.BeginLaunch(&c.Meta, i, l.Meta, info); err != nil {
			return fmt.Errorf("export launch %d (%s): %w", i, l.Meta.Kernel, err)
		}
		err = d.Each(w.AddWarp, func(we *trace.WarpError) error {
			w.AddProblem(we.Error())
			return nil
		})
		if err != nil {
			return fmt.Errorf("export launch %d (%s): %w", i, l.Meta.Kernel, err)
		}
		if err := w.EndLaunch(); err != nil {
			return fmt.Errorf("export launch %d (%s): %w", i, l.Meta.Kernel, err)
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}
