package trace_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/trace"
)

// TestRoleSurvivesWrap: a wrapped buffer loses the ROLE record, and the
// header's role bits still name the warp's role.
func TestRoleSurvivesWrap(t *testing.T) {
	for _, tt := range []struct {
		name         string
		noHeaderRole bool
		want         string
	}{
		{"header role", false, "consumer"},
		{"no header role", true, "#0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := &emu.Launch{
				Kernel: "k", Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{32, 1, 1},
				Capacity: 4, Mode: trace.ModeWrap,
				Names: emu.MustNames("ROLE producer", "ROLE consumer", "RANGE work"),
			}
			w := l.Warp([3]uint32{0, 0, 0}, 0)
			w.Role("consumer", 1000)
			for i := uint64(0); i < 8; i++ {
				w.Push("work", uint16(i), 2000+100*i).Pop(2050 + 100*i)
			}
			w.NoHeaderRole = tt.noHeaderRole
			b, err := l.Capture()
			if err != nil {
				t.Fatal(err)
			}
			c, err := trace.Read(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			d, err := trace.NewDecoder(c.Launch(0), trace.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got trace.Warp
			if err := d.Next(&got); err != nil {
				t.Fatal(err)
			}
			if got.Dropped != 13 || got.Stored != 4 {
				t.Errorf("stored %d dropped %d, want 4 and 13 (the ROLE record is among the lost)", got.Stored, got.Dropped)
			}
			if role := c.Meta.Launches[0].NameText(got.Role); role != tt.want {
				t.Errorf("role %q, want %q", role, tt.want)
			}
			if err := d.Next(&got); !errors.Is(err, io.EOF) {
				t.Errorf("second Next: %v, want io.EOF", err)
			}
		})
	}
}
