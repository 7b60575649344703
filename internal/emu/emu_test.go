package emu_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/internal/raw"
	"github.com/iket-trace/iket/trace"
)

// slot returns warp slot s's header and records from a capture.
func slot(t *testing.T, data []byte, s int) (raw.WarpHeader, []raw.Record) {
	t.Helper()
	c, err := emu.Read(data)
	if err != nil {
		t.Fatalf("read capture: %v", err)
	}
	b, err := c.Launch(0).ReadWarp(uint64(s), nil)
	if err != nil {
		t.Fatal(err)
	}
	var h raw.WarpHeader
	raw.DecodeWarpHeader(b, &h)
	recs := make([]raw.Record, (len(b)-raw.WarpHeaderSize)/raw.RecordSize)
	for i := range recs {
		recs[i] = raw.Record(binary.LittleEndian.Uint64(b[raw.WarpHeaderSize+i*raw.RecordSize:]))
	}
	return h, recs
}

// tagOf returns a version-2 record's tag (raw.Unpack from the warp's
// start anchor).
func tagOf(h raw.WarpHeader, r raw.Record) uint32 {
	tag, _ := raw.Unpack(2, r, h.StartClock)
	return tag
}

func kindOf(h raw.WarpHeader, r raw.Record) trace.Kind { return trace.Kind(tagOf(h, r) >> 29) }

func marks(l *emu.Launch, n int) *emu.Warp {
	w := l.Warp([3]uint32{}, 0)
	for i := 0; i < n; i++ {
		w.Mark("m", uint16(i), 5_000_000_000+uint64(i)*1000)
	}
	return w
}

func TestLayout(t *testing.T) {
	names := emu.MustNames("MARK m")
	// want lists, per slot (capacity 4 records + the slot after them, version
	// 3's tail word, zero without side events), the index of the
	// event it holds, or -1 when never written.
	const done = raw.FlagStarted | raw.FlagFinished
	tests := []struct {
		name  string
		mode  trace.Mode
		n     int
		set   func(w *emu.Warp)
		want  []int
		count uint32
		flags uint32
	}{
		{"stop partial", trace.ModeStop, 2, nil, []int{0, 1, -1, -1, -1}, 2, done},
		{"stop overflow stores nothing", trace.ModeStop, 7, nil, []int{0, 1, 2, 3, -1}, 7, done},
		{"wrap ring keeps newest", trace.ModeWrap, 6, nil, []int{4, 5, 2, 3, -1}, 6, done},
		{"lanes diverged", trace.ModeStop, 2, func(w *emu.Warp) { w.LanesDiverged = true },
			[]int{0, 1, -1, -1, -1}, 2, done | raw.FlagLanesDiverged},
		{"stop saturated past the buffer", trace.ModeStop, 7, func(w *emu.Warp) { w.SaturateAt = 5 },
			[]int{0, 1, 2, 3, -1}, 5, done | raw.FlagCountSaturated},
		{"stop saturated inside the buffer", trace.ModeStop, 6, func(w *emu.Warp) { w.SaturateAt = 2 },
			[]int{0, 1, 5, -1, -1}, 2, done | raw.FlagCountSaturated},
		{"wrap saturated overwrites one slot", trace.ModeWrap, 9, func(w *emu.Warp) { w.SaturateAt = 6 },
			[]int{4, 5, 8, 3, -1}, 6, done | raw.FlagCountSaturated},
		{"limit not reached", trace.ModeWrap, 5, func(w *emu.Warp) { w.SaturateAt = 6 },
			[]int{4, 1, 2, 3, -1}, 5, done},
		{"limit reached by the last event", trace.ModeWrap, 6, func(w *emu.Warp) { w.SaturateAt = 6 },
			[]int{4, 5, 2, 3, -1}, 6, done | raw.FlagCountSaturated},
	}
	for _, ver := range []int{1, 2, 3} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("v%d %s", ver, tt.name), func(t *testing.T) {
				testLayout(t, ver, names, tt.mode, tt.n, tt.set, tt.want, tt.count, tt.flags)
			})
		}
	}
}

