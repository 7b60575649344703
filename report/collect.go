package report

import (
	"slices"

	"github.com/iket-trace/iket/trace"
)

// Default bounds on what a report embeds. With them a report stays below
// about 10 MB whatever the launch.
const (
	DefaultMaxEvents = 200_000
	DefaultMaxWarps  = 4096
)

// Limits bound the warps a report embeds in its timeline; the activity strip
// always covers every warp.
type Limits struct {
	// MaxEvents bounds the ranges plus marks embedded (0 = DefaultMaxEvents)
	// and MaxWarps the warps (0 = DefaultMaxWarps). Warps are embedded in
	// the order they are added (slot order, so the first CTAs) until the next
	// one does not fit; if the first one alone does not fit, its first
	// MaxEvents events in time order are embedded and it is marked Clipped.
	MaxEvents, MaxWarps int
	// CTAs and SMs, when set, embed only the warps whose linear CTA index
	// (respectively SM) lies in the inclusive span.
	CTAs, SMs *Span
}

// Span is an inclusive range of indices.
type Span struct{ First, Last uint64 }

func (s *Span) has(v uint64) bool { return s == nil || (v >= s.First && v <= s.Last) }

func (l Limits) maxEvents() int {
	if l.MaxEvents <= 0 {
		return DefaultMaxEvents
	}
	return l.MaxEvents
}

func (l Limits) maxWarps() int {
	if l.MaxWarps <= 0 {
		return DefaultMaxWarps
	}
	return l.MaxWarps
}

// Collector gathers a launch's warps for a report as a decoder yields them:
// it copies the warps it embeds (see [Limits]) and aggregates every warp
// into an [Activity] and the drop counts, so its memory is bounded by the
// limits whatever the launch's size. Not safe for concurrent use.
type Collector struct {
	meta   *trace.LaunchMeta
	lim    Limits
	warps  []WarpView
	events int
	full   bool
	act    Activity
	om     Omitted
	drops  drops
}

// NewCollector returns a collector for a launch whose names are in meta
// (nil: names are shown as "#id").
func NewCollector(meta *trace.LaunchMeta, lim Limits) *Collector {
	return &Collector{meta: meta, lim: lim}
}

// Add collects a decoded warp. It copies what it keeps; the caller may
// reuse w.
func (c *Collector) Add(w *trace.Warp) {
	c.count(w.Started, w.Finished, w.Count, uint64(w.Stored), w.Dropped)
	if w.Started && w.Last > w.First {
		c.act.AddAlive(w.First, w.Last)
	}
	for i := range w.Ranges {
		r := &w.Ranges[i]
		c.act.AddRange(nameText(c.meta, r.Name), r.Start, r.End)
	}
	n := len(w.Ranges) + len(w.Marks)
	if !c.admit(uint64(w.CTALinear), uint64(w.SM), n) {
		return
	}
	c.keep(WarpViewFrom(w, c.meta), n)
}

// AddView collects a warp given as a view, with its Stored events counted
// as Count-Dropped when Stored is 0. The kept view shares v's slices (none
// are modified).
func (c *Collector) AddView(v *WarpView) {
	stored := uint64(v.Stored)
	if stored == 0 && v.Count >= v.Dropped {
		stored = v.Count - v.Dropped
	}
	c.count(v.Started, v.Finished, v.Count, stored, v.Dropped)
	if v.Started && v.Last > v.First {
		c.act.AddAlive(v.First, v.Last)
	}
	for i := range v.Ranges {
		r := &v.Ranges[i]
		c.act.AddRange(r.Name, r.Start, r.End)
	}
	n := len(v.Ranges) + len(v.Marks)
	if c.admit(v.CTALinear, uint64(v.SM), n) {
		c.keep(*v, n)
	}
}

func (c *Collector) count(started, finished bool, count, stored, dropped uint64) {
	d := &c.drops
	d.Warps++
	if started {
		d.Started++
	}
	if finished {
		d.Finished++
	}
	d.Attempted += count
	d.Stored += stored
	d.Dropped += dropped
	if dropped > 0 {
		d.WarpsDropping++
		d.MaxPerWarp = max(d.MaxPerWarp, dropped)
	}
}

// admit decides whether a warp with n events is embedded, counting it as
// omitted when not.
func (c *Collector) admit(cta, sm uint64, n int) bool {
	if !c.lim.CTAs.has(cta) || !c.lim.SMs.has(sm) {
		c.om.Filtered++
		c.omit(n)
		return false
	}
	if c.full || len(c.warps) >= c.lim.maxWarps() ||
		(c.events+n > c.lim.maxEvents() && len(c.warps) > 0) {
		c.full = true
		c.omit(n)
		return false
	}
	return true
}

func (c *Collector) omit(n int) {
	c.om.Warps++
	c.om.Events += uint64(n)
}

// keep embeds v, clipping it when it alone exceeds the event bound.
func (c *Collector) keep(v WarpView, n int) {
	if lim := c.lim.maxEvents(); n > lim {
		v = clip(v, lim)
		c.om.Events += uint64(n - lim)
		c.full = true
		n = lim
	}
	c.warps = append(c.warps, v)
	c.events += n
}

// clip keeps the first lim ranges and marks of v in time order, in new
// slices.
func clip(v WarpView, lim int) WarpView {
	ts := make([]int64, 0, len(v.Ranges)+len(v.Marks))
	for _, r := range v.Ranges {
		ts = append(ts, r.Start)
	}
	for _, m := range v.Marks {
		ts = append(ts, m.Time)
	}
	slices.Sort(ts)
	cut := ts[lim] // keep times before cut, then fill ties up to lim
	var rs []RangeView
	var ms []MarkView
	for _, r := range v.Ranges {
		if r.Start < cut {
			rs = append(rs, r)
		}
	}
	for _, m := range v.Marks {
		if m.Time < cut {
			ms = append(ms, m)
		}
	}
	for _, r := range v.Ranges {
		if r.Start == cut && len(rs)+len(ms) < lim {
			rs = append(rs, r)
		}
	}
	for _, m := range v.Marks {
		if m.Time == cut && len(rs)+len(ms) < lim {
			ms = append(ms, m)
		}
	}
	v.Ranges, v.Marks, v.Clipped = rs, ms, true
	return v
}

// Fill sets in's Warps, Limits, Activity and Omitted from what was
// collected, and the drop counts the page shows when in has no Analysis.
// Call it after the last Add: the Warps and the activity's bins are shared
// with the collector.
func (c *Collector) Fill(in *Input) {
	in.Warps = c.warps
	in.Limits = c.lim
	act := c.act
	in.Activity = &act
	in.Omitted = c.om
	d := c.drops
	in.drops = &d
}
