package perfetto

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/trace"
)

// mergeCapture writes an emulated capture of launches launches (two CTAs of
// two warps each, the second CTA later than the first) to a file, opens it
// and gives it proc, device uuid and, when realtime is not 0, host clocks:
// launch i issued at realtime + i ms, seen complete 1 ms later.
func mergeCapture(t *testing.T, launches int, proc *trace.Process, uuid string, realtime int64) *trace.Capture {
	t.Helper()
	ck := emu.Clock{MHz: 1980, Ns0: emu.DefaultNs0, TickNs: 32}
	var ls []*emu.Launch
	for i := range launches {
		l := &emu.Launch{Kernel: fmt.Sprintf("k%d", i), Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{64, 1, 1}, Capacity: 16,
			Names: emu.MustNames("ROLE producer", "RANGE load", "MARK done"), Clocks: map[uint32]emu.Clock{0: ck, 1: ck}}
		for cta := range uint32(2) {
			for wi := range uint32(2) {
				at := 2_000_000 + 10_000*uint64(cta) + 1_000*uint64(wi) + 100_000*uint64(i)
				w := l.Warp([3]uint32{cta, 0, 0}, wi)
				w.Role("producer", at).Push("load", 0, at+100).Pop(at+900).Mark("done", uint16(wi), at+950)
			}
		}
		ls = append(ls, l)
	}
	c := emu.OpenTemp(t, ls...)
	c.Meta.Process = proc
	c.Meta.Device.UUID = uuid
	if realtime != 0 {
		for i := range c.Meta.Launches {
			b := realtime + int64(i)*1_000_000
			c.Meta.Launches[i].HostClock = &trace.HostClock{RealtimeBefore: b, RealtimeAfter: b + 1_000_000,
				MonotonicBefore: b - 1_000_000_000, MonotonicAfter: b - 999_000_000}
		}
	}
	return c
}

// flatEvent is an event of a launch's subtree: the track names below the
// launch track, the event's name, type and time.
type flatEvent struct {
	Path string
	Name string
	Type string
	TS   uint64
}

// launchEvents returns the events of the launch track id's subtree, in a
// canonical order, with shift added to their times.
func launchEvents(m *model, id uint64, shift int64) []flatEvent {
	var out []flatEvent
	var walk func(id uint64, path string)
	walk = func(id uint64, path string) {
		for _, e := range m.events[id] {
			out = append(out, flatEvent{path, e.name, e.typ.String(), uint64(int64(e.ts) + shift)})
		}
		for _, c := range m.children[id] {
			walk(c, path+"/"+m.tracks[c].GetName())
		}
	}
	walk(id, "")
	slices.SortStableFunc(out, func(a, b flatEvent) int {
		return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
	})
	return out
}

func exportBytes(t *testing.T, fn func(*bytes.Buffer) error) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := fn(&b); err != nil {
		t.Fatal(err)
	}
	if err := CheckValid(bytes.NewReader(b.Bytes())); err != nil {
		t.Fatalf("CheckValid: %v", err)
	}
	return b.Bytes()
}

