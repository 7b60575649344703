package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/iket-trace/iket/check"
	"github.com/iket-trace/iket/trace"
)

type diffOptions struct {
	launch int
	json   bool
	trim   bool
}

func newDiffCmd(stdout, stderr io.Writer) *cobra.Command {
	var o diffOptions
	cmd := &cobra.Command{
		Use:   "diff BASE NEW",
		Short: "Compare two captures: per role and range count, p50, p90, p99 and their change; overlap before and after",
		Long: `diff decodes one launch of each capture and prints, per warp role and range
(matched by their names, so the two builds may number them differently), the
count and the p50, p90 and p99 durations before (BASE) and after (NEW) with
the ratio new / base, then each overlap(x, y) that is not 0 in either capture
before and after with the change (new - base). A row that only one capture
has shows "-" for the other. --launch picks the launch in both (needed when
a capture has several). Exit 0 unless an input cannot be read (2); to fail
on a regression, use iket check NEW --baseline BASE.`,
		Example: `  iket diff before/trace.iket after/trace.iket
  iket diff --json before/trace.iket after/trace.iket | jq '.ranges[] | select(.ratio.p99 > 1.05)'`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDiff(cmd.Context(), args[0], args[1], o, stdout)
		},
	}
	cmd.Flags().IntVar(&o.launch, "launch", -1, "launch index in both captures (needed when one has several)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	cmd.Flags().BoolVar(&o.trim, "trim", false, "wrap mode: trim to the window common to all warps")
	return cmd
}

// diffStats are one row's numbers in one capture.
type diffStats struct {
	Count  uint64  `json:"count"`
	MeanNs float64 `json:"mean_ns"`
	P50Ns  float64 `json:"p50_ns"`
	P90Ns  float64 `json:"p90_ns"`
	P99Ns  float64 `json:"p99_ns"`
}

// diffRatios are new / base; a ratio is absent when either side is missing
// or 0.
type diffRatios struct {
	Count *float64 `json:"count,omitempty"`
	P50   *float64 `json:"p50,omitempty"`
	P90   *float64 `json:"p90,omitempty"`
	P99   *float64 `json:"p99,omitempty"`
}

// diffRow is one role and range (Role "" for every role).
type diffRow struct {
	Role  string     `json:"role"`
	Range string     `json:"range"`
	Base  *diffStats `json:"base"` // nil when BASE has no such row
	New   *diffStats `json:"new"`
	Ratio diffRatios `json:"ratio"`
}

// diffOverlap is overlap(x, y) in both captures; a side is nil when that
// capture lacks the series.
type diffOverlap struct {
	X      string   `json:"x"`
	Y      string   `json:"y"`
	Base   *float64 `json:"base"`
	New    *float64 `json:"new"`
	Change *float64 `json:"change,omitempty"` // new - base
}

// diffJSON is the --json output of iket diff.
type diffJSON struct {
	Base     string        `json:"base"`
	New      string        `json:"new"`
	Kernel   [2]string     `json:"kernel"` // base's and new's
	Ranges   []diffRow     `json:"ranges"`
	Overlaps []diffOverlap `json:"overlaps"`
}

// diffSide decodes the launch of one capture as stats does.
func diffSide(ctx context.Context, path string, o diffOptions) (*trace.Analysis, error) {
	c, err := openCapture(ctx, path)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	i, err := pickLaunch(c, o.launch, "diff")
	if err != nil {
		return nil, err
	}
	return analyze(ctx, c, i, trace.Options{TrimCommonWindow: o.trim})
}

func runDiff(ctx context.Context, basePath, newPath string, o diffOptions, stdout io.Writer) error {
	base, err := diffSide(ctx, basePath, o)
	if err != nil {
		return err
	}
	cur, err := diffSide(ctx, newPath, o)
	if err != nil {
		return err
	}
	d := diffOf(base.Analyzer, cur.Analyzer)
	d.Base, d.New = basePath, newPath
	d.Kernel = [2]string{base.Meta.Kernel, cur.Meta.Kernel}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(d); err != nil {
			return failWith(exitError, fmt.Errorf("diff: %w", err))
		}
		return nil
	}
	writeDiff(stdout, d)
	return nil
}

