package report

import (
	"maps"
	"slices"

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

	Stats   []StatRow
	Overlap *OverlapMatrix
	Drops   *Drops
	Clocks  []ClockRow
	// Violations are counts of pairing and recording problems by kind and
	// Problems the text of the first few; both optional.
	Violations []ViolationRow
	Problems   []string
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

// StatRow is the duration statistics of one range name within one role.
type StatRow struct {
	Role, Range string
	Count       uint64
	// Incomplete counts the unclosed or truncated ranges among Count (their
	// durations are lower bounds).
	Incomplete uint64
	// Durations in ns.
	MeanNs, P50Ns, P99Ns, MaxNs float64
	// Share is the fraction (0..1) of the role's warps' time spent inside the
	// range.
	Share float64
}

// OverlapMatrix is the share of row x's active time during which column y
// is active (on another warp of the same CTA): Share[x][y] in 0..1, with
// len(Share) == len(Names) and every row as long.
type OverlapMatrix struct {
	Names []string
	Share [][]float64
}

// Drops is the launch's event accounting.
type Drops struct {
	Warps, Started, Finished uint64
	// Attempted = Stored + Dropped events.
	Attempted, Stored, Dropped uint64
	// Trimmed are stored events left out by trimming to the common window.
	Trimmed uint64
	// WarpsDropping counts warps that lost events and MaxPerWarp is the most
	// one warp lost.
	WarpsDropping, MaxPerWarp uint64
}

// ClockRow is one SM's clock fit (cycles to globaltimer ns).
type ClockRow struct {
	SM     uint32
	MHz    float64
	Points int
	// Residuals of the anchors from the fitted line, in ns.
	ResidualRMSNs, ResidualMaxNs float64
	// Fallback says why the slope is not this SM's own fit; "" when it is.
	Fallback string
}

// ViolationRow counts one kind of violation.
type ViolationRow struct {
	Kind  string
	Count int
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

// StatRowsFrom converts an analyzer's rows ([trace.Analyzer.Stats]); the
// rows that aggregate every role (Role "") get the role "all roles".
func StatRowsFrom(stats []trace.RangeStats) []StatRow {
	rows := make([]StatRow, len(stats))
	for i, s := range stats {
		role := s.Role
		if role == "" {
			role = "all roles"
		}
		rows[i] = StatRow{Role: role, Range: s.Range, Count: s.Count, Incomplete: s.Incomplete,
			MeanNs: s.MeanNs, P50Ns: s.P50Ns, P99Ns: s.P99Ns, MaxNs: s.MaxNs, Share: s.Share}
	}
	return rows
}

// ClockRowsFrom converts a decoder's clock fits ([trace.Decoder.Clocks]).
func ClockRowsFrom(fits []trace.ClockFit) []ClockRow {
	rows := make([]ClockRow, len(fits))
	for i, f := range fits {
		rows[i] = ClockRow{SM: f.SM, MHz: f.MHz, Points: f.Points,
			ResidualRMSNs: f.ResidualRMSNs, ResidualMaxNs: f.ResidualMaxNs, Fallback: f.Fallback}
	}
	return rows
}

// DropsFrom converts a decoder's [trace.Summary]. WarpsDropping and
// MaxPerWarp are not in a summary: a [Collector] counts them
// ([Collector.Drops]).
func DropsFrom(s trace.Summary) *Drops {
	return &Drops{Warps: s.Warps, Started: s.Started, Finished: s.Finished,
		Attempted: s.Attempted, Stored: s.Stored, Dropped: s.Dropped, Trimmed: s.Trimmed}
}

// ViolationRowsFrom converts a summary's violation counts, ordered by kind.
func ViolationRowsFrom(s trace.Summary) []ViolationRow {
	kinds := slices.Sorted(maps.Keys(s.Violations))
	var rows []ViolationRow
	for _, k := range kinds {
		if n := s.Violations[k]; n > 0 {
			rows = append(rows, ViolationRow{Kind: k.String(), Count: n})
		}
	}
	return rows
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
