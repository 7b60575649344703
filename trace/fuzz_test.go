package trace_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/internal/raw"
	"github.com/iket-trace/iket/trace"
)

// drain decodes every launch of c under every option set; it must not panic.
func drain(t *testing.T, c *trace.Capture) {
	for i := 0; i < c.NumLaunches(); i++ {
		for _, opt := range []trace.Options{{}, {Strict: true, TrimCommonWindow: true}} {
			d, err := trace.NewDecoder(c.Launch(i), opt)
			if err != nil {
				continue
			}
			var w trace.Warp
			for {
				err := d.Next(&w)
				if err == io.EOF {
					break
				}
				var we *trace.WarpError
				if err != nil && !errors.As(err, &we) {
					t.Fatalf("Next: error %T %v is not a WarpError", err, err)
				}
				for _, v := range w.Violations {
					_ = v.Error()
				}
				for _, r := range w.Ranges {
					if r.End < r.Start && w.Finished {
						// Only corrupt clocks can do this; it must not panic.
						_ = r.Duration()
					}
				}
			}
			_ = d.Summary()
			_ = d.Err()
			_ = d.Clocks()
		}
	}
}

// FuzzRead parses arbitrary bytes as a capture and decodes what parses.
func FuzzRead(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := trace.Read(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			var fe *trace.FormatError
			if !errors.As(err, &fe) && !errors.Is(err, trace.ErrNotCapture) && !errors.Is(err, trace.ErrChecksum) {
				t.Fatalf("Read error %T %v is not a FormatError", err, err)
			}
			return
		}
		drain(t, c)
	})
}

// FuzzDecode takes arbitrary bytes as a mode byte (stop when even, wrap when
// odd) and the warp buffers of a launch with capacity 8 and a fixed name
// table, so the fuzzer works on headers and records directly.
func FuzzDecode(f *testing.F) {
	for _, seed := range decodeSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := decodeCapture(data)
		if err != nil {
			t.Fatalf("wrap fuzz input: %v", err)
		}
		drain(t, c)
		samePairing(t, c)
	})
}

const fuzzCapacity = 8

// decodeCapture wraps warp buffers in a capture of one-warp CTAs (see
// wrapWarps).
func decodeCapture(data []byte) (*trace.Capture, error) {
	return wrapWarps(data, 1, "RANGE a", "RANGE b", "MARK m", "ROLE r")
}

// wrapWarps wraps warp buffers in a capture of CTAs of perCTA warps with
// the given names: data[0] bit 0 selects wrap mode, bit 1 record format
// version 1, else bit 2 version 3 (side events in the tail word), else
// version 2; the rest are whole CTAs' warp slots of fuzzCapacity records.
func wrapWarps(data []byte, perCTA uint32, names ...string) (*trace.Capture, error) {
	mode, version := trace.ModeStop, 2
	if len(data) > 0 {
		if data[0]&1 == 1 {
			mode = trace.ModeWrap
		}
		switch {
		case data[0]&2 == 2:
			version = 1
		case data[0]&4 == 4:
			version = 3
		}
		data = data[1:]
	}
	st := raw.Stride(fuzzCapacity)
	ctas := int64(len(data)) / st / int64(perCTA)
	warps := ctas * int64(perCTA)
	meta := trace.Meta{Version: version, Launches: []trace.LaunchMeta{{
		Kernel: "fuzz", Grid: [3]uint32{uint32(ctas), 1, 1}, Block: [3]uint32{32 * perCTA, 1, 1}, WarpsPerCTA: perCTA,
		Warps: uint64(warps), Capacity: fuzzCapacity, Mode: mode, Names: emu.MustNames(names...),
	}}}
	var b bytes.Buffer
	if err := trace.WriteCapture(&b, &meta, []io.Reader{bytes.NewReader(data[:warps*st])}); err != nil {
		return nil, err
	}
	return emu.Read(b.Bytes())
}

