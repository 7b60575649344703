package builtin

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/iket-trace/iket/iket"
)

// warp_roles: each CTA of 64 threads maps 256 floats, out = in*2 + 1.
const (
	warpRolesChunk        = 256
	warpRolesCTAsPerSM    = 8
	warpRolesThreads      = 64
	inputSeed1, inputSeed = 0x1ce7, 0x5eed
)

func init() {
	register(&iket.Program{
		Name:        "warp_roles",
		Entry:       "warp_roles",
		Description: "producer warp stages 256 floats in shared memory, consumer warp writes in*2+1; grid of SMs*8 CTAs of 64 threads",
		Params:      []iket.ParamKind{iket.ParamPtr, iket.ParamPtr},
		ConfigFor: func(sms int) iket.LaunchConfig {
			return iket.LaunchConfig{
				Kernel: "warp_roles",
				Grid:   [3]uint32{uint32(max(sms, 1) * warpRolesCTAsPerSM), 1, 1},
				Block:  [3]uint32{warpRolesThreads, 1, 1},
			}
		},
		Setup: setupWarpRoles,
	}, "warp_roles.cu")
	register(&iket.Program{
		Name:        "fault",
		Entry:       "fault",
		Description: "deliberately faults: CTA 0's consumer warp stores through an invalid address (tests the fault path)",
		Params:      []iket.ParamKind{iket.ParamPtr, iket.ParamU32},
		ConfigFor: func(sms int) iket.LaunchConfig {
			return iket.LaunchConfig{Kernel: "fault", Grid: [3]uint32{4, 1, 1}, Block: [3]uint32{64, 1, 1}}
		},
		Setup: setupFault,
	}, "fault.cu")
	register(&iket.Program{
		Name:        "hang",
		Entry:       "hang",
		Description: "deliberately hangs: the consumer waits for a flag its producer never sets (tests the timeout path); ends after 30 s or when released",
		Params:      []iket.ParamKind{iket.ParamPtr, iket.ParamPtr, iket.ParamU64},
		ConfigFor: func(sms int) iket.LaunchConfig {
			return iket.LaunchConfig{Kernel: "hang", Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{64, 1, 1}}
		},
		Setup: setupHang,
	}, "hang.cu")
}

// randomFloats returns n non-zero floats in [-1024, 1024), the same for a
// given n on every run.
func randomFloats(n int) []float32 {
	r := rand.New(rand.NewPCG(inputSeed1, inputSeed))
	xs := make([]float32, n)
	for i := range xs {
		x := float32(r.Float64()*2048 - 1024)
		if x == 0 {
			x = 0.5
		}
		xs[i] = x
	}
	return xs
}

func floatBytes(xs []float32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// compareFloats checks got (raw bytes) against want bit for bit, naming the
// first difference and how many there are.
func compareFloats(what string, got []byte, want []float32, perCTA int) error {
	bad, first := 0, -1
	for i, w := range want {
		if binary.LittleEndian.Uint32(got[4*i:]) != math.Float32bits(w) {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad == 0 {
		return nil
	}
	g := math.Float32frombits(binary.LittleEndian.Uint32(got[4*first:]))
	return fmt.Errorf("%s: %d of %d values wrong; first at index %d (CTA %d): got %v (0x%08x), want %v",
		what, bad, len(want), first, first/perCTA, g, math.Float32bits(g), want[first])
}

func setupWarpRoles(d *iket.Device, cfg iket.LaunchConfig) (*iket.Workload, error) {
	n := int(cfg.CTAs()) * warpRolesChunk
	in := randomFloats(n)
	want := make([]float32, n)
	for i, x := range in {
		want[i] = float32(x*2) + 1
	}
	w := &iket.Workload{Buffers: map[string]*iket.Buffer{}}
	for _, name := range []string{"in", "out"} {
		b, err := d.Alloc(uint64(4 * n))
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("set up warp_roles: %w", err)
		}
		w.Buffers[name] = b
	}
	if err := w.Buffers["in"].Write(floatBytes(in)); err != nil {
		w.Close()
		return nil, fmt.Errorf("set up warp_roles: %w", err)
	}
	out := w.Buffers["out"]
	w.Args = []iket.Arg{w.Buffers["in"], out}
	w.Poison = func() error { return out.Fill(0xff) } // NaN everywhere
	w.Verify = func() error {
		got := make([]byte, 4*n)
		if err := out.Read(got); err != nil {
			return fmt.Errorf("read warp_roles output: %w", err)
		}
		return compareFloats("warp_roles output (want in*2+1)", got, want, warpRolesChunk)
	}
	return w, nil
}

func setupFault(d *iket.Device, cfg iket.LaunchConfig) (*iket.Workload, error) {
	n := cfg.CTAs() * cfg.Threads()
	out, err := d.Alloc(4 * n)
	if err != nil {
		return nil, fmt.Errorf("set up fault: %w", err)
	}
	w := &iket.Workload{Buffers: map[string]*iket.Buffer{"out": out}, Args: []iket.Arg{out, iket.U32(0)}}
	w.Poison = func() error { return out.Fill(0xff) }
	w.Verify = func() error { return errors.New("the fault program has no correct output: it always faults") }
	return w, nil
}

// HangLimit is how long the hang program's consumer waits before giving up
// on its own.
const HangLimit = 30 * time.Second

func setupHang(d *iket.Device, cfg iket.LaunchConfig) (*iket.Workload, error) {
	ready, err := d.Alloc(4 * cfg.CTAs())
	if err != nil {
		return nil, fmt.Errorf("set up hang: %w", err)
	}
	release, err := d.AllocMapped(4)
	if err != nil {
		ready.Close()
		return nil, fmt.Errorf("set up hang: %w", err)
	}
	w := &iket.Workload{
		Buffers: map[string]*iket.Buffer{"ready": ready, "release": release},
		Args:    []iket.Arg{ready, release, iket.U64(HangLimit.Nanoseconds())},
	}
	w.Poison = func() error {
		if err := release.Fill(0); err != nil {
			return err
		}
		return ready.Fill(0)
	}
	w.Verify = func() error { return errors.New("the hang program has no correct output: it never signals") }
	return w, nil
}
