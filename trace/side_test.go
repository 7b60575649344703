package trace_test

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/internal/raw"
	"github.com/iket-trace/iket/trace"
)

// sideEvent is one scripted event of TestSideEvents: what it is, and
// whether lane 0 was among the lanes recording it.
type sideEvent struct {
	kind    trace.Kind
	name    string
	payload uint16
	side    bool
}

// lanesScript is a warp whose lanes record in turn: lane 0 alone, then
// lanes 16-31 without it, then the whole warp, then lane 31 alone, then an
// if/else whose two branches each push and pop a range.
var lanesScript = []sideEvent{
	{trace.KindRole, "producer", 0, false},
	{trace.KindPush, "wait", 1, false}, // lane 0 alone
	{trace.KindPop, "", 0, false},
	{trace.KindPush, "load", 2, true}, // lanes 16-31
	{trace.KindPop, "", 0, true},
	{trace.KindPush, "compute", 3, false}, // the whole warp
	{trace.KindMark, "done", 4, true},     // lane 31 inside it
	{trace.KindPop, "", 0, false},
	{trace.KindPush, "wait", 5, false}, // if (lane < 16)
	{trace.KindPop, "", 0, false},
	{trace.KindPush, "load", 6, true}, // else
	{trace.KindPop, "", 0, true},
	{trace.KindMark, "done", 7, false},
}

// sideLaunch lays lanesScript out as the device does, with capacity capa.
func sideLaunch(capa uint32, mode trace.Mode, unfinished bool, sideLanes uint32) *emu.Launch {
	l := &emu.Launch{Kernel: "lanes", Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{32, 1, 1}, Capacity: capa, Mode: mode,
		Names: emu.MustNames("ROLE producer", "RANGE wait", "RANGE load", "RANGE compute", "MARK done"), SMs: 1}
	w := l.Warp([3]uint32{0, 0, 0}, 0)
	c := l.Clock(0).Cycle0 + 10_000
	for i, e := range lanesScript {
		c += 100
		switch e.kind {
		case trace.KindRole:
			w.Role(e.name, c)
		case trace.KindPush:
			w.Push(e.name, e.payload, c)
		case trace.KindPop:
			w.Pop(c)
		case trace.KindMark:
			w.Mark(e.name, e.payload, c)
		}
		if e.side {
			w.Side = append(w.Side, i)
		}
	}
	w.Unfinished, w.SideLanes = unfinished, sideLanes
	return l
}

func nameOf(l *emu.Launch, name string) uint16 {
	if name == "" {
		return 0
	}
	return l.ID(name)
}

