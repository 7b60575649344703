package trace_test

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/iket-trace/iket/internal/bundled"
	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/trace"
)

// shrunkCapture writes launch 0 of c again through trace.Shrink and reads
// it back; it returns the new capture and the launch's metadata as
// written.
func shrunkCapture(t *testing.T, c *trace.Capture) (*trace.Capture, trace.LaunchMeta) {
	t.Helper()
	meta := c.Meta
	meta.Launches = []trace.LaunchMeta{*c.Launch(0).Meta}
	rd, err := trace.Shrink(meta.Version, &meta.Launches[0], c.Launch(0).SectionReader())
	if err != nil {
		t.Fatalf("Shrink: %v", err)
	}
	var b bytes.Buffer
	if err := trace.WriteCapture(&b, &meta, []io.Reader{rd}); err != nil {
		t.Fatalf("WriteCapture: %v", err)
	}
	out, err := trace.Read(bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		t.Fatalf("read the shrunk capture: %v", err)
	}
	return out, meta.Launches[0]
}

// TestShrink: a finished stop-mode launch is stored with as many records
// per warp as its fullest warp used, and reads back the same warps, events,
// counts and violations; any other launch is stored whole.
func TestShrink(t *testing.T) {
	n := uint32(len(lanesScript))
	tests := []struct {
		name string
		l    func() *emu.Launch
		want uint32 // the capacity stored; the launch's own when not shrunk
	}{
		{name: "side events and lane 0's", l: func() *emu.Launch { return sideLaunch(4096, trace.ModeStop, false, 0) }, want: n},
		{name: "two side lanes", l: func() *emu.Launch { return sideLaunch(64, trace.ModeStop, false, 2) }, want: n},
		{name: "a warp that never started beside one that did", l: func() *emu.Launch {
			l := sideLaunch(64, trace.ModeStop, false, 0)
			l.Grid = [3]uint32{2, 1, 1}
			l.Warp([3]uint32{1, 0, 0}, 0).NeverStarted = true
			return l
		}, want: n},
		{name: "warps of different lengths", l: func() *emu.Launch {
			l := sideLaunch(1024, trace.ModeStop, false, 0)
			l.Grid = [3]uint32{3, 1, 1}
			c := l.Clock(0).Cycle0 + 10_000
			w := l.Warp([3]uint32{1, 0, 0}, 0)
			w.Mark("done", 1, c)
			w = l.Warp([3]uint32{2, 0, 0}, 0)
			for i := range 40 {
				w.Mark("done", uint16(i), c+uint64(100*i))
			}
			w.Side = []int{3, 9}
			return l
		}, want: 40},
		{name: "exactly full", l: func() *emu.Launch { return sideLaunch(n, trace.ModeStop, false, 0) }, want: n},
		{name: "drops", l: func() *emu.Launch { return sideLaunch(10, trace.ModeStop, false, 0) }, want: 10},
		{name: "a hung warp", l: func() *emu.Launch { return sideLaunch(64, trace.ModeStop, true, 0) }, want: 64},
		{name: "wrap mode", l: func() *emu.Launch { return sideLaunch(64, trace.ModeWrap, false, 0) }, want: 64},
		{name: "a saturated count", l: func() *emu.Launch {
			l := sideLaunch(64, trace.ModeStop, false, 0)
			l.Warp([3]uint32{0, 0, 0}, 0).SaturateAt = 6
			return l
		}, want: 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := tt.l()
			c := emu.MustRead(t, l)
			s, m := shrunkCapture(t, c)
			ran := c.Launch(0).Meta.Capacity
			if m.Capacity != tt.want {
				t.Fatalf("capacity %d stored, want %d", m.Capacity, tt.want)
			}
			wantRan := uint32(0)
			if tt.want < ran {
				wantRan = ran
			}
			if m.RanCapacity != wantRan || m.Ran() != ran {
				t.Errorf("ran capacity %d (Ran %d), want %d (%d)", m.RanCapacity, m.Ran(), wantRan, ran)
			}
			if got := s.Launch(0).Meta.Size(); got != int64(m.Warps)*(64+8*(int64(tt.want)+1)) {
				t.Errorf("%d bytes of warp buffers, want %d warps of capacity %d", got, m.Warps, tt.want)
			}
			before, _ := decodeAll(t, c, 0, trace.Options{})
			after, _ := decodeAll(t, s, 0, trace.Options{})
			if !reflect.DeepEqual(before, after) {
				t.Errorf("decoded warps differ:\nbefore %+v\nafter  %+v", before, after)
			}
			_, e1 := trace.Validate(c.Launch(0), trace.Options{Strict: true})
			_, e2 := trace.Validate(s.Launch(0), trace.Options{Strict: true})
			if (e1 == nil) != (e2 == nil) || (e1 != nil && e1.Error() != e2.Error()) {
				t.Errorf("strict validation: %v, shrunk %v", e1, e2)
			}
			if tt.want < ran && !strings.Contains(m.BufferText(), "the capture keeps") {
				t.Errorf("buffer text %q does not say the capture keeps fewer", m.BufferText())
			}
		})
	}
}

