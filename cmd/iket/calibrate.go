package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/iket-trace/iket/trace"
)

type calibrateOptions struct {
	mark   string
	launch int
	json   bool
	rounds bool
}

// newCalibrateCmd is `iket calibrate`: the timeline's cross-SM alignment
// measured on a capture of the calibrate program (docs/CLOCKS.md).
func newCalibrateCmd(stdout, stderr io.Writer) *cobra.Command {
	var o calibrateOptions
	cmd := &cobra.Command{
		Use:   "calibrate CAPTURE",
		Short: "Cross-SM timeline alignment: spread of a mark every warp records at the same instant",
		Long: `calibrate reads a capture of a kernel in which every warp records one mark at
the same true instant, round after round (the built-in calibrate program: a
grid-wide barrier, mark after_barrier with the round as payload), and prints
per round how far apart the marks landed on iket's timeline: across all warps,
and across SMs (each SM's earliest mark). The median and maximum over rounds
bound the error of placing events of different SMs on one timeline; they
include the barrier's own release skew, so they are upper bounds. It also
prints the per-SM clock fits' anchor residuals, the SM clock range and the
timeline's resolution (ns per cycle). See docs/CLOCKS.md.`,
		Example: `  iket run calibrate -o out/cal && iket calibrate out/cal/trace.iket
  iket calibrate --json out/cal/trace.iket | jq .sm_spread_max_ns`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCalibrate(cmd.Context(), args[0], o, stdout)
		},
	}
	cmd.Flags().StringVar(&o.mark, "mark", "after_barrier", "the MARK every warp records at the same instant (payload = round)")
	cmd.Flags().IntVar(&o.launch, "launch", -1, "launch index in the capture (needed when it has several)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	cmd.Flags().BoolVar(&o.rounds, "rounds", false, "print every round, not only the summary")
	return cmd
}

func runCalibrate(ctx context.Context, path string, o calibrateOptions, stdout io.Writer) error {
	c, err := openCapture(ctx, path)
	if err != nil {
		return err
	}
	defer c.Close()
	if o.launch, err = pickLaunch(c, o.launch, "calibrate"); err != nil {
		return err
	}
	res, err := trace.MarkSpread(c.Launch(o.launch), o.mark, trace.Options{})
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if err != nil {
		return failWith(exitError, fmt.Errorf("calibrate %s: %w", path, err))
	}
	// A kernel that records the raw timer (MARK gt_sample, its low 16 bits
	// as payload) lets the timeline be checked against the timer itself.
	var timer *trace.TimerCheck
	if tc, err := trace.CheckTimer(c.Launch(o.launch), "gt_sample", trace.Options{}); err == nil {
		timer = &tc
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			trace.SpreadResult
			Timer *trace.TimerCheck `json:"timer_check,omitempty"`
		}{res, timer})
	}
	writeCalibrateTable(stdout, &res, o.rounds)
	if timer != nil {
		fmt.Fprintf(stdout, "\ntimeline against %%globaltimer (%d samples of MARK gt_sample): error mean %.1f ns, range %.1f to %.1f ns\n",
			timer.Samples, timer.MeanNs, timer.MinNs, timer.MaxNs)
		fmt.Fprintf(stdout, "per-SM mean error spread: %.1f ns over %d SMs (the cross-SM alignment of the timeline; the timer's 32 ns steps average out)\n",
			timer.SMMeanSpreadNs, len(timer.SMs))
	}
	return nil
}

func writeCalibrateTable(w io.Writer, r *trace.SpreadResult, rounds bool) {
	fmt.Fprintf(w, "%s: mark %s, %d rounds, %d warps on %d SMs", safeName(r.Kernel), safeName(r.Mark), len(r.Rounds), r.Warps, r.SMs)
	if r.Incomplete > 0 {
		fmt.Fprintf(w, ", %d rounds incomplete", r.Incomplete)
	}
	if r.SkippedWarps > 0 {
		fmt.Fprintf(w, ", %d warp slots unreadable", r.SkippedWarps)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "spread over rounds\tmedian\tmax\t")
	fmt.Fprintf(tw, "across SMs (each SM's earliest)\t%.1f ns\t%.1f ns\t\n", r.SMSpreadMedianNs, r.SMSpreadMaxNs)
	fmt.Fprintf(tw, "across all warps\t%.1f ns\t%.1f ns\t\n", r.WarpSpreadMedianNs, r.WarpSpreadMaxNs)
	tw.Flush()
	ck := r.Clocks
	fmt.Fprintf(w, "\nclock fits: %d SMs, %.0f-%.0f MHz, anchor residual RMS %.1f ns, max %.1f ns (SM %d)",
		ck.SMs, ck.MinMHz, ck.MaxMHz, ck.ResidualRMSNs, ck.ResidualMaxNs, ck.WorstSM)
	if ck.Fallbacks > 0 {
		fmt.Fprintf(w, ", %d SMs without a fit of their own", ck.Fallbacks)
	}
	fmt.Fprintf(w, "\nresolution: %.3f ns per cycle\n", ck.NsPerCycle)
	fmt.Fprintln(w, "spread includes the barrier's release skew: an upper bound on the cross-SM alignment error")
	if !rounds {
		return
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\twarps\tSMs\twarp spread\tSM spread\tearliest SM\tlatest SM\t")
	for _, x := range r.Rounds {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.1f ns\t%.1f ns\t%d\t%d\t\n", x.Payload, x.Warps, x.SMs, x.WarpSpreadNs, x.SMSpreadNs, x.EarliestSM, x.LatestSM)
	}
	tw.Flush()
}
