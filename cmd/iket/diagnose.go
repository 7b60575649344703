package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/iket-trace/iket/trace"
)

// hangReport summarises a launch whose kernel did not finish: for each warp
// still running, its last event and the ranges it is inside, grouped by role
// and innermost open range so that a deadlock reads at a glance.
type hangReport struct {
	Warps, Finished, Running, NeverStarted int
	Groups                                 []hangGroup
	Examples                               []string // a few warps in full
}

type hangGroup struct {
	Role, Inside string
	Warps        int
}

// diagnoseHang decodes launch l leniently and describes the unfinished warps.
func diagnoseHang(l *trace.Launch) (*hangReport, error) {
	d, err := trace.NewDecoder(l, trace.Options{})
	if err != nil {
		return nil, err
	}
	r := &hangReport{}
	groups := map[hangGroup]int{}
	err = d.Each(func(w *trace.Warp) error {
		r.Warps++
		switch {
		case !w.Started:
			r.NeverStarted++
			return nil
		case w.Finished:
			r.Finished++
			return nil
		}
		r.Running++
		role := "(no role)"
		if w.Role != 0 {
			role = l.Meta.NameText(w.Role)
		}
		var open []string
		for i := range w.Ranges {
			rg := &w.Ranges[i]
			if rg.Flags&trace.RangeUnclosed != 0 {
				open = append(open, fmt.Sprintf("%s[%d]", l.Meta.NameText(rg.Name), rg.Payload))
			}
		}
		inside := "(no open range)"
		if len(open) > 0 {
			inside = open[len(open)-1]
		}
		groups[hangGroup{Role: role, Inside: inside}]++
		if len(r.Examples) < 8 {
			last := "no event recorded"
			if n := len(w.Events); n > 0 {
				e := w.Events[n-1]
				last = fmt.Sprintf("last event #%d %s %s payload %d", n-1, e.Kind(), l.Meta.NameText(e.Name()), e.Payload())
			}
			r.Examples = append(r.Examples, fmt.Sprintf("warp slot %d (sm %d, cta %d,%d,%d, warp %d, %s): %s; open: %s",
				w.Slot, w.SM, w.CTA[0], w.CTA[1], w.CTA[2], w.Warp, role, last, strings.Join(open, " > ")))
		}
		return nil
	}, func(e *trace.WarpError) error { return e })
	if err != nil {
		return nil, err
	}
	for g, n := range groups {
		g.Warps = n
		r.Groups = append(r.Groups, g)
	}
	sort.Slice(r.Groups, func(i, j int) bool {
		a, b := r.Groups[i], r.Groups[j]
		if a.Warps != b.Warps {
			return a.Warps > b.Warps
		}
		return a.Role+a.Inside < b.Role+b.Inside
	})
	return r, nil
}

func (r *hangReport) write(w io.Writer) {
	fmt.Fprintf(w, "%d warps: %d finished, %d still running, %d never started\n", r.Warps, r.Finished, r.Running, r.NeverStarted)
	if r.Running == 0 {
		return
	}
	fmt.Fprintln(w, "still running, by role and innermost open range:")
	for _, g := range r.Groups {
		fmt.Fprintf(w, "  %6d  %-14s inside %s\n", g.Warps, safeName(g.Role), safeName(g.Inside))
	}
	fmt.Fprintln(w, "for example:")
	for _, e := range r.Examples {
		fmt.Fprintf(w, "  %s\n", safeName(e))
	}
}
