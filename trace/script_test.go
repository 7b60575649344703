package trace_test

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/trace"
)

var update = flag.Bool("update", false, "rewrite the -- expect -- sections of testdata/*.txtar")

// base is added to every cycle of a script, so scripts use small numbers.
const base = 1_000_000_000

// script is a parsed `-- events --` section.
type script struct {
	l   *emu.Launch
	opt trace.Options
}

// parseScript reads the small event language of the txtar fixtures:
//
//	launch capacity=4 mode=wrap warps=2 [ctas=1] [strict] [trim]
//	name RANGE load
//	warp SLOT [sm=N] [unfinished] [never] [start=C] [end=C] [diverged] [saturate=N]
//	push NAME PAYLOAD @C | pop [NAME] @C | start NAME PAYLOAD @C
//	end NAME PAYLOAD @C | mark NAME PAYLOAD @C | role NAME @C
//	raw KIND ID PAYLOAD @C
//
// Cycles are relative to base; '#' starts a comment.
func parseScript(text string) (*script, error) {
	s := &script{l: &emu.Launch{Kernel: "script", Capacity: 16, Block: [3]uint32{32, 1, 1}}}
	var names []string
	var w *emu.Warp
	for ln, line := range strings.Split(text, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		bad := func(format string, a ...any) error {
			return fmt.Errorf("events line %d %q: %s", ln+1, line, fmt.Sprintf(format, a...))
		}
		num := func(s string) (uint64, error) {
			v, err := strconv.ParseUint(strings.TrimPrefix(s, "@"), 0, 64)
			if err != nil {
				return 0, bad("bad number %q", s)
			}
			return v, nil
		}
		args := f[1:]
		// at parses the trailing @cycle.
		at := func() (uint64, error) {
			if len(args) == 0 || !strings.HasPrefix(args[len(args)-1], "@") {
				return 0, bad("want a trailing @cycle")
			}
			c, err := num(args[len(args)-1])
			args = args[:len(args)-1]
			return base + c, err
		}
		switch f[0] {
		case "launch":
			for _, a := range args {
				k, v, _ := strings.Cut(a, "=")
				switch k {
				case "capacity", "warps", "ctas", "version":
					n, err := num(v)
					if err != nil {
						return nil, err
					}
					switch k {
					case "capacity":
						s.l.Capacity = uint32(n)
					case "warps":
						s.l.Block = [3]uint32{uint32(32 * n), 1, 1}
					case "version":
						s.l.Version = int(n)
					default:
						s.l.Grid = [3]uint32{uint32(n), 1, 1}
					}
				case "mode":
					s.l.Mode = trace.Mode(v)
				case "strict":
					s.opt.Strict = true
				case "trim":
					s.opt.TrimCommonWindow = true
				default:
					return nil, bad("unknown launch setting %q", k)
				}
			}
		case "name":
			names = append(names, strings.Join(args, " "))
		case "warp":
			if s.l.Names == nil {
				n, err := emu.Names(names...)
				if err != nil {
					return nil, bad("%v", err)
				}
				s.l.Names = n
			}
			if len(args) == 0 {
				return nil, bad("want a slot")
			}
			slot, err := num(args[0])
			if err != nil {
				return nil, err
			}
			wpc := uint64(s.l.WarpsPerCTA())
			w = s.l.Warp([3]uint32{uint32(slot / wpc), 0, 0}, uint32(slot%wpc))
			for _, a := range args[1:] {
				k, v, _ := strings.Cut(a, "=")
				switch k {
				case "unfinished":
					w.Unfinished = true
				case "never":
					w.NeverStarted = true
				case "diverged":
					w.LanesDiverged = true
				case "sm", "start", "end", "saturate":
					n, err := num(v)
					if err != nil {
						return nil, err
					}
					switch k {
					case "sm":
						w.SM = uint32(n)
					case "start":
						w.StartCycle = base + n
					case "saturate":
						w.SaturateAt = uint32(n)
					default:
						w.EndCycle = base + n
					}
				default:
					return nil, bad("unknown warp setting %q", k)
				}
			}
		default:
			if w == nil {
				return nil, bad("event before any warp line")
			}
			c, err := at()
			if err != nil {
				return nil, err
			}
			var payload uint64
			if (f[0] == "push" || f[0] == "next" || f[0] == "start" || f[0] == "end" || f[0] == "mark") && len(args) == 2 {
				if payload, err = num(args[1]); err != nil {
					return nil, err
				}
				args = args[:1]
			}
			switch {
			case f[0] == "push" && len(args) == 1:
				w.Push(args[0], uint16(payload), c)
			case f[0] == "next" && len(args) == 1:
				w.Next(args[0], uint16(payload), c)
			case f[0] == "pop" && len(args) == 0:
				w.Pop(c)
			case f[0] == "pop" && len(args) == 1:
				w.PopNamed(args[0], c)
			case f[0] == "start" && len(args) == 1:
				w.Start(args[0], uint16(payload), c)
			case f[0] == "end" && len(args) == 1:
				w.End(args[0], uint16(payload), c)
			case f[0] == "mark" && len(args) == 1:
				w.Mark(args[0], uint16(payload), c)
			case f[0] == "role" && len(args) == 1:
				w.Role(args[0], c)
			case f[0] == "raw" && len(args) == 3:
				var v [3]uint64
				for i := range v {
					if v[i], err = num(args[i]); err != nil {
						return nil, err
					}
				}
				w.Raw(trace.Kind(v[0]), uint16(v[1]), uint16(v[2]), c)
			default:
				return nil, bad("unknown event or wrong arguments")
			}
		}
	}
	if s.l.Names == nil {
		n, err := emu.Names(names...)
		if err != nil {
			return nil, err
		}
		s.l.Names = n
	}
	return s, nil
}

