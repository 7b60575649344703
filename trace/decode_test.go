package trace_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/internal/raw"
	"github.com/iket-trace/iket/trace"
)

// decodeAll decodes every warp of launch i, copying each one.
func decodeAll(t testing.TB, c *trace.Capture, i int, opt trace.Options) ([]trace.Warp, *trace.Decoder) {
	t.Helper()
	d, err := trace.NewDecoder(c.Launch(i), opt)
	if err != nil {
		t.Fatalf("NewDecoder: %v", err)
	}
	var out []trace.Warp
	for {
		var w trace.Warp
		err := d.Next(&w)
		if err == io.EOF {
			return out, d
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		out = append(out, w)
	}
}

func oneWarp(names ...string) (*emu.Launch, *emu.Warp) {
	l := &emu.Launch{Kernel: "k", Block: [3]uint32{32, 1, 1}, Capacity: 1 << 16, Names: emu.MustNames(names...)}
	return l, l.Warp([3]uint32{}, 0)
}

func TestDeepNesting(t *testing.T) {
	for _, depth := range []int{64, 10_000} {
		t.Run(fmt.Sprint(depth), func(t *testing.T) {
			l, w := oneWarp("RANGE a", "RANGE b")
			c0 := uint64(1e9)
			for i := 0; i < depth; i++ {
				w.Push("a", uint16(i), c0+uint64(i))
			}
			for i := depth - 1; i >= 0; i-- {
				w.PopNamed("a", c0+uint64(2*depth-i))
			}
			// As many open start/end tokens: distinct ones, then one token
			// opened depth times (closed most recent first).
			c1 := c0 + uint64(4*depth)
			for i := 0; i < depth; i++ {
				w.Start("b", uint16(i), c1+uint64(i))
			}
			for i := 0; i < depth; i++ {
				w.End("b", uint16(i), c1+uint64(depth+i))
			}
			begin := time.Now()
			ws, _ := decodeAll(t, emu.MustRead(t, l), 0, trace.Options{Strict: true})
			if el := time.Since(begin); el > 2*time.Second {
				t.Errorf("decoding %d-deep nesting took %v", depth, el)
			}
			got := ws[0]
			if len(got.Violations) != 0 {
				t.Fatalf("violations: %v", got.Violations)
			}
			if len(got.Ranges) != 2*depth {
				t.Fatalf("%d ranges, want %d", len(got.Ranges), 2*depth)
			}
			for i := 0; i < depth; i++ {
				r := got.Ranges[i]
				want := trace.Range{Name: 1, Payload: uint16(i), StartCycles: c0 + uint64(i), EndCycles: c0 + uint64(2*depth-i), Depth: int32(i)}
				r.Start, r.End = 0, 0
				if diff := cmp.Diff(want, r); diff != "" {
					t.Fatalf("push range %d (-want +got):\n%s", i, diff)
				}
				a := got.Ranges[depth+i]
				// Each start overlaps all earlier ones: lane i.
				if !a.Async || a.Lane != int32(i) || a.StartCycles != c1+uint64(i) || a.EndCycles != c1+uint64(depth+i) {
					t.Fatalf("async range %d: %+v", i, a)
				}
			}
		})
	}
}

func TestSameTokenLIFO(t *testing.T) {
	l, w := oneWarp("RANGE b")
	const n = 5000
	c := uint64(1e9)
	for i := 0; i < n; i++ {
		w.Start("b", 7, c+uint64(i))
	}
	for i := 0; i < n; i++ {
		w.End("b", 7, c+uint64(n+i))
	}
	ws, _ := decodeAll(t, emu.MustRead(t, l), 0, trace.Options{})
	for i, r := range ws[0].Ranges {
		// The k-th end closes the most recent open start: start n-1-k.
		if want := c + uint64(2*n-1-i); r.EndCycles != want {
			t.Fatalf("range %d ends at %d, want %d", i, r.EndCycles, want)
		}
	}
}

func TestViolationError(t *testing.T) {
	v := trace.Violation{Kind: trace.PopMismatch, Launch: 0, Slot: 12, SM: 3, CTA: [3]uint32{7, 0, 0}, Warp: 1, Index: 4,
		Name: "load", Detail: `pop of "load" closes "store"`}
	want := `launch 0 warp 12 (sm 3, cta 7,0,0, warp 1): event 4: pop of "load" closes "store"`
	if got := v.Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	v.Index = -1
	if got := v.Error(); !strings.HasPrefix(got, "launch 0 warp 12 (sm 3, cta 7,0,0, warp 1): pop") {
		t.Errorf("Error() without event = %q", got)
	}
	var err error = fmt.Errorf("wrapped: %w", v)
	if !errors.Is(err, trace.PopMismatch) || errors.Is(err, trace.PopEmpty) {
		t.Errorf("errors.Is on kinds wrong for %v", err)
	}
	var got trace.Violation
	if !errors.As(err, &got) || got.Slot != 12 {
		t.Errorf("errors.As: %+v", got)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name     string
		build    func(l *emu.Launch)
		opt      trace.Options
		wantErr  []trace.ViolationKind // kinds errors.Is must find
		wantNone []trace.ViolationKind
		wantMsg  string // in the error, when not empty
		clean    bool
		// warps the summary counts with diverged lanes, a saturated count
		diverged, saturated uint64
	}{
		{
			name: "clean",
			build: func(l *emu.Launch) {
				l.Warp([3]uint32{}, 0).Push("a", 0, 1e9).Pop(1e9 + 5)
			},
			opt: trace.Options{Strict: true}, clean: true,
		},
		{
			name: "drops are data when lenient",
			build: func(l *emu.Launch) {
				w := l.Warp([3]uint32{}, 0)
				for i := 0; i < 20; i++ {
					w.Mark("m", 0, 1e9+uint64(i))
				}
			},
			clean: true,
		},
		{
			name: "drops are violations when strict",
			build: func(l *emu.Launch) {
				w := l.Warp([3]uint32{}, 0)
				for i := 0; i < 20; i++ {
					w.Mark("m", 0, 1e9+uint64(i))
				}
			},
			opt: trace.Options{Strict: true}, wantErr: []trace.ViolationKind{trace.DroppedEvents},
		},
		{
			name: "unfinished lenient reports only the unclosed range",
			build: func(l *emu.Launch) {
				w := l.Warp([3]uint32{}, 0).Push("a", 0, 1e9)
				w.Unfinished = true
			},
			wantErr: []trace.ViolationKind{trace.UnclosedRange}, wantNone: []trace.ViolationKind{trace.NotFinished},
		},
		{
			name: "unfinished strict",
			build: func(l *emu.Launch) {
				w := l.Warp([3]uint32{}, 0).Push("a", 0, 1e9).Pop(1e9 + 1)
				w.Unfinished = true
			},
			opt: trace.Options{Strict: true}, wantErr: []trace.ViolationKind{trace.NotFinished}, wantNone: []trace.ViolationKind{trace.UnclosedRange},
		},
		{
			name: "unfinished with records after a hole names them",
			build: func(l *emu.Launch) {
				w := l.Warp([3]uint32{}, 0).Push("a", 0, 1e9)
				for i := 0; i < 4; i++ {
					w.Next("a", uint16(i), 1e9+10+uint64(i))
				}
				w.Mark("m", 0, 1e9+20)
				w.Unfinished = true
				w.Unstored = []int{2, 3}
			},
			opt: trace.Options{Strict: true}, wantErr: []trace.ViolationKind{trace.NotFinished},
			wantMsg: "2 events recovered; 2 more records lie after the first unwritten slot (record 2)",
		},
		{
			name: "diverged lanes are data when lenient",
			build: func(l *emu.Launch) {
				// lanes behind wrote the push again: a record appears twice
				l.Warp([3]uint32{}, 0).Push("a", 0, 1e9).Push("a", 0, 1e9).Pop(1e9 + 5).Pop(1e9 + 6).LanesDiverged = true
			},
			clean: true, diverged: 1,
		},
		{
			name: "diverged lanes are violations when strict",
			build: func(l *emu.Launch) {
				// lanes behind wrote the push again: a record appears twice
				l.Warp([3]uint32{}, 0).Push("a", 0, 1e9).Push("a", 0, 1e9).Pop(1e9 + 5).Pop(1e9 + 6).LanesDiverged = true
			},
			opt: trace.Options{Strict: true}, wantErr: []trace.ViolationKind{trace.DivergedLanes},
			wantNone: []trace.ViolationKind{trace.SaturatedCount, trace.DroppedEvents}, diverged: 1,
		},
		{
			name: "a saturated count is data when lenient",
			build: func(l *emu.Launch) {
				w := l.Warp([3]uint32{}, 0)
				for i := 0; i < 20; i++ {
					w.Mark("m", 0, 1e9+uint64(i))
				}
				w.SaturateAt = 12
			},
			clean: true, saturated: 1,
		},
		{
			name: "a saturated count is a violation when strict",
			build: func(l *emu.Launch) {
				w := l.Warp([3]uint32{}, 0)
				for i := 0; i < 20; i++ {
					w.Mark("m", 0, 1e9+uint64(i))
				}
				w.SaturateAt = 12
			},
			opt: trace.Options{Strict: true}, wantErr: []trace.ViolationKind{trace.SaturatedCount, trace.DroppedEvents},
			wantNone: []trace.ViolationKind{trace.DivergedLanes}, saturated: 1,
		},
		{
			name: "pairing",
			build: func(l *emu.Launch) {
				l.Warp([3]uint32{}, 0).Push("a", 0, 1e9).PopNamed("m", 1e9+1).End("a", 3, 1e9+2)
			},
			wantErr: []trace.ViolationKind{trace.WrongNameKind, trace.PopMismatch, trace.EndUnknown},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &emu.Launch{Kernel: "k", Block: [3]uint32{64, 1, 1}, Capacity: 8, Names: emu.MustNames("RANGE a", "MARK m")}
			tt.build(l)
			sum, err := trace.Validate(emu.MustRead(t, l).Launch(0), tt.opt)
			// The header's exit flags are counted in both modes.
			if sum.LanesDiverged != tt.diverged || sum.CountSaturated != tt.saturated {
				t.Errorf("summary counts %d warps with diverged lanes and %d saturated, want %d and %d",
					sum.LanesDiverged, sum.CountSaturated, tt.diverged, tt.saturated)
			}
			if tt.clean {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if sum.TotalViolations() != 0 {
					t.Fatalf("summary counts violations: %+v", sum)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate: nil error")
			}
			for _, k := range tt.wantErr {
				if !errors.Is(err, k) {
					t.Errorf("error lacks %s: %v", k, err)
				}
				if sum.Violations[k] == 0 {
					t.Errorf("summary lacks %s: %+v", k, sum)
				}
			}
			for _, k := range tt.wantNone {
				if errors.Is(err, k) {
					t.Errorf("error has %s: %v", k, err)
				}
			}
			if tt.wantMsg != "" && !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error lacks %q: %v", tt.wantMsg, err)
			}
		})
	}
}