// TestShrinkKeepsStrayBytes: a byte where no record may be (between lane
// 0's records and the side records of a finished warp) keeps the launch
// whole, so the reader sees what the device wrote.
func TestShrinkKeepsStrayBytes(t *testing.T) {
	l := sideLaunch(64, trace.ModeStop, false, 0)
	c, err := emu.Damage(l, func(b []byte, m *trace.LaunchMeta) {
		b[m.Offset+64+8*30] = 1
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, m := shrunkCapture(t, c); m.Capacity != 64 || m.RanCapacity != 0 {
		t.Errorf("capacity %d (ran %d), want 64 and 0: the stray byte kept", m.Capacity, m.RanCapacity)
	}
}

// TestRanCapacity: a capture's ran_capacity is 0 or more than its capacity,
// in stop mode; a writer refuses anything else and names the field.
func TestRanCapacity(t *testing.T) {
	tests := []struct {
		name string
		ran  uint32
		mode trace.Mode
		bad  bool
	}{
		{name: "none", ran: 0, mode: trace.ModeStop},
		{name: "more than the capacity", ran: 4096, mode: trace.ModeStop},
		{name: "the capacity itself", ran: 64, mode: trace.ModeStop, bad: true},
		{name: "less than the capacity", ran: 32, mode: trace.ModeStop, bad: true},
		{name: "past the largest capacity", ran: 1<<30 + 1, mode: trace.ModeStop, bad: true},
		{name: "wrap mode", ran: 128, mode: trace.ModeWrap, bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := emu.MustRead(t, sideLaunch(64, tt.mode, false, 0))
			meta := c.Meta
			lm := *c.Launch(0).Meta
			lm.RanCapacity = tt.ran
			meta.Launches = []trace.LaunchMeta{lm}
			err := trace.WriteCapture(io.Discard, &meta, []io.Reader{c.Launch(0).SectionReader()})
			switch {
			case tt.bad && (err == nil || !strings.Contains(err.Error(), "ran_capacity")):
				t.Errorf("WriteCapture error %v, want one naming ran_capacity", err)
			case !tt.bad && err != nil:
				t.Errorf("WriteCapture: %v", err)
			}
		})
	}
}

// TestShrinkBundled: the H200 captures, recorded at capacities a little
// above what their warps used, shrink to their fullest warp's records and
// decode to the same warps.
func TestShrinkBundled(t *testing.T) {
	tests := []struct {
		name     string
		ran, got uint32 // capacity recorded with, and kept
	}{
		{bundled.WarpRolesName, 16, 6},
		{bundled.GEMMName, 88, 36},
		{bundled.PipelineName, 48, 25},
		{bundled.AppCppName, 320, 65},
		{bundled.AppPyName, 320, 65},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := bundled.Read(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			s, m := shrunkCapture(t, c)
			if m.RanCapacity != tt.ran || m.Capacity != tt.got {
				t.Errorf("capacity %d kept of %d, want %d of %d", m.Capacity, m.RanCapacity, tt.got, tt.ran)
			}
			before, _ := decodeAll(t, c, 0, trace.Options{})
			after, _ := decodeAll(t, s, 0, trace.Options{})
			if !reflect.DeepEqual(before, after) {
				t.Errorf("decoded warps differ")
			}
			t.Logf("%s: %d warps, buffers %d -> %d bytes", tt.name, m.Warps, c.Launch(0).Meta.Size(), s.Launch(0).Meta.Size())
		})
	}
}

