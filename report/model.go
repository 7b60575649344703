package report

import (
	"github.com/iket-trace/iket/trace"
)

// Input is everything one report shows. Write reads it and does not keep
// it; it is not modified.
type Input struct {
	// Title heads the page; empty means "iket: KERNEL".
	Title string
	// Meta is the capture's metadata (device, conditions, launches) and
	// Launch the index of the launch shown. Meta may be nil, then only the
	// warps and tables are shown.
	Meta   *trace.Meta
	Launch int

	// Warps are the warps whose events the timeline draws.
	//
	// When Activity is nil, Write passes Warps through a [Collector] with
	// Limits itself: the first warps in order are embedded up to
	// Limits.MaxEvents and the activity strip covers them all. When Activity
	// is set (the caller used a Collector, see [Collector.Fill]), Warps,
	// Activity and Omitted are embedded as they are.
	Warps    []WarpView
	Limits   Limits
	Activity *Activity
	Omitted  Omitted

	// Analysis is the launch's analysis ([trace.Analyze]), whose
	// statistics, overlap matrix, drops, clock fits, violation counts and
	// first problems the page's tables show; nil shows none of them (the
	// drops then count the warps collected).
	Analysis *trace.Analysis
	// Problems are notes of the caller's, shown before the analysis's
	// excluded warps and violations.
	Problems []string

	drops *drops // the collector's counts, set by [Collector.Fill]
}

// WarpView is one warp as the timeline draws it. It owns its slices.
type WarpView struct {
	Slot      uint64
	SM        uint32
	CTA       [3]uint32
	CTALinear uint64
	Warp      uint32 // within the CTA
	Role      string // "" when the warp set no role
	Started   bool
	Finished  bool
	// First and Last are the ns times of the warp's start and end anchors
	// (globaltimer ns; 0 when unknown).
	First, Last int64
	// Count is the events the warp attempted, Stored those its buffer kept
	// and Dropped those it lost.
	Count, Dropped uint64
	Stored         int
	Ranges         []RangeView
	Marks          []MarkView
	// Clipped says that the warp's ranges and marks were cut to fit
	// [Limits.MaxEvents]; only the first embedded warp can be clipped.
	Clipped bool
}

// RangeView is one range of a warp.
type RangeView struct {
	Name       string
	Payload    uint16
	Start, End int64 // ns
	// Depth is the push/pop nesting depth (0 outermost); async (start/end)
	// ranges have Depth 0 and are drawn on sub-row Lane below the push/pop
	// rows.
	Depth int32
	Async bool
	Lane  int32
	// Flags say the range was cut: [trace.RangeUnclosed] (still open at the
	// warp's end) or [trace.RangeTruncated] (its begin was lost to a wrapped
	// buffer). The page hatches such bars.
	Flags trace.RangeFlags
}

// MarkView is one instant event.
type MarkView struct {
	Name    string
	Payload uint16
	Time    int64 // ns
}

// Omitted says what the embedded timeline leaves out.
type Omitted struct {
	// Warps and Events not embedded (their events are in the activity strip
	// only). Events counts ranges and marks.
	Warps, Events uint64
	// Filtered counts warps left out by [Limits.CTAs] or [Limits.SMs]
	// (included in Warps).
	Filtered uint64
}

// WarpViewFrom copies what the timeline needs of a decoded warp; names are
// resolved through meta's name table (meta may be nil: names become "#id").
// The result shares nothing with w, which the caller may reuse.
func WarpViewFrom(w *trace.Warp, meta *trace.LaunchMeta) WarpView {
	v := warpHead(w, meta)
	if len(w.Ranges) > 0 {
		v.Ranges = make([]RangeView, len(w.Ranges))
		for i := range w.Ranges {
			v.Ranges[i] = rangeView(&w.Ranges[i], meta)
		}
	}
	if len(w.Marks) > 0 {
		v.Marks = make([]MarkView, len(w.Marks))
		for i, m := range w.Marks {
			v.Marks[i] = MarkView{Name: nameText(meta, m.Name), Payload: m.Payload, Time: m.Time}
		}
	}
	return v
}

func warpHead(w *trace.Warp, meta *trace.LaunchMeta) WarpView {
	v := WarpView{
		Slot: w.Slot, SM: w.SM, CTA: w.CTA, CTALinear: w.CTALinear, Warp: w.Warp,
		Started: w.Started, Finished: w.Finished, First: w.First, Last: w.Last,
		Count: w.Count, Dropped: w.Dropped, Stored: w.Stored,
	}
	if w.Role != 0 {
		v.Role = nameText(meta, w.Role)
	}
	return v
}

func rangeView(r *trace.Range, meta *trace.LaunchMeta) RangeView {
	return RangeView{Name: nameText(meta, r.Name), Payload: r.Payload, Start: r.Start, End: r.End,
		Depth: r.Depth, Async: r.Async, Lane: r.Lane, Flags: r.Flags}
}

func nameText(meta *trace.LaunchMeta, id uint16) string {
	if meta == nil {
		return (&trace.LaunchMeta{}).NameText(id)
	}
	return meta.NameText(id)
}
