package iket

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/iket-trace/iket/kernels"
)

// Program is a built-in kernel with everything needed to run it: its source
// (embedded in package kernels), entry point, launch configuration, inputs
// and an exact output check.
type Program struct {
	Name        string
	SourceFile  string // in kernels.FS examples/
	Entry       string
	Description string
	Params      []ParamKind
	// ConfigFor returns the launch configuration for a GPU with sms SMs.
	ConfigFor func(sms int) LaunchConfig
	// Setup allocates the program's buffers for cfg on d, with random (never
	// all-zero) inputs. Close the Workload when done.
	Setup func(d *Device, cfg LaunchConfig) (*Workload, error)
}

// Workload is a program's arguments and its output check.
type Workload struct {
	Args []Arg
	// Buffers names the workload's buffers ("in", "out", ...).
	Buffers map[string]*Buffer
	// Poison overwrites the outputs with a value no correct run writes.
	Poison func() error
	// Verify checks the outputs exactly.
	Verify func() error
}

// Close frees the workload's buffers.
func (w *Workload) Close() error {
	var errs []error
	names := make([]string, 0, len(w.Buffers))
	for n := range w.Buffers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := w.Buffers[n].Close(); err != nil {
			errs = append(errs, fmt.Errorf("buffer %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

// Source returns the program's embedded source.
func (p *Program) Source() (Source, error) {
	data, err := kernels.Example(p.SourceFile)
	if err != nil {
		return Source{}, fmt.Errorf("program %s: %w", p.Name, err)
	}
	return Source{Path: p.SourceFile, Kind: KindCU, Data: data}, nil
}

// Config returns the launch configuration on d.
func (p *Program) Config(d *Device) LaunchConfig { return p.ConfigFor(d.info.SMs) }

// CheckArgs checks an argument list against the program's signature.
func (p *Program) CheckArgs(args []Arg) error { return checkArgs(p.Entry, p.Params, args) }

// Check runs m (either build) once on w with poisoned outputs and verifies
// them exactly. Faults and hangs are returned as by [Module.Launch].
func (p *Program) Check(m *Module, cfg LaunchConfig, w *Workload, timeout time.Duration) error {
	if err := p.CheckArgs(w.Args); err != nil {
		return err
	}
	if err := w.Poison(); err != nil {
		return fmt.Errorf("check %s: poison outputs: %w", p.Name, err)
	}
	if err := m.Launch(cfg, w.Args, timeout); err != nil {
		return fmt.Errorf("check %s: %w", p.Name, err)
	}
	if err := w.Verify(); err != nil {
		return fmt.Errorf("check %s: %w", p.Name, err)
	}
	return nil
}

var builtins = map[string]*Program{}

func register(p *Program) { builtins[p.Name] = p }

// Builtin returns the built-in program name.
func Builtin(name string) (*Program, error) {
	if p, ok := builtins[name]; ok {
		return p, nil
	}
	names := make([]string, 0, len(builtins))
	for n := range builtins {
		names = append(names, n)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("no built-in program %q (have %v)", name, names)
}

// Builtins returns the built-in programs sorted by name.
func Builtins() []*Program {
	out := make([]*Program, 0, len(builtins))
	for _, p := range builtins {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// warp_roles: each CTA of 64 threads maps 256 floats, out = in*2 + 1.
const (
	warpRolesChunk        = 256
	warpRolesCTAsPerSM    = 8
	warpRolesThreads      = 64
	inputSeed1, inputSeed = 0x1ce7, 0x5eed
)

func init() {
	register(&Program{
		Name:        "warp_roles",
		SourceFile:  "warp_roles.cu",
		Entry:       "warp_roles",
		Description: "producer warp stages 256 floats in shared memory, consumer warp writes in*2+1; grid of SMs*8 CTAs of 64 threads",
		Params:      []ParamKind{ParamPtr, ParamPtr},
		ConfigFor: func(sms int) LaunchConfig {
			return LaunchConfig{
				Kernel: "warp_roles",
				Grid:   [3]uint32{uint32(max(sms, 1) * warpRolesCTAsPerSM), 1, 1},
				Block:  [3]uint32{warpRolesThreads, 1, 1},
			}
		},
		Setup: setupWarpRoles,
	})
	register(&Program{
		Name:        "fault",
		SourceFile:  "fault.cu",
		Entry:       "fault",
		Description: "deliberately faults: CTA 0's consumer warp stores through an invalid address (tests the fault path)",
		Params:      []ParamKind{ParamPtr, ParamU32},
		ConfigFor: func(sms int) LaunchConfig {
			return LaunchConfig{Kernel: "fault", Grid: [3]uint32{4, 1, 1}, Block: [3]uint32{64, 1, 1}}
		},
		Setup: setupFault,
	})
	register(&Program{
		Name:        "hang",
		SourceFile:  "hang.cu",
		Entry:       "hang",
		Description: "deliberately hangs: the consumer waits for a flag its producer never sets (tests the timeout path); ends after 30 s or when released",
		Params:      []ParamKind{ParamPtr, ParamPtr, ParamU64},
		ConfigFor: func(sms int) LaunchConfig {
			return LaunchConfig{Kernel: "hang", Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{64, 1, 1}}
		},
		Setup: setupHang,
	})
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

func setupWarpRoles(d *Device, cfg LaunchConfig) (*Workload, error) {
	n := int(cfg.CTAs()) * warpRolesChunk
	in := randomFloats(n)
	want := make([]float32, n)
	for i, x := range in {
		want[i] = float32(x*2) + 1
	}
	w := &Workload{Buffers: map[string]*Buffer{}}
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
	w.Args = []Arg{w.Buffers["in"], out}
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

func setupFault(d *Device, cfg LaunchConfig) (*Workload, error) {
	n := cfg.CTAs() * cfg.Threads()
	out, err := d.Alloc(4 * n)
	if err != nil {
		return nil, fmt.Errorf("set up fault: %w", err)
	}
	w := &Workload{Buffers: map[string]*Buffer{"out": out}, Args: []Arg{out, U32(0)}}
	w.Poison = func() error { return out.Fill(0xff) }
	w.Verify = func() error { return errors.New("the fault program has no correct output: it always faults") }
	return w, nil
}

// HangLimit is how long the hang program's consumer waits before giving up
// on its own.
const HangLimit = 30 * time.Second

func setupHang(d *Device, cfg LaunchConfig) (*Workload, error) {
	ready, err := d.Alloc(4 * cfg.CTAs())
	if err != nil {
		return nil, fmt.Errorf("set up hang: %w", err)
	}
	release, err := d.AllocMapped(4)
	if err != nil {
		ready.Close()
		return nil, fmt.Errorf("set up hang: %w", err)
	}
	w := &Workload{
		Buffers: map[string]*Buffer{"ready": ready, "release": release},
		Args:    []Arg{ready, release, U64(HangLimit.Nanoseconds())},
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
