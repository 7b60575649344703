package report

import (
	"fmt"
	"maps"
	"slices"

	"github.com/iket-trace/iket/trace"
)

// This file turns an [Input.Analysis] into the page's tables.

// statRow is the duration statistics of one range name within one role.
type statRow struct {
	Role, Range string
	Count       uint64
	// Incomplete counts the unclosed or truncated ranges among Count (their
	// durations are lower bounds).
	Incomplete uint64
	// Durations in ns.
	MeanNs, P50Ns, P90Ns, P99Ns, MaxNs float64
	// Share is the fraction (0..1) of the role's warps' time spent inside the
	// range.
	Share float64
}

// overlapMatrix is the share of row x's active time during which column y
// is active (on another warp of the same CTA): Share[x][y] in 0..1.
type overlapMatrix struct {
	Names []string
	Share [][]float64
}

// drops is the launch's event accounting.
type drops struct {
	Warps, Started, Finished uint64
	// Attempted = Stored + Dropped events.
	Attempted, Stored, Dropped uint64
	// Trimmed are stored events left out by trimming to the common window.
	Trimmed uint64
	// WarpsDropping counts warps that lost events and MaxPerWarp is the most
	// one warp lost.
	WarpsDropping, MaxPerWarp uint64
}

// clockRow is one SM's clock fit (cycles to globaltimer ns).
type clockRow struct {
	SM     uint32
	MHz    float64
	Points int
	// Residuals of the anchors from the fitted line, in ns.
	ResidualRMSNs, ResidualMaxNs float64
	// Fallback says why the slope is not this SM's own fit; "" when it is.
	Fallback string
}

// violationRow counts one kind of violation.
type violationRow struct {
	Kind  string
	Count int
}

// tables are the page's tables of one analysis.
type tables struct {
	Stats      []statRow
	Overlap    *overlapMatrix
	Drops      *drops
	Clocks     []clockRow
	Violations []violationRow
	Problems   []string
	// Pipeline is the lag and bubble of each pair of two roles' series.
	Pipeline *trace.Pipeline
}

// Bounds on the problems a page lists.
const (
	maxExcludedShown   = 10
	maxViolationsShown = 20
)

// newTables builds the tables of a (nil: none) after the caller's
// problems; col are the collector's drop counts (nil: none), used when
// there is no analysis.
func newTables(a *trace.Analysis, problems []string, col *drops) tables {
	t := tables{Drops: col, Problems: slices.Clone(problems)}
	if a == nil {
		return t
	}
	t.Clocks = clockRows(a.Clocks)
	t.Violations = violationRows(a.Summary)
	s := a.Summary
	t.Drops = &drops{Warps: s.Warps, Started: s.Started, Finished: s.Finished,
		Attempted: s.Attempted, Stored: s.Stored, Dropped: s.Dropped, Trimmed: s.Trimmed}
	if a.Analyzer != nil {
		t.Stats = statRows(a.Analyzer.Stats())
		names, m := a.Analyzer.OverlapMatrix()
		t.Overlap = &overlapMatrix{Names: names, Share: m}
		if pl := a.Analyzer.Pipeline(); len(pl.Lags)+len(pl.Bubbles) > 0 {
			t.Pipeline = &pl
		}
		d := a.Analyzer.Drops()
		t.Drops.WarpsDropping = d.WarpsDropping
		if w, ok := d.Worst(); ok {
			t.Drops.MaxPerWarp = w.Dropped
		}
	} else if col != nil {
		t.Drops.WarpsDropping, t.Drops.MaxPerWarp = col.WarpsDropping, col.MaxPerWarp
	}
	for i, e := range a.Excluded {
		if i == maxExcludedShown {
			t.Problems = append(t.Problems, fmt.Sprintf("%d warps excluded from the statistics in all", a.NumExcluded))
			break
		}
		t.Problems = append(t.Problems, "excluded: "+e)
	}
	for i, v := range a.Violations {
		if i == maxViolationsShown {
			t.Problems = append(t.Problems, fmt.Sprintf("and %d more", a.Summary.TotalViolations()-maxViolationsShown))
			break
		}
		t.Problems = append(t.Problems, v.Error())
	}
	return t
}

// statRows converts an analyzer's rows ([trace.Analyzer.Stats]); the rows
// that aggregate every role (Role "") get the role "all roles".
func statRows(stats []trace.RangeStats) []statRow {
	rows := make([]statRow, len(stats))
	for i, s := range stats {
		role := s.Role
		if role == "" {
			role = "all roles"
		}
		rows[i] = statRow{Role: role, Range: s.Range, Count: s.Count, Incomplete: s.Incomplete,
			MeanNs: s.MeanNs, P50Ns: s.P50Ns, P90Ns: s.P90Ns, P99Ns: s.P99Ns, MaxNs: s.MaxNs, Share: s.Share}
	}
	return rows
}

// clockRows converts a decoder's clock fits ([trace.Decoder.Clocks]).
func clockRows(fits []trace.ClockFit) []clockRow {
	rows := make([]clockRow, len(fits))
	for i, f := range fits {
		rows[i] = clockRow{SM: f.SM, MHz: f.MHz, Points: f.Points,
			ResidualRMSNs: f.ResidualRMSNs, ResidualMaxNs: f.ResidualMaxNs, Fallback: f.Fallback}
	}
	return rows
}

// violationRows converts a summary's violation counts, ordered by kind.
func violationRows(s trace.Summary) []violationRow {
	var rows []violationRow
	for _, k := range slices.Sorted(maps.Keys(s.Violations)) {
		if n := s.Violations[k]; n > 0 {
			rows = append(rows, violationRow{Kind: k.String(), Count: n})
		}
	}
	return rows
}