// TestDecodeBeyondHole: an unfinished warp whose records have a hole (pairs
// an iket::Batch never stored) decodes up to the hole, in lenient and strict
// mode alike, and counts the records after it.
func TestDecodeBeyondHole(t *testing.T) {
	l := &emu.Launch{Kernel: "k", Block: [3]uint32{32, 1, 1}, Capacity: 16, Names: emu.MustNames("RANGE a", "MARK m")}
	w := l.Warp([3]uint32{}, 0).Push("a", 0, 1e9)
	for i := 0; i < 6; i++ {
		w.Next("a", uint16(i), 1e9+10+uint64(i))
	}
	w.Mark("m", 0, 1e9+20)
	w.Unfinished = true
	w.Unstored = []int{3, 4}
	c := emu.MustRead(t, l)
	for _, strict := range []bool{false, true} {
		d, err := trace.NewDecoder(c.Launch(0), trace.Options{Strict: strict})
		if err != nil {
			t.Fatal(err)
		}
		var got trace.Warp
		if err := d.Next(&got); err != nil {
			t.Fatal(err)
		}
		// Records 0-2 before the hole; 5, 6 and 7 after it.
		if got.Stored != 3 || got.Beyond != 3 || got.Finished {
			t.Errorf("strict %v: stored %d, beyond %d, finished %v; want 3, 3, false", strict, got.Stored, got.Beyond, got.Finished)
		}
	}
}

