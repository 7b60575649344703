package perfetto

import (
	"fmt"
	"io"
	"math"

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

// fitShift keeps a merged launch's shifted times in the trace's [0, 2^63):
// a pass over d (reset after it) finds the earliest and latest times of
// the warps written, and a shift that would put the earliest before 0
// becomes one that puts it at 0, with a note; a latest time the shift would
// carry past 2^63 is an error.
func fitShift(d *trace.Decoder, shift *int64) (string, error) {
	lo, hi, ok := int64(math.MaxInt64), int64(math.MinInt64), false
	err := d.Each(func(w *trace.Warp) error {
		if w.LeftOut() == "" {
			lo, hi, ok = min(lo, w.First), max(hi, w.Last), true
		}
		return nil
	}, func(*trace.WarpError) error { return nil })
	d.Reset()
	if err != nil || !ok {
		return "", err
	}
	if hi-lo > math.MaxInt64/4 {
		return "", fmt.Errorf("host clock: the launch's times span %d ns, too long to place", hi-lo)
	}
	note := ""
	if lo+*shift < 0 {
		note = fmt.Sprintf("host clock: the alignment put the launch's first time %d ns before the trace's 0; placed at 0 instead", -(lo + *shift))
		*shift = -lo
	}
	if *shift > 0 && hi > math.MaxInt64-*shift {
		return "", fmt.Errorf("host clock: the launch's times (to %d ns) shifted by %d ns pass 2^63 ns", hi, *shift)
	}
	return note, nil
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
		if note, err := fitShift(d, &w.place.shift); err != nil {
			return fmt.Errorf("export launch %d (%s): %w", l.Index, l.Meta.Kernel, err)
		} else if note != "" {
			notes = append(notes, note)
		}
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
