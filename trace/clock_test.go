package trace_test

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/trace"
)

// TestClockFitAccuracy: SMs with different clock rates and offsets, a
// globaltimer quantised to 32 ns (1 us on one SM) and anchors read up to a
// cycle off the tick. Over a span of ~0.2 s every event, rounded to whole
// ns, must land within 1 ns of the emulated true time.
func TestClockFitAccuracy(t *testing.T) {
	clocks := map[uint32]emu.Clock{
		0: {MHz: 1980, Cycle0: 7_000_000_000_000, Ns0: emu.DefaultNs0, TickNs: 32, JitterCycles: 1},
		1: {MHz: 1755, Cycle0: 123_456_789, Ns0: emu.DefaultNs0 + 5, TickNs: 32, JitterCycles: 1},
		2: {MHz: 1410.5, Cycle0: 1 << 40, Ns0: emu.DefaultNs0 - 1_000_017, TickNs: 32, JitterCycles: 1},
		3: {MHz: 1095, Cycle0: 99, Ns0: 1 << 40, TickNs: 1024},
	}
	const ctas, warpsPerCTA = 16, 4
	l := &emu.Launch{Kernel: "k", Grid: [3]uint32{ctas, 1, 1}, Block: [3]uint32{32 * warpsPerCTA, 1, 1},
		Capacity: 64, Names: emu.MustNames("RANGE a"), SMs: 4, Clocks: clocks}
	// Warps start across ~0.2 s and each runs a few ms: a long span.
	for cta := uint32(0); cta < ctas; cta++ {
		for wi := uint32(0); wi < warpsPerCTA; wi++ {
			w := l.Warp([3]uint32{cta, 0, 0}, wi)
			ck := l.Clock(w.SM)
			c := ck.Cycle0 + uint64(cta)*20_000_000 + uint64(wi)*777_777 + 50_000
			for i := 0; i < 8; i++ {
				w.Push("a", uint16(i), c).Pop(c + 300_001)
				c += 1_000_003
			}
		}
	}
	c := emu.MustRead(t, l)
	ws, d := decodeAll(t, c, 0, trace.Options{Strict: true})
	fits := d.Clocks()
	if len(fits) != 4 {
		t.Fatalf("%d fits, want 4", len(fits))
	}
	for i, f := range fits {
		ck := clocks[uint32(i)]
		if f.SM != uint32(i) || f.Fallback != "" || f.Points != 2*ctas*warpsPerCTA/4 {
			t.Errorf("fit %d: %+v", i, f)
		}
		if rel := math.Abs(f.MHz-ck.MHz) / ck.MHz; rel > 1e-6 {
			t.Errorf("sm %d: %.6f MHz, want %.6f", i, f.MHz, ck.MHz)
		}
		if f.ResidualMaxNs > 10 || f.ResidualRMSNs > f.ResidualMaxNs {
			t.Errorf("sm %d residuals rms %g max %g", i, f.ResidualRMSNs, f.ResidualMaxNs)
		}
	}
	worst := make([]float64, len(clocks))
	for _, w := range ws {
		ck := clocks[w.SM]
		for _, e := range w.Events {
			whole, frac := ck.NsAt(e.Cycles())
			err := math.Abs(float64(e.Time()-whole) - frac)
			worst[w.SM] = max(worst[w.SM], err)
		}
	}
	for sm, e := range worst {
		if e > 1 {
			t.Errorf("sm %d: worst event time error %.3f ns, want <= 1", sm, e)
		}
	}
	t.Logf("worst event time error per SM (ns): %.3f", worst)
}

