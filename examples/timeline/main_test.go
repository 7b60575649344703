package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iket-trace/iket/internal/bundled"
)

// TestTimelineOnH200Capture runs the example on the bundled H200 capture.
func TestTimelineOnH200Capture(t *testing.T) {
	b, err := bundled.WarpRolesH200()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "c.iket")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(p, 1, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"cta 0 warp 0 (sm ", "producer): 6 events, 0 dropped", "cta 0 warp 1", "consumer): 6 events", "producer_load", "consumer_compute", "mark kernel_start"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "\ncta ") + 1; n != 2 {
		t.Errorf("%d warps printed for one CTA, want 2:\n%s", n, got)
	}
}
