package perfetto

import (
	"bytes"
	"strings"
	"testing"

	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/trace"
)

// TestExportLeavesOutDivergedWarps: a warp whose lanes disagreed and one of
// whose records appears twice (records were overwritten) gets no track and
// is named among the launch's problems; a warp whose lanes only ran ahead
// (no record twice) keeps its track.
func TestExportLeavesOutDivergedWarps(t *testing.T) {
	l := &emu.Launch{Kernel: "k", Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{96, 1, 1}, Capacity: 16,
		Names: emu.MustNames("ROLE producer", "ROLE consumer", "RANGE load", "MARK done")}
	over := l.Warp([3]uint32{}, 0).Role("producer", 1000).Push("load", 0, 1100).Push("load", 0, 1100).Pop(1200).Pop(1200)
	over.LanesDiverged = true
	ahead := l.Warp([3]uint32{}, 1).Role("consumer", 1000).Push("load", 0, 1100).Pop(1200).Mark("done", 0, 1300)
	ahead.LanesDiverged = true
	l.Warp([3]uint32{}, 2).Role("consumer", 1000).Push("load", 0, 1100).Pop(1200)
	leftOut, warps := exportProblems(t, l, "warp 0 (sm 0, cta 0,0,0, warp 0) left out")
	if leftOut != 1 || len(warps) != 2 || strings.Contains(strings.Join(warps, ","), "producer") {
		t.Errorf("%d problems naming warp 0, warp tracks %q; want 1 and the two consumers'", leftOut, warps)
	}
}

// TestExportLeavesOutSideLanes: a format-3 warp whose side events two lanes
// stored (their records may overwrite each other) gets no track and is
// named among the launch's problems, with the reason.
func TestExportLeavesOutSideLanes(t *testing.T) {
	leftOut, warps := exportProblems(t, sideLanesLaunch(), "warp 0 (sm 0, cta 0,0,0, warp 0) left out: 2 lanes stored side events")
	if leftOut != 1 || len(warps) != 1 {
		t.Errorf("%d problems naming warp 0, warp tracks %q; want 1 and 1", leftOut, warps)
	}
}

// sideLanesLaunch is a format-3 launch of two consumer warps: warp 0's side
// events were stored by two lanes (its records may overwrite each other),
// warp 1 recorded one load.
func sideLanesLaunch() *emu.Launch {
	l := &emu.Launch{Kernel: "k", Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{64, 1, 1}, Capacity: 16,
		Names: emu.MustNames("ROLE consumer", "RANGE load")}
	two := l.Warp([3]uint32{}, 0).Role("consumer", 1000).Push("load", 0, 1100).Pop(1200).Push("load", 1, 1300).Pop(1400)
	two.Side, two.SideLanes = []int{1, 2, 3, 4}, 2
	l.Warp([3]uint32{}, 1).Role("consumer", 1000).Push("load", 0, 1100).Pop(1200)
	return l
}

// emuCapture is l's capture, read.
func emuCapture(t *testing.T, l *emu.Launch) *trace.Capture {
	t.Helper()
	b, err := l.Capture()
	if err != nil {
		t.Fatal(err)
	}
	c, err := emu.Read(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// exportProblems exports l's capture and returns how many of the launch's
// problems hold detail, and the names of its warp tracks.
func exportProblems(t *testing.T, l *emu.Launch, detail string) (int, []string) {
	t.Helper()
	c := emuCapture(t, l)
	var out bytes.Buffer
	if err := ExportCapture(&out, c, Options{}); err != nil {
		t.Fatalf("export: %v", err)
	}
	m := resolve(t, readPackets(t, out.Bytes()))
	n := 0
	for _, evs := range m.events {
		for _, e := range evs {
			if d, _ := e.args["detail"].(string); e.name == "problem" && strings.Contains(d, detail) {
				n++
			}
		}
	}
	var warps []string
	for _, td := range m.tracks {
		if name := td.GetName(); strings.HasPrefix(name, "warp ") {
			warps = append(warps, name)
		}
	}
	return n, warps
}

// TestJSONLeavesOutSideLanes: the Chrome JSON export leaves the same warp
// out as the .pftrace does, and names it among the launch's problems.
func TestJSONLeavesOutSideLanes(t *testing.T) {
	c := emuCapture(t, sideLanesLaunch())
	var out bytes.Buffer
	if err := WriteJSON(&out, c); err != nil {
		t.Fatalf("json: %v", err)
	}
	s := out.String()
	if !strings.Contains(s, "warp 0 (sm 0, cta 0,0,0, warp 0) left out: 2 lanes stored side events") {
		t.Errorf("no problem naming warp 0 in %s", s)
	}
	if n := strings.Count(s, `"name":"load"`); n != 1 {
		t.Errorf("%d load slices, want 1 (warp 1's only): %s", n, s)
	}
}
