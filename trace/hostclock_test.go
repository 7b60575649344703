package trace_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/trace"
)

// hostNs0 is the globaltimer of the emulated SMs at cycle 0: each runs at
// 1000 MHz with a 1 ns tick, so an anchor taken at cycle c reads
// hostNs0 + c + 1.
const hostNs0 = 1_700_000_000_000_000_000

// alignLaunch emulates a launch of two CTAs (on SMs 0 and 1) of one warp
// each: warp 0 from cycle 1000 to 5000, warp 1 from 2000 to 9000, or, when
// hung, warp 1 left unfinished. Its GPU interval is [hostNs0+1001,
// hostNs0+9001] (to warp 0's end, hostNs0+5001, when warp 1 hung).
func alignLaunch(t *testing.T, hung bool) *trace.Capture {
	t.Helper()
	ck := emu.Clock{MHz: 1000, Ns0: hostNs0, TickNs: 1}
	l := &emu.Launch{Kernel: "k", Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{32, 1, 1}, Capacity: 8, SMs: 2,
		Names: emu.MustNames("RANGE load"), Clocks: map[uint32]emu.Clock{0: ck, 1: ck}}
	w := l.Warp([3]uint32{0, 0, 0}, 0)
	w.StartCycle, w.EndCycle = 1000, 5000
	w.Push("load", 0, 1100).Pop(4000)
	w = l.Warp([3]uint32{1, 0, 0}, 0)
	w.StartCycle, w.EndCycle, w.Unfinished = 2000, 9000, hung
	w.Push("load", 0, 2100)
	if !hung {
		w.Pop(8000)
	}
	c := emu.MustRead(t, l)
	return c
}

func TestAlignHost(t *testing.T) {
	const start, end = hostNs0 + 1001, hostNs0 + 9001 // the GPU interval
	const host = 1_765_432_100_000_000_000            // CLOCK_REALTIME before the launch
	tests := []struct {
		name   string
		hung   bool
		before int64 // realtime_before - host
		after  int64 // realtime_after - host
		want   trace.HostAlignment
	}{
		{"exact fit", false, 0, end - start,
			trace.HostAlignment{OffsetNs: host - start, GPUStart: start, GPUEnd: end}},
		{"slack 1000", false, 0, end - start + 1000,
			trace.HostAlignment{OffsetNs: host - start + 500, UncertaintyNs: 500, SlackNs: 1000, GPUStart: start, GPUEnd: end}},
		{"odd slack rounds the uncertainty up", false, 0, end - start + 1001,
			trace.HostAlignment{OffsetNs: host - start + 500, UncertaintyNs: 501, SlackNs: 1001, GPUStart: start, GPUEnd: end}},
		{"host interval shorter than the GPU's", false, 0, end - start - 200,
			trace.HostAlignment{OffsetNs: host - start - 100, SlackNs: -200, GPUStart: start, GPUEnd: end}},
		{"host before the GPU on the clocks", false, -5_000_000_000, -5_000_000_000 + end - start + 40,
			trace.HostAlignment{OffsetNs: host - 5_000_000_000 - start + 20, UncertaintyNs: 20, SlackNs: 40, GPUStart: start, GPUEnd: end}},
		{"hung warp: warp 0's end anchor is the latest", true, 0, 6000,
			trace.HostAlignment{OffsetNs: host - start + 1000, UncertaintyNs: 1000, SlackNs: 2000, GPUStart: start, GPUEnd: hostNs0 + 5001}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := alignLaunch(t, tc.hung)
			c.Meta.Launches[0].HostClock = &trace.HostClock{RealtimeBefore: host + tc.before, RealtimeAfter: host + tc.after,
				MonotonicBefore: 1_000, MonotonicAfter: 1_000 + tc.after - tc.before}
			l := c.Launch(0)
			got, err := trace.AlignHost(l)
			if err != nil {
				t.Fatalf("AlignHost: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("AlignHost (-want +got):\n%s", diff)
			}
			off, unc, ok := trace.HostOffset(l)
			if !ok || off != tc.want.OffsetNs || unc != tc.want.UncertaintyNs {
				t.Errorf("HostOffset = %d, %d, %t; want %d, %d, true", off, unc, ok, tc.want.OffsetNs, tc.want.UncertaintyNs)
			}
			// Wherever the GPU interval truly lay inside the host interval,
			// the offset puts its start within the uncertainty of it.
			if got.SlackNs >= 0 {
				hc := l.Meta.HostClock
				for _, s := range []int64{hc.RealtimeBefore, hc.RealtimeBefore + got.SlackNs} {
					if d := got.GPUStart + got.OffsetNs - s; d > got.UncertaintyNs || -d > got.UncertaintyNs {
						t.Errorf("true start %d: placed %d ns away, uncertainty %d", s, d, got.UncertaintyNs)
					}
				}
			}
		})
	}
}