func testLayout(t *testing.T, ver int, names []trace.Name, mode trace.Mode, n int, set func(*emu.Warp), wantIdx []int, count, flags uint32) {
	cyc := func(i int) uint64 { return 5_000_000_000 + uint64(i)*1000 }
	want := make([]raw.Record, len(wantIdx))
	for j, i := range wantIdx {
		if i >= 0 {
			want[j] = raw.EncodeRecord(ver, uint8(trace.KindMark), 1, uint16(i), cyc(i))
		}
	}
	l := &emu.Launch{Kernel: "k", Block: [3]uint32{32, 1, 1}, Capacity: 4, Mode: mode, Names: names, Version: ver}
	w := marks(l, n)
	if set != nil {
		set(w)
	}
	data, err := l.Capture()
	if err != nil {
		t.Fatal(err)
	}
	h, recs := slot(t, data, 0)
	if diff := cmp.Diff(want, recs); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	if h.Count != count || h.Flags != flags || h.Magic != raw.WarpMagic {
		t.Errorf("header %+v", h)
	}
	// Records keep the low 32 bits of the clock (5e9 > 2^32); version 2
	// adds the tag to the high word (5e9 >> 32 = 1).
	if got, want := recs[0].Clock(), uint32(cyc(wantIdx[0])); got != want {
		t.Errorf("clock %d, want %d", got, want)
	}
	tag, c := raw.Unpack(ver, recs[0], h.StartClock)
	if tag != raw.Tag(uint8(trace.KindMark), 1, uint16(wantIdx[0])) || c != cyc(wantIdx[0]) {
		t.Errorf("first record %#x: tag %#x at cycle %d, want mark 1 payload %d at %d", uint64(recs[0]), tag, c, wantIdx[0], cyc(wantIdx[0]))
	}
}

func TestAnchors(t *testing.T) {
	ck := emu.Clock{MHz: 1000, Cycle0: 1_000_000, Ns0: 64_000, TickNs: 32}
	l := &emu.Launch{Kernel: "k", Block: [3]uint32{64, 1, 1}, Capacity: 4, Names: emu.MustNames("MARK m"),
		Clocks: map[uint32]emu.Clock{0: ck}}
	w := l.Warp([3]uint32{}, 0)
	w.StartCycle, w.EndCycle = 1_000_100, 1_000_500
	w.Mark("m", 0, 1_000_200)
	u := l.Warp([3]uint32{}, 1)
	u.Unfinished = true
	u.Mark("m", 0, 1_000_300)
	data, err := l.Capture()
	if err != nil {
		t.Fatal(err)
	}
	h, _ := slot(t, data, 0)
	// 1 GHz: cycle 1_000_100 is ns 64_100; the next tick is 64_128, at
	// cycle 1_000_128. The end: 64_500 -> tick 64_512, cycle 1_000_512.
	want := raw.WarpHeader{Magic: raw.WarpMagic, Flags: 3, Count: 1,
		StartGlobaltimer: 64_128, StartClock: 1_000_128, EndGlobaltimer: 64_512, EndClock: 1_000_512}
	if diff := cmp.Diff(want, h); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	hu, _ := slot(t, data, 1)
	if hu.Count != 0 || hu.Flags != raw.FlagStarted || hu.EndClock != 0 || hu.Warp != 1 {
		t.Errorf("unfinished header %+v", hu)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name  string
		build func(l *emu.Launch)
		want  string
	}{
		{"unknown name", func(l *emu.Launch) { l.Warp([3]uint32{}, 0).Mark("nope", 0, 1e9) }, `name "nope" is not in the launch's name table`},
		{"time backwards", func(l *emu.Launch) { l.Warp([3]uint32{}, 0).Mark("m", 0, 1e9).Mark("m", 0, 1e9-1) }, "event 1 at cycle 999999999 is before event 0"},
		{"outside launch", func(l *emu.Launch) { l.Warp([3]uint32{}, 5).Mark("m", 0, 1e9) }, "outside the launch"},
		{"start after first event", func(l *emu.Launch) {
			w := l.Warp([3]uint32{}, 0).Mark("m", 0, 1e9)
			w.StartCycle = 1e9
		}, "precedes the start anchor"},
		{"wrap capacity", func(l *emu.Launch) { l.Mode, l.Capacity = trace.ModeWrap, 6 }, "power-of-two"},
		{"lanes diverged unfinished", func(l *emu.Launch) {
			w := l.Warp([3]uint32{}, 0).Mark("m", 0, 1e9)
			w.Unfinished, w.LanesDiverged = true, true
		}, "lanes diverged on an unfinished warp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &emu.Launch{Kernel: "k", Block: [3]uint32{32, 1, 1}, Capacity: 4, Names: emu.MustNames("MARK m")}
			tt.build(l)
			_, err := l.Capture()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Capture error %v, want one containing %q", err, tt.want)
			}
		})
	}
	if _, err := emu.Names("BOGUS x"); err == nil {
		t.Error("Names accepted a bad kind")
	}
}

