package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/iket-trace/iket/trace"
)

type validateOptions struct {
	lenient bool
	trim    bool
	json    bool
}

// validateJSON is one launch in iket validate --json.
type validateJSON struct {
	Launch     int           `json:"launch"`
	Kernel     string        `json:"kernel"`
	Summary    trace.Summary `json:"summary"`
	Violations []string      `json:"violations,omitempty"` // the first 100
	OK         bool          `json:"ok"`
	// Unchecked: the capture predates checksums (file version 1 or 2).
	Unchecked bool `json:"unchecked,omitempty"`
}

func newValidateCmd(stdout, stderr io.Writer) *cobra.Command {
	var o validateOptions
	cmd := &cobra.Command{
		Use:   "validate CAPTURE",
		Short: "Check a capture's range pairing and drops, warp by warp",
		Long: `validate decodes every warp of every launch and reports each pairing
violation (pop on an empty stack, pop of another name, range still open at the
warp's end, end of an unknown token), unknown names and drops, naming the warp,
SM, CTA and event. Strict by default: any violation or drop exits 1.`,
		Example: `  iket validate out/trace.iket
  iket validate --lenient out/trace.iket   # drops and unfinished warps are reported, not failures`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runValidate(cmd.Context(), args[0], o, stdout)
		},
	}
	cmd.Flags().BoolVar(&o.lenient, "lenient", false, "only pairing violations fail; drops are reported")
	cmd.Flags().BoolVar(&o.trim, "trim", false, "wrap mode: trim to the window common to all warps")
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

func runValidate(ctx context.Context, path string, o validateOptions, stdout io.Writer) error {
	c, err := openCapture(ctx, path)
	if err != nil {
		return err
	}
	defer c.Close()
	failed := 0
	var js []validateJSON
	for i := 0; i < c.NumLaunches(); i++ {
		l := c.Launch(i)
		s, verr := trace.Validate(l, trace.Options{Strict: !o.lenient, TrimCommonWindow: o.trim})
		if err := ctx.Err(); err != nil {
			return err
		}
		if verr != nil {
			failed++
		}
		if o.json {
			v := validateJSON{Launch: i, Kernel: l.Meta.Kernel, Summary: s, OK: verr == nil, Unchecked: !c.Checked()}
			if verr != nil {
				v.Violations = strings.Split(verr.Error(), "\n")
			}
			js = append(js, v)
			continue
		}
		fmt.Fprintf(stdout, "launch %d %s: %d warps, %d events stored, %s, %d violations\n",
			i, safeName(l.Meta.Kernel), s.Warps, s.Stored, droppedText(s), s.TotalViolations())
		if verr != nil {
			fmt.Fprintf(stdout, "%s\n", safeText(verr.Error()))
		}
	}
	if note := uncheckedNote(c); note != "" && !o.json {
		fmt.Fprintln(stdout, note)
	} else if !o.json {
		fmt.Fprintf(stdout, "checksums: header, metadata and %d warp buffers match\n", totalWarps(c))
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(js); err != nil {
			return failWith(exitError, err)
		}
	}
	if failed > 0 {
		return failWith(exitCheckFail, fmt.Errorf("validate %s: %d of %d launches have violations", path, failed, c.NumLaunches()))
	}
	if !o.json {
		fmt.Fprintln(stdout, "ok")
	}
	return nil
}

// totalWarps returns the warp slots of every launch of c.
func totalWarps(c *trace.Capture) uint64 {
	var n uint64
	for i := range c.NumLaunches() {
		n += c.Launch(i).Meta.Warps
	}
	return n
}
