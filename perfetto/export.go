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
		if err := exportLaunch(w, c.Launch(i), i, nil); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// exportLaunch decodes l and writes it as launch index of w (l.Index, but
// in a merged trace), with notes added to its track's description.
func exportLaunch(w *Writer, l *trace.Launch, index int, notes []string) error {
	d, err := trace.NewDecoder(l, trace.Options{})
	if err != nil {
		return fmt.Errorf("export launch %d (%s): %w", l.Index, l.Meta.Kernel, err)
	}
	if w.place.align {
		// From the headers the decoder read: the host clocks were checked
		// before anything was written, so only a launch with no started
		// warp has no alignment; it goes at its realtime_before.
		a, err := d.AlignHost()
		w.place.shift = l.Meta.HostClock.RealtimeBefore
		if err == nil {
			w.place.shift = a.OffsetNs
		}
		notes = append(notes, describeAlignment(a, err))
	}
	info := LaunchInfo{Clocks: d.Clocks(), Window: d.Window(), Notes: notes}
	if err := w.BeginLaunch(&l.Capture().Meta, index, l.Meta, info); err != nil {
		return fmt.Errorf("export launch %d (%s): %w", l.Index, l.Meta.Kernel, err)
	}
	// A warp whose records may have been overwritten gets no track, and
	// the launch says why (as the statistics leave it out).
	add := func(wp *trace.Warp) error {
		if note := wp.LeftOut(); note != "" {
			w.AddProblem(note)
			return nil
		}
		wp.Launch = index
		return w.AddWarp(wp)
	}
	err = d.Each(add, func(we *trace.WarpError) error {
		w.AddProblem(we.Error())
		return nil
	})
	if err != nil {
		return fmt.Errorf("export launch %d (%s): %w", l.Index, l.Meta.Kernel, err)
	}
	if err := w.EndLaunch(); err != nil {
		return fmt.Errorf("export launch %d (%s): %w", l.Index, l.Meta.Kernel, err)
	}
	return nil
}