// TestGenerateMatchesScript: a generated launch writes the same bytes as the
// same script added warp by warp.
func TestGenerateMatchesScript(t *testing.T) {
	script := func(w *emu.Warp) {
		c := 2_000_000 + w.Slot*10_000
		w.Push("a", uint16(w.Slot), c).Pop(c + 100)
		if w.Slot == 3 {
			w.Unfinished = true
		}
		if w.Slot == 5 {
			w.NeverStarted = true
		}
	}
	mk := func() *emu.Launch {
		return &emu.Launch{Kernel: "k", Grid: [3]uint32{3, 1, 1}, Block: [3]uint32{64, 1, 1}, Capacity: 4, Names: emu.MustNames("RANGE a")}
	}
	gen := mk()
	gen.Generate = script
	scripted := mk()
	for s := uint64(0); s < scripted.Slots(); s++ {
		w := scripted.Warp([3]uint32{uint32(s / 2), 0, 0}, uint32(s%2))
		script(w)
	}
	a, err := gen.Capture()
	if err != nil {
		t.Fatal(err)
	}
	b, err := scripted.Capture()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("generated and scripted captures differ")
	}
}

func TestProducerConsumer(t *testing.T) {
	l, err := emu.ProducerConsumer(emu.PCConfig{CTAs: 3, Stages: 2})
	if err != nil {
		t.Fatal(err)
	}
	if l.Slots() != 6 || l.ID("producer") != 1 || l.ID("kernel_start") != 5 {
		t.Errorf("slots %d, ids %d %d", l.Slots(), l.ID("producer"), l.ID("kernel_start"))
	}
	as, err := emu.ProducerConsumer(emu.PCConfig{CTAs: 1, Stages: 2, Async: true})
	if err != nil {
		t.Fatal(err)
	}
	adata, err := as.Capture()
	if err != nil {
		t.Fatal(err)
	}
	if h, recs := slot(t, adata, 0); kindOf(h, recs[2]) != trace.KindStart || kindOf(h, recs[3]) != trace.KindEnd || tagOf(h, recs[3])&0xffff != 0 {
		t.Errorf("async producer records %v", recs[:6])
	}
	if _, err := emu.ProducerConsumer(emu.PCConfig{Overlap: 2}); err == nil {
		t.Error("overlap 2 accepted")
	}
	data, err := l.Capture()
	if err != nil {
		t.Fatal(err)
	}
	h, recs := slot(t, data, 5)
	if h.SM != 2 || h.CTA != [3]uint32{2, 0, 0} || h.Warp != 1 || h.Count != 6 || kindOf(h, recs[2]) != trace.KindPush {
		t.Errorf("consumer of cta 2: header %+v, records %v", h, recs[:6])
	}
}
