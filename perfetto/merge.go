package perfetto

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/iket-trace/iket/trace"
)

// ExportMerged writes the launches of every capture in cs as one Perfetto
// trace to out, so that several processes and GPUs of one run share a
// timeline: each capture gets a top-level track named after its host, its
// rank when known, its pid and its GPU (name and uuid), holding the
// capture's launches laid out as [ExportCapture] lays them out, and every
// time of a launch is moved from the GPU's %globaltimer onto the host's
// CLOCK_REALTIME (ns) by the launch's [trace.AlignHost] offset, so the trace
// lines up with host traces of the same run. Each launch track's
// description gives its offset and uncertainty.
//
// Every capture must have host clocks on every launch (captures that
// `iket run -- CMD` records have them); the error for one that has not
// names its file, matches [trace.ErrNoHostClock], and comes before anything
// is written, as does the error for host clocks out of order. A launch in
// which no warp started is placed at its realtime_before. A single capture
// without host clocks is written on its GPU's timeline, there being
// nothing to align it with.
//
// Track uuids derive from (capture index, launch, SM, CTA, warp slot), so
// the same captures in the same order give the same trace. It does not
// close out.
func ExportMerged(out io.Writer, cs []*trace.Capture, opt Options) error {
	if len(cs) == 0 {
		return errors.New("merge: no capture")
	}
	shift := true
	for ci, c := range cs {
		for i := range c.NumLaunches() {
			lm := &c.Meta.Launches[i]
			if lm.HostClock == nil {
				if len(cs) == 1 {
					shift = false
					break
				}
				return fmt.Errorf("merge %s: launch %d (%s): %w: only captures that iket run -- CMD recorded inside an application can be placed on the host's clock",
					captureLabel(c, ci), i, lm.Kernel, trace.ErrNoHostClock)
			}
			if err := lm.HostClock.Check(); err != nil {
				return fmt.Errorf("merge %s: launch %d (%s): %w", captureLabel(c, ci), i, lm.Kernel, err)
			}
		}
	}
	names := captureNames(cs)
	w := NewWriter(out, opt)
	g := 0 // the launch's index in the merged trace
	for ci, c := range cs {
		desc := describeCapture(c, ci, shift)
		for i := range c.NumLaunches() {
			l := c.Launch(i)
			w.place = placement{on: true, align: shift, capture: ci, local: i, name: names[ci], desc: desc}
			if err := exportLaunch(w, l, g, nil); err != nil {
				return fmt.Errorf("merge %s: %w", captureLabel(c, ci), err)
			}
			g++
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	return nil
}

// placement is where the next launch goes in a merged trace: under its
// capture's track, its times shifted onto the host's clock.
type placement struct {
	on      bool
	align   bool   // shift the launch onto the host's clock (exportLaunch sets shift)
	capture int    // the capture's index in the merge
	local   int    // the launch's index in its capture
	shift   int64  // ns added to every time of the launch
	name    string // the capture's track
	desc    string
}

// gpu returns the GPU track key and device identity of the placement's
// capture, given the device's: one track per capture, even for several
// captures of one device (two processes sharing a GPU).
func (p *placement) gpu(key uint64, uuid string) (uint64, string) {
	return mix(key ^ mix(uint64(p.capture)+1)), fmt.Sprintf("%s\x00capture %d", uuid, p.capture)
}

// captureLabel names a capture in an error: its file, or its index.
func captureLabel(c *trace.Capture, i int) string {
	if c.Path() != "" {
		return c.Path()
	}
	return fmt.Sprintf("capture %d", i)
}

// captureNames returns each capture's track name, "host · rank R · pid P ·
// GPU-name GPU-uuid8", with " · capture i" added to names that would
// otherwise repeat.
func captureNames(cs []*trace.Capture) []string {
	names := make([]string, len(cs))
	seen := map[string]int{}
	for i, c := range cs {
		names[i] = captureName(c, i)
		seen[names[i]]++
	}
	for i := range names {
		if seen[names[i]] > 1 {
			names[i] += fmt.Sprintf(" · capture %d", i)
		}
	}
	return names
}

func captureName(c *trace.Capture, i int) string {
	var parts []string
	p := c.Meta.Process
	host := c.Meta.Host
	if p != nil && p.Host != "" {
		host = p.Host
	}
	if host != "" {
		parts = append(parts, host)
	}
	switch {
	case p != nil:
		if p.Rank >= 0 {
			parts = append(parts, fmt.Sprintf("rank %d", p.Rank))
		}
		parts = append(parts, fmt.Sprintf("pid %d", p.PID))
	case c.Path() != "":
		parts = append(parts, filepath.Base(c.Path()))
	default:
		parts = append(parts, fmt.Sprintf("capture %d", i))
	}
	gpu := "GPU not recorded"
	if d := c.Meta.Device; d != nil {
		gpu = d.Name
		if u := shortUUID(d.UUID); u != "" {
			gpu += " " + u
		}
	}
	return strings.Join(append(parts, gpu), " · ")
}

// shortUUID is a device uuid cut to "GPU-" and 8 hex digits.
func shortUUID(u string) string {
	n := 8
	if strings.HasPrefix(u, "GPU-") {
		n += 4
	}
	if len(u) > n {
		return u[:n]
	}
	return u
}

// describeCapture is the description of a capture's track, above its GPU's.
func describeCapture(c *trace.Capture, i int, shifted bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "capture %d: %s", i, captureLabel(c, i))
	if p := c.Meta.Process; p != nil {
		fmt.Fprintf(&b, "\nprocess %d", p.PID)
		if p.PPID != 0 {
			fmt.Fprintf(&b, " (parent %d)", p.PPID)
		}
		if p.Exe != "" {
			fmt.Fprintf(&b, ": %s", p.Exe)
		}
		if len(p.Args) > 0 {
			fmt.Fprintf(&b, "\nargs: %s", strings.Join(p.Args, " "))
		}
		if p.Host != "" {
			fmt.Fprintf(&b, "\nhost %s", p.Host)
		}
		if len(p.Env) > 0 {
			fmt.Fprintf(&b, "\n%s", strings.Join(p.Env, " "))
		}
	} else if c.Meta.Host != "" {
		fmt.Fprintf(&b, "\nhost %s", c.Meta.Host)
	}
	if shifted {
		b.WriteString("\ntimes: the host's CLOCK_REALTIME, ns (each launch track gives its offset and uncertainty)")
	} else {
		b.WriteString("\ntimes: the GPU's globaltimer, ns (no host clock recorded)")
	}
	return b.String()
}

// describeAlignment is the launch track's note on its host alignment.
func describeAlignment(a trace.HostAlignment, err error) string {
	if err != nil {
		return fmt.Sprintf("host clock: not aligned (%v); times placed from realtime_before", err)
	}
	s := fmt.Sprintf("host clock: CLOCK_REALTIME = globaltimer %+d ns, within ±%d ns (GPU interval of %d ns in a host interval of %d ns)",
		a.OffsetNs, a.UncertaintyNs, a.GPUEnd-a.GPUStart, a.GPUEnd-a.GPUStart+a.SlackNs)
	if a.SlackNs < 0 {
		s += fmt.Sprintf("; the GPU interval is %d ns longer than the host's, so the clocks disagree and the bound does not hold", -a.SlackNs)
	}
	return s
}
