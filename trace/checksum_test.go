package trace_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/internal/raw"
	"github.com/iket-trace/iket/trace"
)

// pcCapture returns the bytes of an emulated producer/consumer capture and
// the capture read from them.
func pcCapture(t *testing.T, cfg emu.PCConfig) ([]byte, *trace.Capture) {
	t.Helper()
	l, err := emu.ProducerConsumer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	good, err := l.Capture()
	if err != nil {
		t.Fatal(err)
	}
	c, err := emu.Read(good)
	if err != nil {
		t.Fatal(err)
	}
	return good, c
}

func TestChecksums(t *testing.T) {
	good, c := pcCapture(t, emu.PCConfig{CTAs: 2, Stages: 2})
	if !c.Checked() || c.FileVersion() != trace.FileVersion {
		t.Fatalf("new capture: Checked %v, FileVersion %d", c.Checked(), c.FileVersion())
	}
	m := c.Launch(0).Meta
	tests := []struct {
		name string
		off  int64
		want string
	}{
		{"warp 1", m.Offset + m.Stride() + 70, "launch 0 warp 1 ("},
		{"last warp", m.Offset + m.Size() - 1, "launch 0 warp 3 ("},
		{"table", int64(len(good) - 10), "checksum table ("},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := append([]byte(nil), good...)
			b[tt.off] ^= 0x40
			_, err := emu.Read(b)
			if !errors.Is(err, trace.ErrChecksum) {
				t.Fatalf("Read: %v, want a checksum error", err)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Read: %v, want %q", err, tt.want)
			}
		})
	}
	t.Run("junk after", func(t *testing.T) {
		_, err := emu.Read(append(append([]byte(nil), good...), 0))
		if err == nil || !strings.Contains(err.Error(), "junk or truncation") {
			t.Fatalf("Read: %v", err)
		}
	})
}

// TestOlderCaptures: H200 captures of earlier formats (file version 2,
// without checksums; record formats 1 and 2, kept in testdata/older from
// the bundled set they were until format 3) still read and validate
// strictly, with every event of their warps.
func TestOlderCaptures(t *testing.T) {
	for _, tt := range []struct {
		name          string
		format        int
		warps, events uint64
	}{
		{"warp_roles_format1.iket", 1, 2112, 12672},
		{"gemm_format2.iket", 2, 384, 10400},
		{"pipeline_format1.iket", 1, 660, 11220},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", "older", tt.name))
		if err != nil {
			t.Fatal(err)
		}
		c, err := emu.Read(b)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if c.Checked() || c.Meta.Version != tt.format {
			t.Errorf("%s: checked %v, record format %d; want an unchecked capture of format %d", tt.name, c.Checked(), c.Meta.Version, tt.format)
		}
		s, err := trace.Validate(c.Launch(0), trace.Options{Strict: true})
		if err != nil || s.Warps != tt.warps || s.Stored != tt.events || s.Dropped != 0 {
			t.Errorf("%s: %d warps, %d events, %d dropped, %v; want %d, %d, 0, no error", tt.name, s.Warps, s.Stored, s.Dropped, err, tt.warps, tt.events)
		}
	}
}

func TestStrictMetadata(t *testing.T) {
	good, c := pcCapture(t, emu.PCConfig{CTAs: 1, Stages: 1})
	m := c.Launch(0).Meta
	meta := string(good[24 : 24+le64(good[16:])])
	tests := []struct {
		name, old, new, want string
	}{
		{"duplicate key", `"warps":2,`, `"warps":2,"warps":2,`, `launches[0]: duplicate key "warps"`},
		{"case variant", `"warps":2,`, `"WARPS":2,"warps":2,`, `launches[0]: key "WARPS": iket's keys are lower case`},
		{"unknown key", `"warps":2,`, `"warps":2,"extra":1,`, `unknown field "extra"`},
		{"too few warps", `"warps":2,`, `"warps":1,`, `warps: 1 slots, but grid [1 1 1] of 1 CTAs x 2 warps per CTA needs 2`},
		{"warps per cta", `"warps_per_cta":2,`, `"warps_per_cta":3,`, `warps_per_cta: 3, but block [64 1 1] has 64 threads: 2 warps`},
		{"long name", `"name":"producer"`, `"name":"` + strings.Repeat("p", 300) + `"`, `names[0]: name of 300 bytes, want 1 to 256`},
		{"repeated name", `"name":"consumer"`, `"name":"producer"`, `names[1]: "producer" repeats names[0]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(meta, tt.old) {
				t.Fatalf("metadata lacks %q", tt.old)
			}
			bad := strings.Replace(meta, tt.old, tt.new, 1)
			// Keep the buffers where the metadata says they are.
			bad = strings.Replace(bad, fmt.Sprintf(`"offset":%d`, m.Offset), fmt.Sprintf(`"offset":%d`, (24+len(bad)+7)&^7), 1)
			b := emu.RawCapture(raw.FormatVersion, []byte(bad), good[m.Offset:m.Offset+m.Size()], m.Warps, m.Stride())
			_, err := emu.Read(b)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Read: %v, want %q", err, tt.want)
			}
		})
	}
}