func TestClockFallback(t *testing.T) {
	tests := []struct {
		name      string
		sms       uint32  // SMs used by 1-warp CTAs; SM 0 gets a single anchor
		mhz0      float64 // else SM 0's clock, its warp finished: a slope no SM has
		device    bool
		wantNs    float64
		wantWhy   string
		allSingle bool
	}{
		{name: "median of other SMs", sms: 4, wantNs: 1000.0 / 1500, wantWhy: "single distinct anchor: used median slope of 3 other SMs"},
		{name: "device clock", sms: 1, device: true, wantNs: 1000.0 / 1980, wantWhy: "single distinct anchor: used the device's maximum SM clock, 1980 MHz"},
		{name: "a clock too slow", sms: 4, mhz0: 1e-4, wantNs: 1000.0 / 1500, wantWhy: "fitted slope 1e+07 ns/cycle (0.0001 MHz) is no SM clock: corrupt anchors: used median slope of 3 other SMs"},
		{name: "a clock too fast", sms: 4, mhz0: 2e5, wantNs: 1000.0 / 1500, wantWhy: "fitted slope 0.005 ns/cycle (2e+05 MHz) is no SM clock: corrupt anchors: used median slope of 3 other SMs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clocks := map[uint32]emu.Clock{}
			for sm := uint32(0); sm < tt.sms; sm++ {
				clocks[sm] = emu.Clock{MHz: 1500, Cycle0: 1e9 * uint64(sm+1), Ns0: emu.DefaultNs0}
			}
			if tt.mhz0 > 0 {
				clocks[0] = emu.Clock{MHz: tt.mhz0, Cycle0: 1e9, Ns0: emu.DefaultNs0, TickNs: 1}
			}
			l := &emu.Launch{Kernel: "k", Grid: [3]uint32{tt.sms, 1, 1}, Block: [3]uint32{32, 1, 1},
				Capacity: 8, Names: emu.MustNames("RANGE a"), SMs: tt.sms, Clocks: clocks}
			for cta := uint32(0); cta < tt.sms; cta++ {
				w := l.Warp([3]uint32{cta, 0, 0}, 0)
				c0 := clocks[cta].Cycle0 + 10_000
				w.Push("a", 0, c0).Pop(c0 + 5000)
				if cta == 0 && tt.mhz0 == 0 {
					w.Unfinished = true // one anchor only
				}
			}
			c := emu.MustRead(t, l)
			if !tt.device {
				c.Meta.Device = nil
			}
			_, d := decodeAll(t, c, 0, trace.Options{})
			f := d.Clock(0)
			if f == nil || f.Points != 1+btoi(tt.mhz0 > 0) || f.Fallback != tt.wantWhy || math.Abs(f.NsPerCycle-tt.wantNs) > 1e-12 {
				t.Fatalf("fit %+v, want %g ns/cycle because %q", f, tt.wantNs, tt.wantWhy)
			}
			if d.Clock(99) != nil {
				t.Error("fit for an SM never seen")
			}
		})
	}
	// No device, no other SM: 1 ns/cycle.
	l := &emu.Launch{Kernel: "k", Block: [3]uint32{32, 1, 1}, Capacity: 8, Names: emu.MustNames("RANGE a")}
	w := l.Warp([3]uint32{}, 0).Push("a", 0, 1e9)
	w.Unfinished = true
	c := emu.MustRead(t, l)
	c.Meta.Device = nil
	_, d := decodeAll(t, c, 0, trace.Options{})
	if f := d.Clock(0); f.NsPerCycle != 1 || !strings.Contains(f.Fallback, "1 ns/cycle") {
		t.Errorf("fit %+v", f)
	}
}

func TestClockNsRoundTrip(t *testing.T) {
	f := trace.ClockFit{RefCycles: 1 << 41, RefNs: 1 << 60, NsPerCycle: 0.505, OffsetNs: 0.25}
	for _, dc := range []int64{-1e12, -5, 0, 1, 12345, 4e12} {
		c := uint64(int64(f.RefCycles) + dc)
		ns := f.Ns(c)
		want := f.RefNs + int64(math.Floor(0.25+0.505*float64(dc)+0.5))
		if ns != want {
			t.Errorf("Ns(%d) = %d, want %d", c, ns, want)
		}
		if back := f.Cycles(ns); math.Abs(float64(int64(back-c))) > 2 {
			t.Errorf("Cycles(Ns(%d)) = %d", c, back)
		}
	}
}

func TestCorruptCaptures(t *testing.T) {
	good, c := pcCapture(t, emu.PCConfig{CTAs: 1, Stages: 1})
	metaEnd := 24 + int(le64(good[16:]))
	off := c.Meta.Launches[0].Offset
	tests := []struct {
		name string
		data func() []byte
		want string
	}{
		{"empty", func() []byte { return nil }, "offset 0: file is 0 bytes, shorter than the 24-byte header: not an iket capture"},
		{"bad magic", func() []byte { b := clone(good); b[0] = 'X'; return b }, `offset 0: magic "XKETCAP\x00", want "IKETCAP\x00": not an iket capture`},
		{"version", func() []byte { b := clone(good); b[8] = 9; return b }, "offset 8: format version 9, this iket reads versions 1 to 3"},
		{"version 0", func() []byte { b := clone(good); b[8] = 0; return b }, "offset 8: format version 0, this iket reads versions 1 to 3"},
		{"versions disagree", func() []byte { b := clone(good); b[12] = 1; return b }, "offset 24: metadata version 3, but the file header says record format 1"},
		{"meta length", func() []byte { b := clone(good); b[16] = 0xff; b[17] = 0xff; b[18] = 0xff; return b }, "offset 16: metadata length"},
		{"bad json", func() []byte { b := clone(good); b[24] = '['; return b }, "offset 24: metadata: invalid character"},
		{"truncated json", func() []byte { b := clone(good); b[metaEnd-1] = ' '; return b }, "offset 24: metadata: unexpected EOF"},
		{"truncated buffers", func() []byte { return good[:len(good)-8] }, "but its checksum table ends at offset"},
		{"bad offset", func() []byte {
			// Same digit count keeps the metadata length: the largest
			// multiple of 8 with as many digits runs past the end.
			d := len(itoa(off))
			far := int64(math.Pow10(d)) - 8
			return []byte(strings.Replace(string(good), `"offset":`+itoa(off), `"offset":`+itoa(far), 1))
		}, "run past the end of the file"},
		{"unaligned offset", func() []byte {
			return []byte(strings.Replace(string(good), `"offset":`+itoa(off), `"offset":`+itoa(off+3), 1))
		}, "offset: " + itoa(off+3) + " is not a non-negative multiple of 8"},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.data()
			_, err := emu.Read(b)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Read error %v, want one containing %q", err, tt.want)
			}
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".iket")
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = trace.Open(path)
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Open error %v, want one naming %s and containing %q", err, path, tt.want)
			}
		})
	}
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

func le64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