// TestExportMerged merges two captures whose host clocks put their GPUs at
// different offsets: each launch's events are those of its own capture's
// export, shifted by its launch's offset, under a track named after the
// capture's host, rank, pid and GPU.
func TestExportMerged(t *testing.T) {
	a := mergeCapture(t, 1, &trace.Process{PID: 100, Host: "node-a", Rank: 0, Env: []string{"RANK=0", "WORLD_SIZE=2"}},
		"GPU-aaaaaaaa-1111-2222-3333-444444444444", 1_765_000_000_000_000_000)
	b := mergeCapture(t, 2, &trace.Process{PID: 200, Host: "node-b", Rank: -1},
		"GPU-bbbbbbbb-1111-2222-3333-444444444444", 1_765_000_123_456_789_000)
	opt := Options{Flows: true, Counters: true, SummaryBins: 8}
	merged := exportBytes(t, func(w *bytes.Buffer) error { return ExportMerged(w, []*trace.Capture{a, b}, opt) })
	if again := exportBytes(t, func(w *bytes.Buffer) error { return ExportMerged(w, []*trace.Capture{a, b}, opt) }); !bytes.Equal(merged, again) {
		t.Error("two merges of the same captures differ")
	}
	mm := resolve(t, readPackets(t, merged))
	wantRoots := []string{"node-a · rank 0 · pid 100 · emulated GPU-aaaaaaaa", "node-b · pid 200 · emulated GPU-bbbbbbbb"}
	if diff := cmp.Diff(wantRoots, mm.childNames(0)); diff != "" {
		t.Errorf("top-level tracks (-want +got):\n%s", diff)
	}
	for ci, c := range []*trace.Capture{a, b} {
		single := resolve(t, readPackets(t, exportBytes(t, func(w *bytes.Buffer) error { return ExportCapture(w, c, opt) })))
		for i := range c.NumLaunches() {
			al, err := trace.AlignHost(c.Launch(i))
			if err != nil {
				t.Fatal(err)
			}
			hc := c.Meta.Launches[i].HostClock
			// 1 ms of host interval around a launch of a few us: the
			// offset puts the GPU interval in the middle.
			if mid := al.GPUStart + al.OffsetNs - hc.RealtimeBefore; mid != al.SlackNs/2 || al.UncertaintyNs != al.SlackNs-al.SlackNs/2 {
				t.Errorf("capture %d launch %d: GPU start placed %d ns after realtime_before, uncertainty %d; slack %d", ci, i, mid, al.UncertaintyNs, al.SlackNs)
			}
			name := fmt.Sprintf("launch %d · k%d", i, i)
			want := launchEvents(single, single.path(t, "GPU · emulated", name), al.OffsetNs)
			got := launchEvents(mm, mm.path(t, wantRoots[ci], name), 0)
			if len(want) < 20 {
				t.Fatalf("capture %d launch %d: only %d events", ci, i, len(want))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("capture %d launch %d: merged events are not the capture's shifted by %d ns (-want +got):\n%s", ci, i, al.OffsetNs, diff)
			}
			lt := mm.tracks[mm.path(t, wantRoots[ci], name)]
			if note := fmt.Sprintf("CLOCK_REALTIME = globaltimer %+d ns, within ±%d ns", al.OffsetNs, al.UncertaintyNs); !strings.Contains(lt.GetDescription(), note) {
				t.Errorf("capture %d launch %d: description %q lacks %q", ci, i, lt.GetDescription(), note)
			}
		}
	}
	// The two captures' first events are as far apart as their host clocks
	// say, not as their globaltimers do.
	first := func(root string) uint64 {
		evs := launchEvents(mm, mm.path(t, root, "launch 0 · k0"), 0)
		ts := evs[0].TS
		for _, e := range evs {
			ts = min(ts, e.TS)
		}
		return ts
	}
	if d := int64(first(wantRoots[1]) - first(wantRoots[0])); d < 123_456_789_000-1_000_000 || d > 123_456_789_000+1_000_000 {
		t.Errorf("capture 1 starts %d ns after capture 0, want about 123456789000", d)
	}
}

// TestExportMergedRefusesNoHostClock: a capture without host clocks cannot
// be merged with another; alone it is written on its GPU's timeline.
func TestExportMergedRefusesNoHostClock(t *testing.T) {
	a := mergeCapture(t, 1, &trace.Process{PID: 1, Rank: -1}, "GPU-a", 1_765_000_000_000_000_000)
	bare := mergeCapture(t, 1, nil, "GPU-b", 0)
	err := ExportMerged(&bytes.Buffer{}, []*trace.Capture{a, bare}, Options{})
	if !errors.Is(err, trace.ErrNoHostClock) || !strings.Contains(err.Error(), bare.Path()) {
		t.Errorf("merge with a capture lacking host clocks: %v; want ErrNoHostClock naming %s", err, bare.Path())
	}
	alone := resolve(t, readPackets(t, exportBytes(t, func(w *bytes.Buffer) error { return ExportMerged(w, []*trace.Capture{bare}, Options{}) })))
	single := resolve(t, readPackets(t, exportBytes(t, func(w *bytes.Buffer) error { return ExportCapture(w, bare, Options{}) })))
	roots := alone.childNames(0)
	if len(roots) != 1 || roots[0] != "emu.iket · emulated GPU-b" {
		t.Fatalf("top-level tracks %q, want the capture's file and GPU", roots)
	}
	want := launchEvents(single, single.path(t, "GPU · emulated", "launch 0 · k0"), 0)
	if diff := cmp.Diff(want, launchEvents(alone, alone.path(t, roots[0], "launch 0 · k0"), 0)); diff != "" {
		t.Errorf("a lone capture without host clocks is not on its GPU's timeline (-want +got):\n%s", diff)
	}
}