func TestValidateCapsJoinedErrors(t *testing.T) {
	l, w := oneWarp("RANGE a")
	for i := 0; i < 250; i++ {
		w.Pop(1e9 + uint64(i))
	}
	sum, err := trace.Validate(emu.MustRead(t, l).Launch(0), trace.Options{})
	if sum.Violations[trace.PopEmpty] != 250 {
		t.Errorf("summary: %+v", sum)
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("error %T is not a join", err)
	}
	errs := j.Unwrap()
	if len(errs) != 101 {
		t.Fatalf("%d joined errors, want 100 and a count", len(errs))
	}
	if got, want := errs[100].Error(), "and 150 more problems"; got != want {
		t.Errorf("last error %q, want %q", got, want)
	}
}

func TestWarpErrors(t *testing.T) {
	l := &emu.Launch{Kernel: "k", Block: [3]uint32{96, 1, 1}, Capacity: 4, Names: emu.MustNames("RANGE a")}
	for i := uint32(0); i < 3; i++ {
		l.Warp([3]uint32{}, i).Push("a", 0, 1e9).Pop(1e9 + 1)
	}
	data, err := l.Capture()
	if err != nil {
		t.Fatal(err)
	}
	c0, err := emu.Read(data)
	if err != nil {
		t.Fatal(err)
	}
	lm := c0.Launch(0).Meta
	slotOff := func(s int) int64 { return lm.Offset + int64(s)*lm.Stride() }
	tests := []struct {
		name  string
		patch func(b []byte)
		want  string
	}{
		{"magic", func(b []byte) { b[slotOff(1)] = 0x42 }, "launch 0 warp 1 at offset %d: header magic 0x57454b42, want 0x57454b49 (started) or 0 (never ran)"},
		{"slot", func(b []byte) { b[slotOff(1)+20] = 2 }, "launch 0 warp 1 at offset %d: header names cta (0,0,0) warp 2, which is slot 2"},
		{"flags", func(b []byte) { b[slotOff(1)+60] = 0x12 }, "launch 0 warp 1 at offset %d: header flags 0x12: want bit 0 (started) set and only bits 0-3 and 16-28"},
		{"flag-bit-4", func(b []byte) { b[slotOff(1)+60] = 0x13 }, "launch 0 warp 1 at offset %d: header flags 0x13: want bit 0 (started) set and only bits 0-3 and 16-28"},
		{"exit-flags-unfinished", func(b []byte) { b[slotOff(1)+60] = 0x0d }, "launch 0 warp 1 at offset %d: header flags 0xd: bit 2 or 3 on a warp that did not finish"},
		{"anchors", func(b []byte) { clear(b[slotOff(1)+48 : slotOff(1)+56]) }, "launch 0 warp 1 at offset %d: end clock"},
		{"globaltimer-past-2^63", func(b []byte) { b[slotOff(1)+47] |= 0x80 }, "launch 0 warp 1 at offset %d: globaltimer anchors"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := append([]byte(nil), data...)
			tt.patch(b)
			c, err := emu.ReadResealed(b)
			if err != nil {
				t.Fatal(err)
			}
			d, err := trace.NewDecoder(c.Launch(0), trace.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var w trace.Warp
			var got []string
			for {
				err := d.Next(&w)
				if err == io.EOF {
					break
				}
				if err != nil {
					var we *trace.WarpError
					if !errors.As(err, &we) || !errors.Is(err, trace.ErrCorruptWarp) {
						t.Fatalf("error %T %v is not a corrupt WarpError", err, err)
					}
					got = append(got, err.Error())
					continue
				}
				if len(w.Ranges) != 1 {
					t.Errorf("warp %d: %d ranges", w.Slot, len(w.Ranges))
				}
			}
			if len(got) != 1 || !strings.HasPrefix(got[0], fmt.Sprintf(tt.want, slotOff(1))) {
				t.Errorf("errors %q, want one starting %q", got, fmt.Sprintf(tt.want, slotOff(1)))
			}
			if s := d.Summary(); s.WarpErrors != 1 || s.Warps != 3 {
				t.Errorf("summary %+v", s)
			}
			d.Reset()
			var warps, bad int
			err = d.Each(func(*trace.Warp) error { warps++; return nil }, func(*trace.WarpError) error { bad++; return nil })
			if err != nil || warps != 2 || bad != 1 {
				t.Errorf("Each: %d warps, %d bad, error %v; want 2, 1, nil", warps, bad, err)
			}
			d.Reset()
			stop := errors.New("stop")
			err = d.Each(func(*trace.Warp) error { return stop }, nil)
			if !errors.Is(err, stop) || d.Summary().Warps != 1 {
				t.Errorf("Each stopped by fn: error %v after %d warps, want stop after 1", err, d.Summary().Warps)
			}
			d.Reset()
			err = d.Each(func(*trace.Warp) error { return nil }, func(e *trace.WarpError) error { return e })
			if !errors.Is(err, trace.ErrCorruptWarp) || d.Summary().Warps != 2 {
				t.Errorf("Each stopped by bad: error %v after %d warps, want a corrupt warp after 2", err, d.Summary().Warps)
			}
			var also int
			a, err := trace.Analyze(context.Background(), c.Launch(0), trace.Options{}, func(*trace.Warp) { also++ })
			if err != nil {
				t.Fatalf("Analyze: %v", err)
			}
			if added, _ := a.Analyzer.Warps(); added != 2 || also != 2 || a.NumExcluded != 1 || len(a.Excluded) != 1 ||
				!strings.HasPrefix(a.Excluded[0], fmt.Sprintf(tt.want, slotOff(1))) || a.Summary.WarpErrors != 1 {
				t.Errorf("Analyze: %d warps added, %d passed on, excluded %d %q, summary %+v; want 2, 2, the corrupt slot",
					added, also, a.NumExcluded, a.Excluded, a.Summary)
			}
			if _, err := trace.Validate(c.Launch(0), trace.Options{}); !errors.Is(err, trace.ErrCorruptWarp) {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestReset(t *testing.T) {
	l, err := emu.ProducerConsumer(emu.PCConfig{CTAs: 3, Stages: 5})
	if err != nil {
		t.Fatal(err)
	}
	c := emu.MustRead(t, l)
	first, d := decodeAll(t, c, 0, trace.Options{Strict: true})
	s1 := d.Summary()
	d.Reset()
	var w trace.Warp
	for i := 0; ; i++ {
		err := d.Next(&w)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(first[i], w); diff != "" {
			t.Fatalf("warp %d differs after Reset (-want +got):\n%s", i, diff)
		}
	}
	if diff := cmp.Diff(s1, d.Summary()); diff != "" {
		t.Errorf("summary after Reset (-want +got):\n%s", diff)
	}
	want := trace.Summary{Warps: 6, Started: 6, Finished: 6, Stored: 6*2 + 3*2*5*2, Attempted: 6*2 + 3*2*5*2, Ranges: 30, Marks: 6}
	if diff := cmp.Diff(want, s1); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	for _, w := range first {
		if w.Role == 0 || w.First >= w.Last {
			t.Errorf("warp %d: role %d, first %d last %d", w.Slot, w.Role, w.First, w.Last)
		}
	}
}

func TestProducerConsumerOverlap(t *testing.T) {
	for _, ov := range []float64{0, 0.5, 1} {
		l, err := emu.ProducerConsumer(emu.PCConfig{CTAs: 2, Stages: 4, LoadCycles: 2000, ComputeCycles: 1000, Overlap: ov})
		if err != nil {
			t.Fatal(err)
		}
		ws, _ := decodeAll(t, emu.MustRead(t, l), 0, trace.Options{Strict: true})
		prod, cons := ws[0], ws[1]
		var total uint64
		for i := 0; i+1 < len(cons.Ranges); i++ {
			c, p := cons.Ranges[i], prod.Ranges[i+1]
			lo, hi := max(c.StartCycles, p.StartCycles), min(c.EndCycles, p.EndCycles)
			if hi > lo {
				total += hi - lo
			}
		}
		if want := uint64(math.Round(ov*1000)) * 3; total != want {
			t.Errorf("overlap %g: %d overlapping cycles, want %d", ov, total, want)
		}
	}
}

// TestClockOutsideAnchors: a record whose clock unwraps past the end anchor
// (forward) or before the start anchor (backward, wrap mode with drops) is a
// bad-record violation naming the event.
func TestClockOutsideAnchors(t *testing.T) {
	tests := []struct {
		name   string
		mode   trace.Mode
		n      int // marks, 10 cycles apart
		rec    int // slot of the record to patch
		clock  func(h raw.WarpHeader) uint32
		index  int
		prefix string
	}{
		{"forward past end", trace.ModeStop, 3, 2, func(h raw.WarpHeader) uint32 { return uint32(h.EndClock) + 1000 }, 2,
			"launch 0 warp 0 (sm 0, cta 0,0,0, warp 0): event 2: clock 1000 cycles past the warp's end anchor"},
		{"backward before start", trace.ModeWrap, 6, 2, func(h raw.WarpHeader) uint32 { return uint32(h.StartClock) - 1000 }, 0,
			"launch 0 warp 0 (sm 0, cta 0,0,0, warp 0): event 0: clock "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, w := oneWarp("MARK m")
			l.Capacity, l.Mode = 4, tt.mode
			for i := 0; i < tt.n; i++ {
				w.Mark("m", 0, 1e9+uint64(i)*10)
			}
			c, err := emu.Damage(l, func(data []byte, m *trace.LaunchMeta) {
				var h raw.WarpHeader
				raw.DecodeWarpHeader(data[m.Offset:], &h)
				off := m.Offset + raw.WarpHeaderSize + int64(tt.rec)*raw.RecordSize
				v := tt.clock(h)
				data[off], data[off+1], data[off+2], data[off+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
			})
			if err != nil {
				t.Fatal(err)
			}
			ws, _ := decodeAll(t, c, 0, trace.Options{})
			var got []string
			for _, v := range ws[0].Violations {
				if v.Kind == trace.BadRecord && v.Index == tt.index {
					got = append(got, v.Error())
				}
			}
			if len(got) != 1 || !strings.HasPrefix(got[0], tt.prefix) {
				t.Errorf("violations %v, want one starting %q", ws[0].Violations, tt.prefix)
			}
			if !ws[0].BadTimes || !strings.Contains(ws[0].LeftOut(), "outside its start and exit anchors") {
				t.Errorf("BadTimes %v, LeftOut %q: want the warp left out", ws[0].BadTimes, ws[0].LeftOut())
			}
		})
	}
}

// TestBadTimesAnchors: anchors that the clock fit cannot turn into times
// (an end clock 2^63 cycles after its start over 1 us of globaltimer: no
// SM clock, so the fit falls back to the device's, and the end lands past
// 2^63 ns) leave the warp out with a bad-record violation.
func TestBadTimesAnchors(t *testing.T) {
	l, w := oneWarp("MARK m")
	w.Mark("m", 0, 1e9)
	c, err := emu.Damage(l, func(data []byte, m *trace.LaunchMeta) {
		var h raw.WarpHeader
		raw.DecodeWarpHeader(data[m.Offset:], &h)
		put := func(off int64, v uint64) { binary.LittleEndian.PutUint64(data[m.Offset+off:], v) }
		put(48, h.StartClock+1<<63)      // end clock
		put(40, h.StartGlobaltimer+1000) // end globaltimer
	})
	if err != nil {
		t.Fatal(err)
	}
	ws, _ := decodeAll(t, c, 0, trace.Options{})
	if !ws[0].BadTimes || !strings.Contains(ws[0].LeftOut(), "cannot be placed") {
		t.Fatalf("BadTimes %v, LeftOut %q (first %d, last %d): want the warp left out", ws[0].BadTimes, ws[0].LeftOut(), ws[0].First, ws[0].Last)
	}
	found := false
	for _, v := range ws[0].Violations {
		found = found || v.Kind == trace.BadRecord && strings.Contains(v.Detail, "corrupt anchors")
	}
	if !found {
		t.Errorf("violations %v, want a bad record naming corrupt anchors", ws[0].Violations)
	}
}

// TestMultipleLaunches: each launch decodes on its own, and violations name
// their launch.
func TestMultipleLaunches(t *testing.T) {
	a, err := emu.ProducerConsumer(emu.PCConfig{CTAs: 2, Stages: 2})
	if err != nil {
		t.Fatal(err)
	}
	b, wb := oneWarp("RANGE x")
	wb.Pop(1e9)
	c := emu.MustRead(t, a, b)
	if c.NumLaunches() != 2 {
		t.Fatalf("%d launches", c.NumLaunches())
	}
	if _, err := trace.Validate(c.Launch(0), trace.Options{Strict: true}); err != nil {
		t.Errorf("launch 0: %v", err)
	}
	_, err = trace.Validate(c.Launch(1), trace.Options{})
	if want := "launch 1 warp 0 (sm 0, cta 0,0,0, warp 0): event 0: pop with no open push"; err == nil || err.Error() != want {
		t.Errorf("launch 1: %v, want %q", err, want)
	}
}

// TestFormatVersions: the same events recorded in format version 1 (tag in
// the high word) and 2 (tag added to the clock's high word) decode alike, in
// stop and wrap mode, for finished and unfinished warps, when the clock's
// high word changes during the warp, and for tags whose add carries.
func TestFormatVersions(t *testing.T) {
	build := func(ver int, mode trace.Mode) *emu.Launch {
		// Stop mode keeps all 16 events; wrap mode the newest 8.
		capa := uint32(32)
		if mode == trace.ModeWrap {
			capa = 8
		}
		l := &emu.Launch{Kernel: "k", Block: [3]uint32{96, 1, 1}, Capacity: capa, Mode: mode, Version: ver,
			Names: emu.MustNames("RANGE load", "MARK m", "ROLE producer")}
		for wi := uint32(0); wi < 3; wi++ {
			w := l.Warp([3]uint32{}, wi)
			// Start 300 cycles before a multiple of 2^32: the high word
			// steps up by one in the middle of the warp.
			c := uint64(3+wi)<<32 - 300
			w.StartCycle = c - 200
			w.Role("producer", c)
			for i := 0; i < 5; i++ {
				w.Push("load", uint16(0xffff-i), c+uint64(i)*100+20)
				w.Mark("m", uint16(i), c+uint64(i)*100+50)
				w.Pop(c + uint64(i)*100 + 90)
			}
			w.Unfinished = wi == 2 && mode == trace.ModeStop
		}
		return l
	}
	for _, mode := range []trace.Mode{trace.ModeStop, trace.ModeWrap} {
		t.Run(string(mode), func(t *testing.T) {
			var got [2][]trace.Warp
			for i, ver := range []int{1, 2} {
				c := emu.MustRead(t, build(ver, mode))
				if c.Meta.Version != ver {
					t.Fatalf("capture version %d, want %d", c.Meta.Version, ver)
				}
				got[i], _ = decodeAll(t, c, 0, trace.Options{})
			}
			if len(got[0]) != 3 || len(got[1]) != 3 {
				t.Fatalf("warps %d and %d, want 3", len(got[0]), len(got[1]))
			}
			for wi := range got[0] {
				a, b := got[0][wi], got[1][wi]
				if len(b.Events) == 0 || len(a.Events) != len(b.Events) {
					t.Fatalf("warp %d: %d and %d events", wi, len(a.Events), len(b.Events))
				}
				for j := range a.Events {
					ea, eb := a.Events[j], b.Events[j]
					if ea.Kind() != eb.Kind() || ea.Name() != eb.Name() || ea.Payload() != eb.Payload() || ea.Time() != eb.Time() {
						t.Errorf("warp %d event %d: v1 %v, v2 %v", wi, j, ea, eb)
					}
				}
				if diff := cmp.Diff(a.Ranges, b.Ranges); diff != "" {
					t.Errorf("warp %d ranges (-v1 +v2):\n%s", wi, diff)
				}
				if len(a.Violations) != 0 || len(b.Violations) != 0 {
					t.Errorf("warp %d violations: v1 %v, v2 %v", wi, a.Violations, b.Violations)
				}
				// Warp 2 of the stop launch never finished: its records
				// are found by scanning for the first all-zero slot.
				if want := wi != 2 || mode == trace.ModeWrap; a.Finished != want || b.Finished != want {
					t.Errorf("warp %d finished %v and %v, want %v", wi, a.Finished, b.Finished, want)
				}
			}
		})
	}
}

// TestUnpack: Unpack inverts EncodeRecord in both versions, for events on
// either side of a step of the clock's high word, in any order, and reads an
// all-zero record as unwritten.
func TestUnpack(t *testing.T) {
	start := uint64(3)<<32 - 100
	for _, version := range []int{1, 2} {
		for _, c := range []uint64{start, start + 99, start + 100, start + 1<<31} {
			want := raw.Tag(uint8(trace.KindNext), 8191, 0xffff)
			r := raw.EncodeRecord(version, uint8(trace.KindNext), 8191, 0xffff, c)
			if tag, cy := raw.Unpack(version, r, start); tag != want || cy != c {
				t.Errorf("v%d cycle %d: Unpack = %#x at %d, want %#x at %d", version, c, tag, cy, want, c)
			}
		}
		if tag, cy := raw.Unpack(version, 0, start); tag != 0 || cy != start {
			t.Errorf("v%d zero record: %#x at %d", version, tag, cy)
		}
	}
}
