package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/iket-trace/iket/check"
	"github.com/iket-trace/iket/internal/outfile"
	"github.com/iket-trace/iket/trace"
)

type checkOptions struct {
	rules    string
	expects  []string
	format   string
	json     bool
	junit    string
	launch   int
	baseline string
}

func newCheckCmd(stdout, stderr io.Writer) *cobra.Command {
	var o checkOptions
	cmd := &cobra.Command{
		Use:   "check CAPTURE",
		Short: "Fail CI when a capture breaks its rules (overlap, pairing, drops, latency)",
		Long: `check evaluates rules over a capture and exits 0 when all hold, 1 when one
fails, 2 for bad input or usage. Rules come from a YAML file (--rules) or
inline (--expect, repeatable). See docs/CI.md for every rule.`,
		Example: `  iket check out/trace.iket --expect 'overlap(producer_load, consumer_compute) >= 0.6'
  iket check out/trace.iket --rules checks.yaml --junit report.xml
  iket check out/trace.iket --expect strict --expect no_drops --expect 'latency_ratio <= 1.05'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCheck(cmd.Context(), args[0], o, stdout)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.rules, "rules", "", "YAML file of rules")
	f.StringArrayVar(&o.expects, "expect", nil, "an inline rule (repeatable)")
	f.BoolVar(&o.json, "json", false, "print JSON")
	f.StringVar(&o.format, "format", "table", "table or json")
	f.MarkDeprecated("format", "use --json")
	f.StringVar(&o.baseline, "baseline", "", "a capture that rules written relative to baseline (\"p50(consumer:compute) <= 1.05 * baseline\") measure their bound on")
	f.StringVar(&o.junit, "junit", "", "also write a JUnit XML report to this file")
	f.IntVar(&o.launch, "launch", -1, "launch index in the capture (needed when it has several)")
	return cmd
}

// maxRulesBytes bounds a rules file (hundreds of rules take a few KB).
const maxRulesBytes = 1 << 20

func loadRules(o checkOptions) ([]check.Rule, error) {
	var rules []check.Rule
	if o.rules != "" {
		f, err := os.Open(o.rules)
		if err != nil {
			return nil, failWith(exitError, fmt.Errorf("check: %w", err))
		}
		defer f.Close()
		st, err := f.Stat()
		switch {
		case err != nil:
			return nil, failWith(exitError, fmt.Errorf("check: %w", err))
		case !st.Mode().IsRegular():
			return nil, failWith(exitError, fmt.Errorf("check: rules %s: not a regular file", o.rules))
		case st.Size() > maxRulesBytes:
			return nil, failWith(exitError, fmt.Errorf("check: rules %s: %d bytes, at most %d", o.rules, st.Size(), maxRulesBytes))
		}
		rs, err := check.LoadRules(io.LimitReader(f, maxRulesBytes), o.rules)
		if err != nil {
			return nil, failWith(exitError, err)
		}
		rules = append(rules, rs...)
	}
	for _, e := range o.expects {
		r, err := check.ParseExpr(e)
		if err != nil {
			return nil, failWith(exitError, fmt.Errorf("--expect %q: %w", e, err))
		}
		rules = append(rules, r)
	}
	if len(rules) == 0 {
		return nil, failWith(exitError, fmt.Errorf("check: no rules: give --rules FILE or --expect RULE"))
	}
	return rules, nil
}

func runCheck(ctx context.Context, path string, o checkOptions, stdout io.Writer) error {
	if o.format != "table" && o.format != "json" {
		return failWith(exitError, fmt.Errorf("--format %q: want table or json", o.format))
	}
	if o.json {
		o.format = "json"
	}
	rules, err := loadRules(o)
	if err != nil {
		return err
	}
	var junit *outfile.File
	if o.junit != "" {
		// Before the work, so a path that would replace an input is
		// refused at once; nothing is written there until the end.
		if junit, err = outfile.CreateContext(ctx, o.junit, path, o.rules); err != nil {
			return failWith(exitError, fmt.Errorf("check: --junit: %w", err))
		}
		defer junit.Abort()
	}
	c, err := openCapture(ctx, path)
	if err != nil {
		return err
	}
	defer c.Close()
	launch, err := pickLaunch(c, o.launch, "check")
	if err != nil {
		return err
	}
	a, err := analyze(ctx, c, launch, trace.Options{Strict: true})
	if err != nil {
		return err
	}
	var base *trace.Analysis
	if o.baseline != "" {
		if base, err = baselineAnalysis(ctx, o.baseline, o.launch); err != nil {
			return err
		}
	}
	results := check.Evaluate(rules, a, base)
	if o.format == "json" {
		err = check.WriteJSON(stdout, results)
	} else {
		err = check.WriteTable(stdout, results)
	}
	if err != nil {
		return failWith(exitError, err)
	}
	if a.NumExcluded > 0 {
		writeExcluded(stdout, a)
	}
	if junit != nil {
		werr := check.WriteJUnit(junit, "iket check "+path, results)
		if werr == nil {
			werr = junit.Commit()
		}
		if werr != nil {
			return failWith(exitError, fmt.Errorf("check: write %s: %w", o.junit, werr))
		}
	}
	failed := 0
	for _, r := range results {
		if !r.Pass {
			failed++
		}
	}
	if failed > 0 {
		return failWith(exitCheckFail, fmt.Errorf("check %s: %d of %d rules failed", path, failed, len(results)))
	}
	return nil
}

// baselineAnalysis decodes launch n (or the only one) of the baseline
// capture at path, as check decodes the capture itself.
func baselineAnalysis(ctx context.Context, path string, n int) (*trace.Analysis, error) {
	c, err := openCapture(ctx, path)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	launch, err := pickLaunch(c, n, "check --baseline")
	if err != nil {
		return nil, err
	}
	return analyze(ctx, c, launch, trace.Options{Strict: true})
}
