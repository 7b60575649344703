package builtin

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// calibrateOutput returns a correct calibrate output: round r of every warp
// released at 1e9 + r*10000 ns plus a per-warp skew of a few ticks.
func calibrateOutput(t *testing.T, ctas, warps, rounds int) []byte {
	t.Helper()
	b := make([]byte, 8*ctas*warps*rounds)
	for c := range ctas {
		for w := range warps {
			for r := range rounds {
				v := uint64(1_000_000_000 + r*10_000 + (c*warps+w)%3*32)
				binary.LittleEndian.PutUint64(b[8*((c*warps+w)*rounds+r):], v)
			}
		}
	}
	return b
}

func TestVerifyCalibrate(t *testing.T) {
	const ctas, warps, rounds = 3, 4, 5
	set := func(b []byte, c, w, r int, v uint64) {
		binary.LittleEndian.PutUint64(b[8*((c*warps+w)*rounds+r):], v)
	}
	tests := []struct {
		name   string
		edit   func(b []byte) []byte
		failed uint32
		want   string // "" = no error
		is     error
	}{
		{name: "good", edit: func(b []byte) []byte { return b }},
		{name: "flag", edit: func(b []byte) []byte { return b }, failed: 1, want: "failure flag 1", is: ErrBarrierGaveUp},
		{name: "short", edit: func(b []byte) []byte { return b[:len(b)-8] }, want: "bytes, want 480"},
		{name: "poison", edit: func(b []byte) []byte {
			set(b, 2, 1, 3, ^uint64(0))
			set(b, 2, 3, 4, ^uint64(0))
			return b
		}, want: "CTA 2 warp 1 round 3: not written (0xffffffffffffffff); 2 of 60 values unwritten"},
		{name: "backwards", edit: func(b []byte) []byte {
			set(b, 1, 0, 2, 999_000_000)
			return b
		}, want: "CTA 1 warp 0 round 2: globaltimer 999000000"},
		{name: "barrier broken", edit: func(b []byte) []byte {
			for c := range ctas {
				for w := range warps {
					set(b, c, w, 4, uint64(1_000_000_000+3*10_000+100+w)) // round 4 overlaps round 3
				}
			}
			set(b, 1, 2, 3, 1_000_000_000+3*10_000+5000) // a late round-3 release
			set(b, 1, 2, 4, 1_000_000_000+3*10_000+6000)
			return b
		}, want: "round 4: earliest release"},
		{name: "within slack", edit: func(b []byte) []byte {
			set(b, 0, 0, 3, 1_000_000_000+4*10_000+500) // a round-3 release 500 ns after round 4's earliest
			set(b, 0, 0, 4, 1_000_000_000+4*10_000+600)
			return b
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := verifyCalibrate(tc.edit(calibrateOutput(t, ctas, warps, rounds)), tc.failed, ctas, warps, rounds)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("verifyCalibrate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("verifyCalibrate = %v, want an error containing %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
		})
	}
}

func TestCalibrateRegistered(t *testing.T) {
	p, err := Lookup("calibrate")
	if err != nil {
		t.Fatal(err)
	}
	cfg := p.ConfigFor(132)
	if cfg.Grid != [3]uint32{132, 1, 1} || cfg.Block != [3]uint32{128, 1, 1} || cfg.Kernel != "calibrate" {
		t.Errorf("ConfigFor(132) = %+v", cfg)
	}
	src, err := p.Source()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"extern \"C\" __global__", "calibrate(", "X(MARK, after_barrier)", "X(RANGE, barrier_wait)"} {
		if !strings.Contains(string(src.Data), want) {
			t.Errorf("calibrate.cu lacks %q", want)
		}
	}
}
