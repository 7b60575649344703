package trace

import (
	"errors"
	"fmt"

	"github.com/iket-trace/iket/internal/raw"
)

// ErrNoHostClock is matched (errors.Is) by [AlignHost]'s error for a launch
// whose metadata has no host clocks: only launches that `iket run -- CMD`
// traced inside an application have them.
var ErrNoHostClock = errors.New("launch has no host clock")

// HostAlignment maps a launch's GPU times (%globaltimer ns, the timeline
// [Event.Time] and [Range.Start] are on) onto the host's CLOCK_REALTIME:
//
//	realtime = globaltimer + OffsetNs, within ± UncertaintyNs
//
// The launch's GPU interval, from its earliest warp start anchor to its
// latest anchor, ran inside the host interval from the realtime read right
// before the launch was issued to the one read right after it was seen
// complete. OffsetNs centres the GPU interval in the host interval; any
// offset that keeps it inside is at most half the slack away, which is
// UncertaintyNs (docs/CLOCKS.md, "Aligning with the host").
type HostAlignment struct {
	OffsetNs      int64
	UncertaintyNs int64 // half the slack rounded up; 0 when the slack is negative
	// SlackNs is the host interval's length minus the GPU interval's. It is
	// negative when the GPU interval does not fit in the host interval, which
	// the two clocks' rates disagreeing over the launch, or a corrupt anchor,
	// would cause; the offset still centres it.
	SlackNs int64
	// GPUStart and GPUEnd are the GPU interval, globaltimer ns.
	GPUStart, GPUEnd int64
}

// AlignHost computes l's [HostAlignment] from its host clocks and its warp
// headers' anchors, reading the headers (64 bytes per warp slot) as
// [NewDecoder] does. It returns an error matching [ErrNoHostClock] when l
// has no host clocks, and an error when they are out of order
// ([HostClock.Check]), no warp of l started or a header cannot be read.
func AlignHost(l *Launch) (HostAlignment, error) {
	if _, err := hostClock(l); err != nil {
		return HostAlignment{}, err
	}
	d, err := NewDecoder(l, Options{})
	if err != nil {
		return HostAlignment{}, fmt.Errorf("align launch %d (%s) with the host: %w", l.Index, l.Meta.Kernel, err)
	}
	return d.AlignHost()
}

// AlignHost is [AlignHost] of the decoder's launch, from the headers the
// decoder read when it was made (no read of its own).
func (d *Decoder) AlignHost() (HostAlignment, error) {
	hc, err := hostClock(d.l)
	if err != nil {
		return HostAlignment{}, err
	}
	start, end, ok := d.GPUSpan()
	if !ok {
		return HostAlignment{}, fmt.Errorf("align launch %d (%s) with the host: no warp started, so the launch has no GPU time", d.l.Index, d.meta.Kernel)
	}
	return alignInterval(hc, start, end), nil
}

// GPUSpan returns the launch's GPU interval, globaltimer ns: the earliest
// start anchor and the latest anchor (end anchors of finished warps, start
// anchors of the others) of the started warps whose headers the decoder
// keeps; ok is false when no warp started.
func (d *Decoder) GPUSpan() (start, end int64, ok bool) {
	return d.gpu.start, d.gpu.end, d.gpu.ok
}

// hostClock returns l's host clocks, or the error AlignHost returns for
// none or readings out of order.
func hostClock(l *Launch) (*HostClock, error) {
	hc := l.Meta.HostClock
	if hc == nil {
		return nil, fmt.Errorf("align launch %d (%s) with the host: %w", l.Index, l.Meta.Kernel, ErrNoHostClock)
	}
	if err := hc.Check(); err != nil {
		return nil, fmt.Errorf("align launch %d (%s) with the host: %w", l.Index, l.Meta.Kernel, err)
	}
	return hc, nil
}

// HostOffset returns the offset that maps l's GPU times onto the host's
// CLOCK_REALTIME (realtime = globaltimer + offsetNs) and its uncertainty,
// as [AlignHost] computes them; ok is false when AlignHost fails (no host
// clocks, no started warp, an unreadable header).
func HostOffset(l *Launch) (offsetNs, uncertaintyNs int64, ok bool) {
	a, err := AlignHost(l)
	if err != nil {
		return 0, 0, false
	}
	return a.OffsetNs, a.UncertaintyNs, true
}

// Check reports realtime readings that cannot bound a launch: negative,
// after before before, or from 2^62 ns (year 2116) on.
func (hc *HostClock) Check() error {
	if hc.RealtimeBefore < 0 || hc.RealtimeAfter < hc.RealtimeBefore || hc.RealtimeAfter >= 1<<62 {
		return fmt.Errorf("host clock: realtime_before %d, realtime_after %d: want 0 <= before <= after < 2^62", hc.RealtimeBefore, hc.RealtimeAfter)
	}
	return nil
}

// alignInterval centres the GPU interval [start, end] in hc's realtime
// interval. The differences are taken before any sum, so values near 2^62
// do not overflow.
func alignInterval(hc *HostClock, start, end int64) HostAlignment {
	slack := (hc.RealtimeAfter - hc.RealtimeBefore) - (end - start)
	a := HostAlignment{SlackNs: slack, GPUStart: start, GPUEnd: end}
	// The GPU start lies in [before, before+slack]; placing it at
	// before+slack/2 (truncated) is at most ceil(slack/2) from either end.
	a.OffsetNs = hc.RealtimeBefore - start + slack/2
	if slack > 0 {
		a.UncertaintyNs = slack - slack/2
	}
	return a
}

// gpuSpan is a launch's GPU interval: the earliest start anchor and the
// latest anchor (end anchors of finished warps, start anchors of the
// others) of the started warps whose headers the decoder keeps, leaving
// out anchors from 2^62 ns on.
type gpuSpan struct {
	start, end int64
	ok         bool
}

func (g *gpuSpan) add(h *raw.WarpHeader) {
	if h.StartGlobaltimer > 1<<62 || h.EndGlobaltimer > 1<<62 {
		return
	}
	s, e := int64(h.StartGlobaltimer), int64(h.StartGlobaltimer)
	if h.Finished() {
		e = int64(h.EndGlobaltimer)
	}
	if !g.ok || s < g.start {
		g.start = s
	}
	if !g.ok || e > g.end {
		g.end = e
	}
	g.ok = true
}