// FuzzShrink: whatever the warp buffers hold, Shrink either leaves the
// launch whole or lays it out smaller, and the capture it writes decodes to
// the same warps, errors and violations.
func FuzzShrink(f *testing.F) {
	for _, seed := range append(decodeSeeds(f), shrinkSeeds(f)...) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := decodeCapture(data)
		if err != nil {
			t.Fatalf("wrap fuzz input: %v", err)
		}
		s, _ := shrunkCapture(t, c)
		for _, opt := range []trace.Options{{}, {Strict: true}} {
			if a, b := decodeText(c, opt), decodeText(s, opt); a != b {
				t.Errorf("decoded with %+v:\nwhole  %s\nshrunk %s", opt, a, b)
			}
		}
	})
}

// decodeText is every warp of launch 0 as text: its fields, or its error.
func decodeText(c *trace.Capture, opt trace.Options) string {
	d, err := trace.NewDecoder(c.Launch(0), opt)
	if err != nil {
		return "new decoder: " + err.Error()
	}
	var b strings.Builder
	for {
		var w trace.Warp
		err := d.Next(&w)
		if err == io.EOF {
			break
		}
		if err != nil {
			b.WriteString("error: " + err.Error() + "\n")
			continue
		}
		fmt.Fprintf(&b, "%+v\n", w)
	}
	return b.String()
}

// shrinkSeeds are the warp buffers (decodeCapture's input) of record
// format 3 stop-mode launches that Shrink lays out smaller: lane 0's
// events, side events, a warp that never started.
func shrinkSeeds(tb testing.TB) [][]byte {
	l := &emu.Launch{Kernel: "fuzz", Grid: [3]uint32{3, 1, 1}, Block: [3]uint32{32, 1, 1}, Capacity: fuzzCapacity,
		Names: emu.MustNames("RANGE a", "RANGE b", "MARK m", "ROLE r"), Version: 3}
	l.Warp([3]uint32{0, 0, 0}, 0).Role("r", 1e9).Push("a", 1, 1e9+10).Pop(1e9 + 20)
	w := l.Warp([3]uint32{1, 0, 0}, 0).Push("a", 1, 1e9).Push("b", 2, 1e9+5).Pop(1e9 + 6).Pop(1e9 + 9)
	w.Side = []int{1, 2}
	l.Warp([3]uint32{2, 0, 0}, 0).NeverStarted = true
	return [][]byte{append([]byte{4}, warpBuffers(tb, l)...)}
}

// TestShrinkSeeds: FuzzShrink's own seeds are laid out smaller, so its
// seed corpus runs the shrinking path and not only the whole one.
func TestShrinkSeeds(t *testing.T) {
	for i, seed := range shrinkSeeds(t) {
		c, err := decodeCapture(seed)
		if err != nil {
			t.Fatal(err)
		}
		if _, m := shrunkCapture(t, c); m.Capacity != 4 || m.RanCapacity != fuzzCapacity {
			t.Errorf("seed %d: capacity %d of %d, want 4 of %d", i, m.Capacity, m.RanCapacity, fuzzCapacity)
		}
	}
}