// TestSideEvents: events recorded without lane 0 come back in time order
// among lane 0's, with exact counts, whatever the buffer holds.
func TestSideEvents(t *testing.T) {
	n := len(lanesScript)
	const all = ^uint64(0)
	sides := 0
	for _, e := range lanesScript {
		if e.side {
			sides++
		}
	}
	tests := []struct {
		name       string
		capa       uint32
		mode       trace.Mode
		unfinished bool
		unstored   []int
		sideLanes  uint32
		// keep lists the script's events decoded, in order; dropped and
		// sideDropped the counts.
		keep                 []int
		dropped, sideDropped uint64
		side                 uint64 // side events counted, -1 means all of the script's
		beyond               int
		saturated            bool
		strict               string // "" means strict validation passes
	}{
		{name: "room for all", capa: 32, keep: seq(0, n), side: all},
		// Far more room than records: the tail word is read apart.
		{name: "room to spare", capa: 2048, keep: seq(0, n), side: all},
		{name: "exactly full", capa: uint32(n), keep: seq(0, n), side: all},
		{name: "two lanes stored side events", capa: 32, sideLanes: 2, keep: seq(0, n), side: all, strict: "2 lanes stored side events"},
		// 8 lane-0 events and 5 side events in 4 slots: both wrote every
		// slot, so none is kept; the side count stops at capacity + 1 = 5,
		// a lower bound.
		{name: "side count saturated", capa: 4, keep: []int{}, side: 5, dropped: 13, sideDropped: 5, saturated: true, strict: "saturated"},
		// 13 events in 10 slots: lane 0's 8 take slots 0-7, the 5 side
		// events 9 down to 5; slots 5-7 were written by both and are left
		// out: lane 0's first 5 (events 0, 1, 2, 5, 7) and the side events
		// in slots 8 and 9 (events 3, 4) remain.
		{name: "met in the middle", capa: 10, keep: []int{0, 1, 2, 3, 4, 5, 7}, side: all, dropped: 6, sideDropped: 3, strict: "6 of 13 events dropped"},
		// The tail word is written at exit: a hung warp's side records are
		// read as the run down from the last slot.
		{name: "hung", capa: 32, unfinished: true, keep: seq(0, n), side: all, strict: "did not finish"},
		// A hole in lane 0's records (event 7 unstored, as a Batch's
		// pending pair): its 3 records after the hole are beyond; the side
		// run stays apart.
		{name: "hung with a hole", capa: 32, unfinished: true, unstored: []int{7}, keep: []int{0, 1, 2, 3, 4, 5, 6, 10, 11}, side: all, beyond: 3,
			strict: "3 more records lie after the first unwritten slot"},
		{name: "wrap keeps no side event", capa: 16, mode: trace.ModeWrap, keep: mainOnly(), side: all, dropped: uint64(sides), sideDropped: uint64(sides),
			strict: "recorded while lane 0 was inactive, which a wrap build does not store"},
		// Lane 0's newest 4 events remain; the side count stops at 5.
		{name: "wrap side count saturated", capa: 4, mode: trace.ModeWrap, keep: []int{7, 8, 9, 12}, side: 5, dropped: 4 + 5, sideDropped: 5,
			saturated: true, strict: "at least 9 of at least 13 events dropped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := sideLaunch(tt.capa, tt.mode, tt.unfinished, tt.sideLanes)
			l.Warp([3]uint32{0, 0, 0}, 0).Unstored = tt.unstored
			c := emu.MustRead(t, l)
			d, err := trace.NewDecoder(c.Launch(0), trace.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var w trace.Warp
			if err := d.Next(&w); err != nil {
				t.Fatal(err)
			}
			if len(w.Events) != len(tt.keep) {
				t.Fatalf("%d events, want %d: %v", len(w.Events), len(tt.keep), w.Events)
			}
			for i, k := range tt.keep {
				e, want := w.Events[i], lanesScript[k]
				if e.Kind() != want.kind || e.Name() != nameOf(l, want.name) || e.Payload() != want.payload {
					t.Errorf("event %d: %v, want script event %d %+v", i, e, k, want)
				}
				if i > 0 && e.Cycles() <= w.Events[i-1].Cycles() {
					t.Errorf("event %d at cycle %d, not after %d", i, e.Cycles(), w.Events[i-1].Cycles())
				}
			}
			side := tt.side
			if side == all {
				side = uint64(sides)
			}
			wantCount := uint64(n-sides) + side
			switch {
			case tt.saturated:
				wantCount = uint64(n-sides) + uint64(tt.capa) + 1
			case tt.unfinished: // no count: what was read
				wantCount = uint64(len(tt.keep))
			}
			if w.Count != wantCount || w.Dropped != tt.dropped || w.Side != side || w.SideDropped != tt.sideDropped ||
				w.Beyond != tt.beyond || w.CountSaturated != tt.saturated {
				t.Errorf("count %d dropped %d side %d side dropped %d beyond %d saturated %v, want %d %d %d %d %d %v",
					w.Count, w.Dropped, w.Side, w.SideDropped, w.Beyond, w.CountSaturated,
					wantCount, tt.dropped, side, tt.sideDropped, tt.beyond, tt.saturated)
			}
			sum, err := trace.Validate(c.Launch(0), trace.Options{Strict: true})
			if sum.Side != side {
				t.Errorf("summary: %d side events, want %d", sum.Side, side)
			}
			switch {
			case tt.strict == "" && err != nil:
				t.Errorf("strict validation: %v", err)
			case tt.strict != "" && (err == nil || !strings.Contains(err.Error(), tt.strict)):
				t.Errorf("strict validation: %v, want %q", err, tt.strict)
			}
		})
	}
}

func seq(a, b int) []int {
	var s []int
	for i := a; i < b; i++ {
		s = append(s, i)
	}
	return s
}

func mainOnly() []int {
	var s []int
	for i, e := range lanesScript {
		if !e.side {
			s = append(s, i)
		}
	}
	return s
}

// TestSideTailDamaged: a tail word that says one lane stored no side event
// is a damaged buffer, named with its slot; a format-2 capture's tail slot
// is not read.
func TestSideTailDamaged(t *testing.T) {
	for _, version := range []int{2, 3} {
		l := &emu.Launch{Kernel: "k", Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{32, 1, 1}, Capacity: 4, Version: version,
			Names: emu.MustNames("MARK m"), SMs: 1}
		l.Warp([3]uint32{0, 0, 0}, 0).Mark("m", 1, l.Clock(0).Cycle0+10_000)
		c, err := emu.Damage(l, func(b []byte, m *trace.LaunchMeta) {
			binary.LittleEndian.PutUint32(b[m.Offset+raw.WarpHeaderSize+4*raw.RecordSize+4:], 1)
		})
		if err != nil {
			t.Fatal(err)
		}
		d, err := trace.NewDecoder(c.Launch(0), trace.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var w trace.Warp
		err = d.Next(&w)
		var we *trace.WarpError
		if version == 2 {
			if err != nil || len(w.Events) != 1 {
				t.Errorf("format 2: %v, %d events; want the one mark", err, len(w.Events))
			}
			continue
		}
		if !errors.As(err, &we) || we.Slot != 0 || !strings.Contains(we.Msg, "tail word") {
			t.Errorf("format 3: %v, want a WarpError naming slot 0's tail word", err)
		}
	}
}

// TestSideLanesExcluded: the analysis leaves out a warp whose side events
// two lanes stored, saying why, and keeps one whose side events one lane
// stored.
func TestSideLanesExcluded(t *testing.T) {
	for _, lanes := range []uint32{1, 2} {
		l := sideLaunch(32, trace.ModeStop, false, lanes)
		a, err := trace.Analyze(context.Background(), emu.MustRead(t, l).Launch(0), trace.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		if lanes > 1 {
			want = 1
		}
		if a.NumExcluded != want || (want == 1 && !strings.Contains(a.Excluded[0], "2 lanes stored side events")) {
			t.Errorf("%d side lanes: excluded %d %q, want %d", lanes, a.NumExcluded, a.Excluded, want)
		}
	}
}
