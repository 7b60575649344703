package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/iket-trace/iket/check"

	"github.com/iket-trace/iket/trace"
)

type statsOptions struct {
	launch int
	json   bool
	trim   bool
}

func newStatsCmd(stdout, stderr io.Writer) *cobra.Command {
	var o statsOptions
	cmd := &cobra.Command{
		Use:   "stats CAPTURE",
		Short: "Per role and range: count, mean, p50, p90, p99, max, share; overlap matrix; pipeline lags and bubbles; drops",
		Long: `stats decodes one launch of a capture and prints, per warp role and range name,
the count, mean, p50, p90, p99 and max duration and the share of the warps'
time spent inside (a row "(all)" adds up a name that several roles ran);
then the overlap matrix (row x, column y: the share of x's active time
during which y is active on another warp of the same CTA; a name several
roles ran appears per role, "role:range", and over every role, plain); the
pipeline: per pair of ranges of two roles, the lag from x's end to the
start of y's range of the same stage (the payload; not between a range
with stages and one whose payload is always 0, nor where y's warps
mostly run another number of ranges of a stage than x's), and the bubbles (y
active while x runs on no warp, as a share of the CTAs' time); the per-SM
clock fit and the drops. Every launch of the capture, one after the
other, unless --launch picks one; --json prints one object for a capture of
one launch (or with --launch), else an array of one per launch. Warps whose
records cannot be trusted are left out and listed.`,
		Example: `  iket stats out/trace.iket
  iket stats --json out/trace.iket | jq '.stats[] | select(.range == "consumer_compute")'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStats(cmd.Context(), args[0], o, stdout)
		},
	}
	cmd.Flags().IntVar(&o.launch, "launch", -1, "launch index in the capture (default: every launch)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	cmd.Flags().BoolVar(&o.trim, "trim", false, "wrap mode: trim to the window common to all warps")
	return cmd
}

// statsJSON is the --json output of iket stats.
type statsJSON struct {
	Kernel   string             `json:"kernel"`
	Summary  trace.Summary      `json:"summary"`
	Stats    []trace.RangeStats `json:"stats"`
	Names    []string           `json:"overlap_names"`
	Overlap  [][]float64        `json:"overlap"`
	Clocks   []trace.ClockFit   `json:"clocks"`
	Latency  *trace.Latency     `json:"latency,omitempty"`
	Pipeline trace.Pipeline     `json:"pipeline"`
	// Excluded lists warps left out of the statistics, with why.
	Excluded []string `json:"excluded,omitempty"`
	Launch   int      `json:"launch"`
}

func runStats(ctx context.Context, path string, o statsOptions, stdout io.Writer) error {
	c, err := openCapture(ctx, path)
	if err != nil {
		return err
	}
	defer c.Close()
	launches := []int{o.launch}
	if o.launch < 0 {
		launches = launches[:0]
		for i := range c.NumLaunches() {
			launches = append(launches, i)
		}
	} else if _, err := pickLaunch(c, o.launch, "stats"); err != nil {
		return err
	}
	var js []statsJSON
	for k, i := range launches {
		a, err := analyze(ctx, c, i, trace.Options{TrimCommonWindow: o.trim})
		if err != nil {
			return err
		}
		names, m := a.Analyzer.OverlapMatrix()
		if o.json {
			js = append(js, statsJSON{
				Kernel: a.Meta.Kernel, Summary: a.Summary, Stats: a.Analyzer.Stats(),
				Names: names, Overlap: m, Clocks: a.Clocks, Latency: a.Meta.Latency,
				Pipeline: a.Analyzer.Pipeline(), Excluded: a.Excluded, Launch: i,
			})
			continue
		}
		if k > 0 {
			fmt.Fprintln(stdout)
		}
		if len(launches) > 1 {
			fmt.Fprintf(stdout, "launch %d of %d: ", i, c.NumLaunches())
		}
		writeStatsTable(stdout, a, names, m)
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if len(js) == 1 {
			return enc.Encode(js[0])
		}
		return enc.Encode(js)
	}
	if note := uncheckedNote(c); note != "" {
		fmt.Fprintf(stdout, "\n%s\n", note)
	}
	return nil
}

func writeStatsTable(w io.Writer, a *trace.Analysis, names []string, m [][]float64) {
	meta := a.Meta
	fmt.Fprintf(w, "%s: grid %v block %v, %d warps, %d events, %s\n\n",
		safeName(meta.Kernel), meta.Grid, meta.Block, a.Summary.Warps, a.Summary.Stored, droppedText(a.Summary))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "role\trange\tcount\tmean\tp50\tp90\tp99\tmax\tshare\t")
	for _, s := range a.Analyzer.Stats() {
		role := s.Role
		if role == "" {
			role = "(all)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%.1f%%\t\n", safeName(role), safeName(s.Range), s.Count,
			check.FormatNs(s.MeanNs), check.FormatNs(s.P50Ns), check.FormatNs(s.P90Ns), check.FormatNs(s.P99Ns), check.FormatNs(s.MaxNs), 100*s.Share)
	}
	tw.Flush()
	if len(names) > 0 {
		fmt.Fprintln(w, "\noverlap (row x, column y: share of x's time with y active on another warp of the CTA)")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "\t")
		for _, n := range names {
			fmt.Fprintf(tw, "%s\t", safeName(n))
		}
		fmt.Fprintln(tw)
		for i, n := range names {
			fmt.Fprintf(tw, "%s\t", safeName(n))
			for j := range names {
				fmt.Fprintf(tw, "%.2f\t", m[i][j])
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
	}
	writePipeline(w, a.Analyzer.Pipeline())
	if len(a.Clocks) > 0 {
		lo, hi := a.Clocks[0], a.Clocks[0]
		for _, f := range a.Clocks {
			if f.MHz < lo.MHz {
				lo = f
			}
			if f.MHz > hi.MHz {
				hi = f
			}
		}
		worst := 0.0
		for _, f := range a.Clocks {
			worst = max(worst, f.ResidualMaxNs)
		}
		fmt.Fprintf(w, "\nclock fit: %d SMs, %.1f-%.1f MHz, worst residual %.1f ns\n", len(a.Clocks), lo.MHz, hi.MHz, worst)
	}
	if l := meta.Latency; l != nil {
		writeLatency(w, l)
	}
	writeExcluded(w, a)
}

// writeLatency prints the latency comparison, and the control's when the
// timing had one.
func writeLatency(w io.Writer, l *trace.Latency) {
	paired := func(p float64) string {
		if p > 0 {
			return fmt.Sprintf(" (paired %.3f)", p)
		}
		return ""
	}
	fmt.Fprintf(w, "latency: uninstrumented %.2f us, instrumented %.2f us (medians of %d rounds), ratio %.3f%s\n",
		l.Uninstrumented.MedianUS, l.Instrumented.MedianUS, len(l.Uninstrumented.RoundsUS), l.Ratio, paired(l.PairedRatio))
	if l.Control != nil {
		fmt.Fprintf(w, "control (the uninstrumented binary again): %.2f us, ratio %.3f%s: two identical builds differ by this much here\n",
			l.Control.MedianUS, l.ControlRatio, paired(l.ControlPairedRatio))
	}
	if l.Dormant != nil {
		fmt.Fprintf(w, "instrumented, not traced: %.2f us, ratio %.3f%s: what the build with tracing costs while nobody traces it\n",
			l.Dormant.MedianUS, l.DormantRatio, paired(l.DormantPairedRatio))
	}
}

// pipelineRows is how many lag and bubble rows the table shows.
const pipelineRows = 12

// writePipeline prints the lags, and the largest bubbles, of the pairs of
// two roles' ranges.
func writePipeline(w io.Writer, p trace.Pipeline) {
	if len(p.Lags) > 0 {
		fmt.Fprintln(w, "\npipeline lag (x's range of stage s ends -> y's range of stage s starts; the k-th of each in a CTA)")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "x\ty\tmatched\tunmatched\tearly\tstages\tp50\tp90\tp99\tmax\t")
		for i, l := range p.Lags {
			if i == pipelineRows {
				fmt.Fprintf(tw, "and %d more pairs (--json lists them)\t\t\t\t\t\t\t\t\t\t\n", len(p.Lags)-i)
				break
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t\n", safeName(l.X), safeName(l.Y), l.Count, l.Unmatched, l.Early,
				len(l.Stages), check.FormatNs(l.P50Ns), check.FormatNs(l.P90Ns), check.FormatNs(l.P99Ns), check.FormatNs(l.MaxNs))
		}
		tw.Flush()
	}
	if len(p.Bubbles) > 0 {
		bs := slices.Clone(p.Bubbles)
		slices.SortStableFunc(bs, func(a, b trace.BubbleResult) int { return cmp.Compare(b.Overall, a.Overall) })
		fmt.Fprintln(w, "\nbubbles (y active while x runs on no warp of the CTA; share of the CTAs' time and of y's)")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "x\ty\tbubble\tof time\tof y\t")
		for i, b := range bs {
			if i == pipelineRows {
				fmt.Fprintf(tw, "and %d more pairs (--json lists them)\t\t\t\t\t\n", len(bs)-i)
				break
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f%%\t%.1f%%\t\n", safeName(b.X), safeName(b.Y), check.FormatNs(float64(b.BubbleNs)), 100*b.Overall, 100*b.OfY)
		}
		tw.Flush()
	}
}
