package report

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/iket-trace/iket/internal/bundled"
)

// TestIdleWarpsFolded: consecutive warps of one role in one CTA that
// recorded nothing but their role share one timeline row; a warp that
// dropped events, did not finish or has a range keeps its own.
func TestIdleWarpsFolded(t *testing.T) {
	rng := []RangeView{{Name: "load", Start: 10, End: 20}}
	w := func(cta uint64, warp uint32, role string, ranges []RangeView) WarpView {
		return WarpView{Slot: cta*8 + uint64(warp), CTALinear: cta, CTA: [3]uint32{uint32(cta), 0, 0}, Warp: warp, Role: role,
			Started: true, Finished: true, First: 1, Last: 100 + int64(warp), Ranges: ranges}
	}
	unfinished := w(1, 3, "producer", nil)
	unfinished.Finished = false
	in := &Input{Warps: []WarpView{
		w(0, 0, "producer", rng), w(0, 1, "producer", nil), w(0, 2, "producer", nil), w(0, 3, "producer", nil),
		w(0, 4, "consumer", rng), w(0, 5, "consumer", nil),
		w(1, 0, "producer", rng), w(1, 1, "producer", nil), w(1, 2, "producer", nil), unfinished,
	}}
	p := extract(t, render(t, in))
	type row struct {
		Warp  uint32
		Idle  int
		Warps []uint32
	}
	var got []row
	for _, pw := range p.Warps {
		got = append(got, row{pw.Warp, pw.Idle, pw.IdleWarps})
	}
	want := []row{
		{0, 0, nil}, {1, 3, []uint32{1, 2, 3}}, // CTA 0's producers
		{0, 0, nil}, {1, 2, []uint32{1, 2}}, {3, 0, nil}, // CTA 1's: the unfinished warp is not idle
		{4, 0, nil}, {5, 1, []uint32{5}}, // CTA 0's consumers
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if p.Warps[1].Last != 103-1 {
		t.Errorf("folded row spans to %d, want the last idle warp's end %d", p.Warps[1].Last, 103-1)
	}
}

// TestGEMMReportIdle renders the bundled GEMM capture's report in headless
// Chromium: its 96 idle producer warps (3 per CTA) fold into 32 rows, and
// the page still counts 384 warps.
func TestGEMMReportIdle(t *testing.T) {
	bin := needChromium(t)
	c, err := bundled.Read(bundled.GEMMName)
	if err != nil {
		t.Fatal(err)
	}
	in := synthInput(t, c, Limits{})
	page := render(t, in)
	p := extract(t, page)
	folded := 0
	for _, pw := range p.Warps {
		if pw.Idle > 0 {
			folded++
			if pw.Idle != 3 {
				t.Errorf("CTA %d: %d idle warps in a row, want 3", pw.CTALinear, pw.Idle)
			}
		}
	}
	if folded != 32 || len(p.Warps) != 384-96+32 {
		t.Errorf("%d rows, %d of them folded, want %d and 32", len(p.Warps), folded, 384-96+32)
	}
	file := filepath.Join(t.TempDir(), "gemm.html")
	if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, err := headless(bin, file, t.TempDir(), "--dump-dom")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`<body[^>]* data-rendered="384 warps"`).Match(dom) {
		t.Errorf("the page does not count 384 warps:\n%.300s", regexp.MustCompile(`<body[^>]*>`).Find(dom))
	}
	if !bytes.Contains(dom, []byte("96 idle (no event but their role) folded")) {
		t.Errorf("the summary does not mention the 96 folded idle warps")
	}
}
