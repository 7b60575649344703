package perfetto

import (
	"bytes"
	"io"
	"testing"

	"github.com/iket-trace/iket/internal/bundled"
	"github.com/iket-trace/iket/trace"
)

// gemmCapture opens the bundled GEMM capture and counts its recorded
// events (the records its warps stored).
func gemmCapture(tb testing.TB) (*trace.Capture, int) {
	tb.Helper()
	c, err := bundled.Read(bundled.GEMMName)
	if err != nil {
		tb.Fatal(err)
	}
	return countStored(tb, c)
}

// countStored returns c and the number of records its warps stored.
func countStored(tb testing.TB, c *trace.Capture) (*trace.Capture, int) {
	tb.Helper()
	events := 0
	for i := range c.NumLaunches() {
		d, err := trace.NewDecoder(c.Launch(i), trace.Options{})
		if err != nil {
			tb.Fatal(err)
		}
		var wp trace.Warp
		for {
			err := d.Next(&wp)
			if err == io.EOF {
				break
			}
			if err != nil {
				tb.Fatal(err)
			}
			events += wp.Stored
		}
	}
	return c, events
}

// TestGEMMSize pins the size of iket export's default trace (Options{}) of
// the bundled GEMM capture: at most 24 bytes per recorded event, valid, with
// its 96 idle producer warps folded into one track per CTA.
func TestGEMMSize(t *testing.T) {
	c, events := gemmCapture(t)
	if events != 10400 {
		t.Fatalf("bundled GEMM capture: %d recorded events, want 10400", events)
	}
	var buf bytes.Buffer
	w := NewWriter(&buf, Options{})
	if err := exportWith(w, c); err != nil {
		t.Fatal(err)
	}
	if per := float64(buf.Len()) / float64(events); per > 24 {
		t.Errorf("default trace: %d bytes, %.2f per recorded event, want at most 24", buf.Len(), per)
	} else {
		t.Logf("default trace: %d bytes, %.2f per recorded event", buf.Len(), per)
	}
	if err := CheckValid(bytes.NewReader(buf.Bytes())); err != nil {
		t.Errorf("CheckValid: %v", err)
	}
	if st := w.Stats(); st.IdleWarps != 96 || st.Warps != 288 {
		t.Errorf("Stats: %d warps with tracks, %d idle, want 288 and 96", st.Warps, st.IdleWarps)
	}
	m := resolve(t, readPackets(t, buf.Bytes()))
	cta := m.path(t, "GPU · NVIDIA H200", "launch 0 · gemm", "SM 0")
	names := m.childNames(m.children[cta][0])
	if len(names) != 10 || names[1] != "3 idle producer warps" {
		t.Errorf("CTA's tracks %q, want warp 0, its 3 idle producer warps, then 8 warps", names)
	}
}