// diffOf compares the analyses: rows in base's order, then the rows only
// new has; overlaps of every series pair of either matrix that is not 0 in
// one of them.
func diffOf(base, cur *trace.Analyzer) diffJSON {
	d := diffJSON{Ranges: []diffRow{}, Overlaps: []diffOverlap{}}
	type key struct{ role, rng string }
	at := map[key]int{}
	add := func(s trace.RangeStats, isNew bool) {
		k := key{s.Role, s.Range}
		i, ok := at[k]
		if !ok {
			i = len(d.Ranges)
			at[k] = i
			d.Ranges = append(d.Ranges, diffRow{Role: s.Role, Range: s.Range})
		}
		st := &diffStats{Count: s.Count, MeanNs: s.MeanNs, P50Ns: s.P50Ns, P90Ns: s.P90Ns, P99Ns: s.P99Ns}
		if isNew {
			d.Ranges[i].New = st
		} else {
			d.Ranges[i].Base = st
		}
	}
	for _, s := range base.Stats() {
		add(s, false)
	}
	for _, s := range cur.Stats() {
		add(s, true)
	}
	for i := range d.Ranges {
		r := &d.Ranges[i]
		if r.Base == nil || r.New == nil {
			continue
		}
		r.Ratio = diffRatios{Count: ratio(float64(r.New.Count), float64(r.Base.Count)),
			P50: ratio(r.New.P50Ns, r.Base.P50Ns), P90: ratio(r.New.P90Ns, r.Base.P90Ns), P99: ratio(r.New.P99Ns, r.Base.P99Ns)}
	}
	bn, bm := base.OverlapMatrix()
	nn, nm := cur.OverlapMatrix()
	type pair struct{ x, y string }
	ov := map[pair]*diffOverlap{}
	var order []pair
	collect := func(names []string, m [][]float64, isNew bool) {
		for i, x := range names {
			for j, y := range names {
				p := pair{x, y}
				o := ov[p]
				if o == nil {
					o = &diffOverlap{X: x, Y: y}
					ov[p] = o
					order = append(order, p)
				}
				v := m[i][j]
				if isNew {
					o.New = &v
				} else {
					o.Base = &v
				}
			}
		}
	}
	collect(bn, bm, false)
	collect(nn, nm, true)
	for _, p := range order {
		o := ov[p]
		if (o.Base == nil || *o.Base == 0) && (o.New == nil || *o.New == 0) {
			continue
		}
		if o.Base != nil && o.New != nil {
			c := *o.New - *o.Base
			o.Change = &c
		}
		d.Overlaps = append(d.Overlaps, *o)
	}
	return d
}

// ratio returns a / b, or nil when b is 0.
func ratio(a, b float64) *float64 {
	if b == 0 {
		return nil
	}
	r := a / b
	return &r
}

func writeDiff(w io.Writer, d diffJSON) {
	fmt.Fprintf(w, "base %s (%s), new %s (%s)\n\n", safeName(d.Base), safeName(d.Kernel[0]), safeName(d.New), safeName(d.Kernel[1]))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "role\trange\tcount\t\tp50\t\t\tp90\t\t\tp99\t\t\t")
	fmt.Fprintln(tw, "\t\tbase\tnew\tbase\tnew\tnew/base\tbase\tnew\tnew/base\tbase\tnew\tnew/base\t")
	ns := func(s *diffStats, f func(*diffStats) float64) string {
		if s == nil {
			return "-"
		}
		return check.FormatNs(f(s))
	}
	cnt := func(s *diffStats) string {
		if s == nil {
			return "-"
		}
		return fmt.Sprint(s.Count)
	}
	x := func(r *float64) string {
		if r == nil {
			return "-"
		}
		return fmt.Sprintf("%.3fx", *r)
	}
	p50 := func(s *diffStats) float64 { return s.P50Ns }
	p90 := func(s *diffStats) float64 { return s.P90Ns }
	p99 := func(s *diffStats) float64 { return s.P99Ns }
	for _, r := range d.Ranges {
		role := r.Role
		if role == "" {
			role = "(all)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", safeName(role), safeName(r.Range),
			cnt(r.Base), cnt(r.New),
			ns(r.Base, p50), ns(r.New, p50), x(r.Ratio.P50),
			ns(r.Base, p90), ns(r.New, p90), x(r.Ratio.P90),
			ns(r.Base, p99), ns(r.New, p99), x(r.Ratio.P99))
	}
	tw.Flush()
	if len(d.Overlaps) == 0 {
		return
	}
	fmt.Fprintln(w, "\noverlap(x, y) (share of x's time with y active on another warp of the CTA)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "x\ty\tbase\tnew\tchange\t")
	v := func(f *float64, format string) string {
		if f == nil {
			return "-"
		}
		return fmt.Sprintf(format, *f)
	}
	for _, o := range d.Overlaps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", safeName(o.X), safeName(o.Y), v(o.Base, "%.3f"), v(o.New, "%.3f"), v(o.Change, "%+.3f"))
	}
	tw.Flush()
}