// render decodes a capture and prints what a fixture's expect section holds:
// per warp its state, ranges and marks (cycles relative to base) and
// violations; then the summary.
func render(t *testing.T, c *trace.Capture, opt trace.Options) string {
	t.Helper()
	var b strings.Builder
	m := c.Launch(0).Meta
	d, err := trace.NewDecoder(c.Launch(0), opt)
	if err != nil {
		t.Fatalf("NewDecoder: %v", err)
	}
	var w trace.Warp
	for {
		err := d.Next(&w)
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Fprintf(&b, "error %v\n", err)
			continue
		}
		if !w.Started {
			fmt.Fprintf(&b, "warp %d never started\n", w.Slot)
			continue
		}
		role := "-"
		if w.Role != 0 {
			role = m.NameText(w.Role)
		}
		// A saturated count and its drops are lower bounds.
		eq := "="
		if w.CountSaturated {
			eq = ">="
		}
		fmt.Fprintf(&b, "warp %d sm %d cta %d,%d,%d warp %d finished=%v role=%s count%s%d stored=%d dropped%s%d trimmed=%d",
			w.Slot, w.SM, w.CTA[0], w.CTA[1], w.CTA[2], w.Warp, w.Finished, role, eq, w.Count, w.Stored, eq, w.Dropped, w.Trimmed)
		if w.LanesDiverged {
			b.WriteString(" lanes-diverged")
		}
		if w.LanesAhead {
			b.WriteString(" lanes-ahead")
		}
		b.WriteString("\n")
		// The warp's span must hold its events: First <= events <= Last.
		for _, e := range w.Events {
			if e.Time() < w.First || e.Time() > w.Last {
				fmt.Fprintf(&b, "  event at %d ns outside the warp's span [%d, %d]\n", e.Time(), w.First, w.Last)
			}
		}
		for _, r := range w.Ranges {
			var fl []string
			if r.Async {
				fl = append(fl, fmt.Sprintf("async lane %d", r.Lane))
			} else {
				fl = append(fl, fmt.Sprintf("depth %d", r.Depth))
			}
			if r.Flags&trace.RangeTruncated != 0 {
				fl = append(fl, "truncated")
			}
			if r.Flags&trace.RangeUnclosed != 0 {
				fl = append(fl, "unclosed")
			}
			fmt.Fprintf(&b, "  range %s/%d [%d,%d] %s\n", m.NameText(r.Name), r.Payload,
				int64(r.StartCycles-base), int64(r.EndCycles-base), strings.Join(fl, " "))
		}
		for _, mk := range w.Marks {
			fmt.Fprintf(&b, "  mark %s/%d @%d\n", m.NameText(mk.Name), mk.Payload, int64(mk.Cycles-base))
		}
		for _, v := range w.Violations {
			fmt.Fprintf(&b, "  %s: %v\n", v.Kind, v)
		}
	}
	s := d.Summary()
	var kinds []string
	for k, n := range s.Violations {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	fmt.Fprintf(&b, "summary warps=%d started=%d finished=%d stored=%d attempted=%d dropped=%d trimmed=%d ranges=%d marks=%d warp-errors=%d violations=[%s]\n",
		s.Warps, s.Started, s.Finished, s.Stored, s.Attempted, s.Dropped, s.Trimmed, s.Ranges, s.Marks, s.WarpErrors, strings.Join(kinds, " "))
	if s.LanesDiverged != 0 || s.CountSaturated != 0 {
		fmt.Fprintf(&b, "summary lanes-diverged=%d count-saturated=%d\n", s.LanesDiverged, s.CountSaturated)
	}
	return b.String()
}

func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in testdata: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var events, expect *txtar.File
			for i := range ar.Files {
				switch ar.Files[i].Name {
				case "events":
					events = &ar.Files[i]
				case "expect":
					expect = &ar.Files[i]
				}
			}
			if events == nil {
				t.Fatalf("%s: no -- events -- section", file)
			}
			s, err := parseScript(string(events.Data))
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			data, err := s.l.Capture()
			if err != nil {
				t.Fatalf("%s: capture: %v", file, err)
			}
			c, err := emu.Read(data)
			if err != nil {
				t.Fatalf("%s: read: %v", file, err)
			}
			got := render(t, c, s.opt)
			samePairing(t, c)
			if *update {
				if expect == nil {
					ar.Files = append(ar.Files, txtar.File{Name: "expect"})
					expect = &ar.Files[len(ar.Files)-1]
				}
				expect.Data = []byte(got)
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if expect == nil {
				t.Fatalf("%s: no -- expect -- section (run with -update)", file)
			}
			if diff := cmp.Diff(string(expect.Data), got); diff != "" {
				t.Errorf("%s: decoded output mismatch (-want +got):\n%s", file, diff)
			}
		})
	}
}
