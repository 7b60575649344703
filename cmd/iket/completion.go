package main

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/iket-trace/iket/trace"
)

// Shell completion: cobra's completion command writes the scripts (iket
// completion bash|zsh|fish|powershell); registerCompletions tells them what
// to offer: capture files (*.iket) for the commands that read one, the
// values of enumerated flags, and, read from the capture already on the
// command line, its launches (--launch), its marks (calibrate --mark) and
// its range names inside check's --expect rules.

// registerCompletions adds the completion functions to root's commands.
func registerCompletions(root *cobra.Command) {
	for _, cmd := range root.Commands() {
		switch cmd.Name() {
		case "calibrate", "check", "export", "stats", "validate":
			cmd.ValidArgsFunction = completeCaptures(1)
		case "diff":
			cmd.ValidArgsFunction = completeCaptures(2)
		}
		flag := func(name string, f cobra.CompletionFunc) {
			if cmd.Flags().Lookup(name) != nil {
				_ = cmd.RegisterFlagCompletionFunc(name, f) // a flag has one function; this is its only registration
			}
		}
		flag("launch", completeLaunches)
		flag("json", cobra.FixedCompletions([]cobra.Completion{"true", "false"}, cobra.ShellCompDirectiveNoFileComp))
		switch cmd.Name() {
		case "run":
			flag("mode", fixed("stop\tfull buffer: stop recording, count the drops", "wrap\tfull buffer: keep the newest events"))
			flag("spec", fileExt("yaml", "yml"))
			flag("output", cobra.FixedCompletions(nil, cobra.ShellCompDirectiveFilterDirs))
		case "export":
			flag("format", fixed("pftrace\tPerfetto protobuf trace (ui.perfetto.dev)", "json\tChrome trace-event JSON", "html\tself-contained HTML report"))
			flag("output", fileExt("pftrace", "json", "html"))
		case "check":
			flag("format", fixed("table", "json"))
			flag("rules", fileExt("yaml", "yml"))
			flag("baseline", fileExt("iket"))
			flag("junit", fileExt("xml"))
			flag("expect", completeRule)
		case "calibrate":
			flag("mark", completeNames(trace.NameMark))
		}
	}
}

func fixed(values ...string) cobra.CompletionFunc {
	return cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)
}

func fileExt(exts ...string) cobra.CompletionFunc {
	return cobra.FixedCompletions(exts, cobra.ShellCompDirectiveFilterFileExt)
}

// completeCaptures offers *.iket files for the first n positional
// arguments, and nothing after them.
func completeCaptures(n int) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) >= n {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return []cobra.Completion{"iket"}, cobra.ShellCompDirectiveFilterFileExt
	}
}

// completionCapture opens the capture named by the command line's first
// argument, or returns nil.
func completionCapture(cmd *cobra.Command, args []string) *trace.Capture {
	if len(args) == 0 {
		return nil
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	c, err := trace.OpenContext(ctx, args[0])
	if err != nil {
		return nil
	}
	return c
}

// completeLaunches offers the capture's launch indices, each described by
// its kernel.
func completeLaunches(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	c := completionCapture(cmd, args)
	if c == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer c.Close()
	var out []cobra.Completion
	for i := range c.Meta.Launches {
		l := &c.Meta.Launches[i]
		out = append(out, cobra.CompletionWithDesc(strconv.Itoa(i), fmt.Sprintf("%s, grid %v, block %v", l.Kernel, l.Grid, l.Block)))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// captureNames returns the capture's names of kind k (every launch's, each
// once, sorted), or nil.
func captureNames(cmd *cobra.Command, args []string, k trace.NameKind) []string {
	c := completionCapture(cmd, args)
	if c == nil {
		return nil
	}
	defer c.Close()
	var out []string
	for i := range c.Meta.Launches {
		for _, n := range c.Meta.Launches[i].Names {
			if n.Kind == k && !slices.Contains(out, n.Text) {
				out = append(out, n.Text)
			}
		}
	}
	slices.Sort(out)
	return out
}

func completeNames(k trace.NameKind) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return captureNames(cmd, args, k), cobra.ShellCompDirectiveNoFileComp
	}
}

// Rule prefixes completeRule recognises: a function and its open argument
// list, the arguments typed so far and the one being typed.
var ruleArgs = regexp.MustCompile(`^([a-z_0-9]+)\(((?:[^,()]*,)*)([^,()]*)$`)

// ruleCall is a function call with its arguments closed, before its
// comparison.
var ruleCall = regexp.MustCompile(`^[a-z_0-9]+\([^()]*\)$`)

// ruleFuncs are check's rule functions and how many range arguments each
// takes.
var ruleFuncs = []struct {
	name string
	args int
}{
	{"overlap", 2}, {"overlap_min_cta", 2}, {"before", 2}, {"bubble", 2},
	{"p50", 1}, {"p90", 1}, {"p99", 1}, {"mean", 1}, {"min", 1}, {"max", 1}, {"count", 1},
}

// completeRule completes an --expect rule, written without spaces: the
// keywords and functions, then, inside a function's parentheses, the
// capture's range names (and role:range series), then the comparisons.
func completeRule(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if ruleCall.MatchString(toComplete) {
		var out []cobra.Completion
		for _, op := range []string{">=", "<=", ">", "<", "==", "!="} {
			out = append(out, toComplete+op)
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
	m := ruleArgs.FindStringSubmatch(toComplete)
	if m == nil {
		out := []cobra.Completion{"strict", "no_drops", "latency_ratio<=", "dormant_ratio<=", "control_ratio<="}
		for _, f := range ruleFuncs {
			out = append(out, f.name+"(")
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
	want := 0
	for _, f := range ruleFuncs {
		if f.name == m[1] {
			want = f.args
		}
	}
	done := strings.Count(m[2], ",")
	if want == 0 || done >= want {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	ranges := captureNames(cmd, args, trace.NameRange)
	names = append(names, ranges...)
	for _, role := range captureNames(cmd, args, trace.NameRole) {
		for _, r := range ranges {
			names = append(names, role+":"+r)
		}
	}
	end := ")"
	if done+1 < want {
		end = ","
	}
	var out []cobra.Completion
	for _, n := range names {
		if strings.HasPrefix(n, m[3]) {
			out = append(out, m[1]+"("+m[2]+n+end)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}
