package trace_test

import (
	"fmt"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/trace"
)

// samePairing decodes every launch of c twice, once pairing on the fast
// loop where it can and once on the general path only, and fails when a
// warp, an error or the summary differs.
func samePairing(t *testing.T, c *trace.Capture) {
	t.Helper()
	for i := range c.NumLaunches() {
		for _, opt := range []trace.Options{{}, {Strict: true, TrimCommonWindow: true}} {
			fast, err := trace.NewDecoder(c.Launch(i), opt)
			if err != nil {
				continue
			}
			general, err := trace.NewDecoder(c.Launch(i), opt)
			if err != nil {
				t.Fatalf("second NewDecoder: %v", err)
			}
			trace.GeneralPairingOnly(general)
			var wf, wg trace.Warp
			for {
				ef, eg := fast.Next(&wf), general.Next(&wg)
				if fmt.Sprint(ef) != fmt.Sprint(eg) {
					t.Fatalf("launch %d %+v: fast pairing returned %v, general %v", i, opt, ef, eg)
				}
				if ef == io.EOF {
					break
				}
				if diff := cmp.Diff(wf, wg, cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("launch %d %+v warp %d: fast and general pairing differ (-fast +general):\n%s", i, opt, wf.Slot, diff)
				}
			}
			if diff := cmp.Diff(fast.Summary(), general.Summary()); diff != "" {
				t.Fatalf("launch %d %+v: summaries differ (-fast +general):\n%s", i, opt, diff)
			}
		}
	}
}

// TestSamePairing compares the two pairing paths on the emulator's
// launches; FuzzDecode and TestScripts compare them on their inputs too.
func TestSamePairing(t *testing.T) {
	pc, err := emu.ProducerConsumer(emu.PCConfig{CTAs: 3, Stages: 5})
	if err != nil {
		t.Fatal(err)
	}
	samePairing(t, emu.MustRead(t, synthetic(64, 512), pc))
}

// BenchmarkPairing decodes and strictly validates the 2M-event capture of
// BenchmarkDecodeValidate with the fast pairing loop (as the decoder
// always does) and with the general path alone, to show what the second
// copy of the pairing logic buys.
func BenchmarkPairing(b *testing.B) {
	const warps, capacity = 512, 4096
	c := emu.OpenTemp(b, synthetic(warps, capacity))
	l := c.Launch(0)
	for _, general := range []bool{false, true} {
		name := "fast"
		if general {
			name = "general"
		}
		b.Run(name, func(b *testing.B) {
			var prep func(*trace.Decoder)
			if general {
				prep = trace.GeneralPairingOnly
			}
			benchDecode(b, l, warps*capacity, prep)
		})
	}
}
