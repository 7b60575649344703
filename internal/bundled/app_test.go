package bundled_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/iket-trace/iket/internal/bundled"
	"github.com/iket-trace/iket/trace"
)

// The captures `iket run -- CMD` recorded inside the example application on
// the H200 carry the process, the kernel's names and resources, and decode:
// every range whole, the producer warps' lane-0 end mark included.
func TestAppCaptures(t *testing.T) {
	for _, tc := range []struct {
		name, exe  string
		occurrence uint64
	}{
		{bundled.AppCppName, "/tmp/iket-app/app", 1},
		{bundled.AppPyName, "python3", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := bundled.Read(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if !c.Checked() {
				t.Error("capture has no checksums")
			}
			p := c.Meta.Process
			if p == nil || p.PID <= 0 || p.Rank != -1 || !strings.Contains(p.Exe, tc.exe) {
				t.Errorf("process %+v, want a pid, rank -1 and an executable like %q", p, tc.exe)
			}
			if d := c.Meta.Device; d == nil || !strings.Contains(d.Name, "H200") || d.SMs != 132 || !strings.HasPrefix(d.UUID, "GPU-") {
				t.Errorf("device %+v", d)
			}
			if c.NumLaunches() != 1 {
				t.Fatalf("%d launches, want 1", c.NumLaunches())
			}
			l := c.Launch(0).Meta
			if l.Kernel != "app::pipeline<4, 2>" || l.Mangled != "_ZN3app8pipelineILi4ELi2EEEvPKfPfi" || l.Occurrence != tc.occurrence {
				t.Errorf("kernel %q (%q), occurrence %d", l.Kernel, l.Mangled, l.Occurrence)
			}
			if r := l.Resources; r == nil || r.Registers == 0 || r.StaticSharedBytes < 16384 || r.MaxActiveCTAsPerSM == 0 {
				t.Errorf("resources %+v", r)
			}
			if h := l.HostClock; h == nil || h.MonotonicAfter <= h.MonotonicBefore || h.RealtimeAfter <= h.RealtimeBefore {
				t.Errorf("host clocks %+v", h)
			}
			d, err := trace.NewDecoder(c.Launch(0), trace.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var w trace.Warp
			ranges := map[string]int{}
			ahead := 0
			for {
				err := d.Next(&w)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				role := l.NameText(w.Role)
				if w.LanesDiverged {
					t.Errorf("warp %d (%s): lanes diverged with a record written twice", w.Slot, role)
				}
				if w.LanesAhead {
					ahead++
					if role != "producer" {
						t.Errorf("warp %d (%s) has lanes ahead", w.Slot, role)
					}
				}
				for _, r := range w.Ranges {
					ranges[role+":"+l.NameText(r.Name)]++
				}
			}
			// 4 CTAs, 16 tiles: the producer loads each tile and waits for a
			// free slot from the fifth on; two consumer warps each wait for
			// and compute every tile. The producer warp's lane 0 records
			// the end mark alone after the rest, which record format 3
			// stores as any other event: no warp has lanes ahead.
			want := map[string]int{"producer:load": 64, "producer:wait_free": 48, "consumer:wait_full": 128, "consumer:compute": 128}
			if diff := cmp.Diff(want, ranges); diff != "" || ahead != 0 {
				t.Errorf("ranges (-want +got):\n%s%d producer warps with lanes ahead, want 0", diff, ahead)
			}
			if v := c.Meta.Version; v != 3 {
				t.Errorf("record format %d, want 3", v)
			}
		})
	}
}