// decodeSeeds are the warp buffers of small emulated launches.
func decodeSeeds(tb testing.TB) [][]byte {
	var seeds [][]byte
	for _, version := range []int{2, 1, 3} {
		for _, mode := range []trace.Mode{trace.ModeStop, trace.ModeWrap} {
			l := &emu.Launch{Kernel: "fuzz", Grid: [3]uint32{4, 1, 1}, Block: [3]uint32{32, 1, 1}, Capacity: fuzzCapacity,
				Mode: mode, Names: emu.MustNames("RANGE a", "RANGE b", "MARK m", "ROLE r"), Version: version}
			w0 := l.Warp([3]uint32{0, 0, 0}, 0).Role("r", 1e9).Push("a", 1, 1e9+10).Push("b", 2, 1e9+20)
			if version == 2 {
				w0.Next("a", 4, 1e9+25) // NEXT exists in version 2
			}
			w0.Pop(1e9+30).Pop(1e9+40).Mark("m", 3, 1e9+50)
			w := l.Warp([3]uint32{1, 0, 0}, 0).Start("a", 1, 1e9).Start("a", 1, 1e9+5).End("a", 1, 1e9+6)
			for i := 0; i < 12; i++ {
				w.Push("b", uint16(i), 1e9+100+uint64(i)*10).Pop(1e9 + 105 + uint64(i)*10)
			}
			u := l.Warp([3]uint32{2, 0, 0}, 0).Push("a", 0, 1e9).Pop(1e9 + 4_294_967_296)
			u.Unfinished = true
			// The exit flags: lanes that disagreed, a saturated count.
			x := l.Warp([3]uint32{3, 0, 0}, 0)
			for i := 0; i < 12; i++ {
				x.Push("a", uint16(i), 1e9+uint64(i)*10).Pop(1e9 + 5 + uint64(i)*10)
			}
			x.LanesDiverged, x.SaturateAt = version < 3, 10
			if version == 3 {
				// Side events: two of warp 1's pairs recorded without lane 0.
				w.Side = []int{3, 4, 9, 10}
			}
			sel := byte(0)
			if mode == trace.ModeWrap {
				sel = 1
			}
			switch version {
			case 1:
				sel |= 2
			case 3:
				sel |= 4
			}
			seeds = append(seeds, append([]byte{sel}, warpBuffers(tb, l)...))
		}
	}
	return seeds
}

// warpBuffers are the warp buffers of l's launch as its capture holds
// them.
func warpBuffers(tb testing.TB, l *emu.Launch) []byte {
	b, err := io.ReadAll(emu.MustRead(tb, l).Launch(0).SectionReader())
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// fuzzSeeds are whole emulated captures.
func fuzzSeeds(tb testing.TB) [][]byte {
	var seeds [][]byte
	for _, mode := range []trace.Mode{trace.ModeStop, trace.ModeWrap} {
		l, err := emu.ProducerConsumer(emu.PCConfig{CTAs: 2, Stages: 3, Capacity: 8, Mode: mode})
		if err != nil {
			tb.Fatal(err)
		}
		data, err := l.Capture()
		if err != nil {
			tb.Fatal(err)
		}
		seeds = append(seeds, data)
	}
	return seeds
}

// TestWriteFuzzCorpus writes the seeds as the committed corpus under
// testdata/fuzz when run with -update, and otherwise checks that it is
// there.
func TestWriteFuzzCorpus(t *testing.T) {
	for name, seeds := range map[string][][]byte{"FuzzRead": fuzzSeeds(t), "FuzzDecode": decodeSeeds(t)} {
		dir := filepath.Join("testdata", "fuzz", name)
		for i, s := range seeds {
			path := filepath.Join(dir, fmt.Sprintf("seed-%d", i))
			want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
			if *update {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("seed corpus: %v (run go test -run TestWriteFuzzCorpus -update)", err)
			}
			if string(got) != want {
				t.Errorf("%s is stale (run go test -run TestWriteFuzzCorpus -update)", path)
			}
		}
	}
}
