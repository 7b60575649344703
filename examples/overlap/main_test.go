package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iket-trace/iket/internal/bundled"
	"github.com/iket-trace/iket/perfetto"
)

func TestOverlapOnGEMMCapture(t *testing.T) {
	b, err := bundled.Capture(bundled.GEMMName)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "gemm.iket")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	pf := filepath.Join(dir, "gemm.pftrace")
	var out bytes.Buffer
	if err := run(p, "compute", "issue", pf, &out); err != nil {
		t.Fatal(err)
	}
	if want := "gemm: compute overlaps issue on another warp for 22.5% of its time (lowest CTA 22.2%)"; !strings.Contains(out.String(), want) {
		t.Errorf("got %q, want %q", out.String(), want)
	}
	f, err := os.Open(pf)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := perfetto.CheckValid(f); err != nil {
		t.Error(err)
	}
	if err := run(p, "compute", "nonexistent", "", &out); err == nil || !strings.Contains(err.Error(), "nonexistent") {
		t.Errorf("unknown range: err %v", err)
	}
}