// TestAlignHostWithoutHostClock: a launch without host clocks (not from
// iket run -- CMD) has no alignment.
func TestAlignHostWithoutHostClock(t *testing.T) {
	l := alignLaunch(t, false).Launch(0)
	if _, err := trace.AlignHost(l); !errors.Is(err, trace.ErrNoHostClock) {
		t.Errorf("AlignHost error %v, want ErrNoHostClock", err)
	}
	if off, unc, ok := trace.HostOffset(l); ok {
		t.Errorf("HostOffset = %d, %d, true; want ok false", off, unc)
	}
}

// TestAlignHostNoWarp: a launch in which no warp started has no GPU
// interval to place.
func TestAlignHostNoWarp(t *testing.T) {
	l := &emu.Launch{Kernel: "k", Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{32, 1, 1}, Capacity: 8, Names: emu.MustNames("RANGE load")}
	l.Warp([3]uint32{0, 0, 0}, 0).NeverStarted = true
	c := emu.MustRead(t, l)
	c.Meta.Launches[0].HostClock = &trace.HostClock{RealtimeBefore: 1, RealtimeAfter: 2}
	if _, err := trace.AlignHost(c.Launch(0)); err == nil || errors.Is(err, trace.ErrNoHostClock) {
		t.Errorf("AlignHost error %v, want one saying no warp started", err)
	}
	if _, _, ok := trace.HostOffset(c.Launch(0)); ok {
		t.Error("HostOffset ok, want false")
	}
}

// TestAlignHostBadClock: realtime readings out of order are an error, not
// an offset.
func TestAlignHostBadClock(t *testing.T) {
	for _, hc := range []trace.HostClock{
		{RealtimeBefore: 10, RealtimeAfter: 9},
		{RealtimeBefore: -1, RealtimeAfter: 9},
		{RealtimeBefore: 0, RealtimeAfter: 1 << 62},
	} {
		c := alignLaunch(t, false)
		c.Meta.Launches[0].HostClock = &hc
		if a, err := trace.AlignHost(c.Launch(0)); err == nil || !strings.Contains(err.Error(), "realtime_before") {
			t.Errorf("%+v: AlignHost = %+v, %v; want an error naming the readings", hc, a, err)
		}
	}
}

// TestAlignHostSkipsCorruptHeader: a header the decoder rejects (flags
// with a bit no header sets) does not widen the GPU interval: the
// alignment is warp 0's alone.
func TestAlignHostSkipsCorruptHeader(t *testing.T) {
	ck := emu.Clock{MHz: 1000, Ns0: hostNs0, TickNs: 1}
	l := &emu.Launch{Kernel: "k", Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{32, 1, 1}, Capacity: 8, SMs: 2,
		Names: emu.MustNames("RANGE load"), Clocks: map[uint32]emu.Clock{0: ck, 1: ck}}
	w := l.Warp([3]uint32{0, 0, 0}, 0)
	w.StartCycle, w.EndCycle = 1000, 5000
	w = l.Warp([3]uint32{1, 0, 0}, 0)
	w.StartCycle, w.EndCycle = 2000, 9000
	c, err := emu.Damage(l, func(b []byte, m *trace.LaunchMeta) {
		b[m.Offset+m.Stride()+60] |= 0x10 // warp 1's flags
	})
	if err != nil {
		t.Fatal(err)
	}
	c.Meta.Launches[0].HostClock = &trace.HostClock{RealtimeBefore: 1_000_000, RealtimeAfter: 1_010_000, MonotonicBefore: 1, MonotonicAfter: 10_001}
	a, err := trace.AlignHost(c.Launch(0))
	if err != nil {
		t.Fatalf("AlignHost: %v", err)
	}
	if a.GPUStart != hostNs0+1001 || a.GPUEnd != hostNs0+5001 {
		t.Errorf("GPU interval [%d, %d], want warp 0's [%d, %d]", a.GPUStart, a.GPUEnd, int64(hostNs0+1001), int64(hostNs0+5001))
	}
}
