package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/iket-trace/iket/internal/emu"
)

// pcCapture writes an emulated producer/consumer capture whose computes
// last compute cycles.
func pcCapture(t *testing.T, compute uint64) string {
	t.Helper()
	l, err := emu.ProducerConsumer(emu.PCConfig{CTAs: 3, Stages: 8, LoadCycles: 2000, ComputeCycles: compute, Overlap: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Capture()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "pc.iket")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDiff(t *testing.T) {
	base, slow := pcCapture(t, 1000), pcCapture(t, 2000)
	code, out, errs := runCLI(t, "diff", "--json", base, slow)
	if code != 0 {
		t.Fatalf("diff: exit %d\n%s%s", code, out, errs)
	}
	var d diffJSON
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	type row struct {
		Series          string
		Base, New, P50  float64
		HasBase, HasNew bool
	}
	var got []row
	for _, r := range d.Ranges {
		g := row{Series: r.Role + ":" + r.Range, HasBase: r.Base != nil, HasNew: r.New != nil}
		if r.Base != nil && r.New != nil {
			g.Base, g.New, g.P50 = float64(r.Base.Count), float64(r.New.Count), *r.Ratio.P50
		}
		got = append(got, g)
	}
	want := []row{
		{Series: "producer:load", Base: 24, New: 24, P50: 1, HasBase: true, HasNew: true},
		{Series: "consumer:compute", Base: 24, New: 24, P50: 2, HasBase: true, HasNew: true},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0.002, 0)); diff != "" {
		t.Errorf("diff rows (-want +got):\n%s", diff)
	}
	found := false
	for _, o := range d.Overlaps {
		if o.X == "producer:load" && o.Y == "consumer:compute" && o.Base != nil && o.New != nil && o.Change != nil {
			found = true
		}
	}
	if !found {
		t.Errorf("no overlap(producer:load, consumer:compute) in %+v", d.Overlaps)
	}
	code, out, _ = runCLI(t, "diff", base, slow)
	if code != 0 || !strings.Contains(out, "2.000x") || !strings.Contains(out, "1.000x") {
		t.Errorf("diff table: exit %d\n%s", code, out)
	}
	if code, _, _ := runCLI(t, "diff", base, "/nonexistent.iket"); code != exitError {
		t.Errorf("diff with a missing capture: exit %d, want %d", code, exitError)
	}
}
