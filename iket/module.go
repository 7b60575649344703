package iket

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/iket-trace/iket/iket/internal/cuda"
	"github.com/iket-trace/iket/internal/raw"
	"github.com/iket-trace/iket/kernels"
	"github.com/iket-trace/iket/trace"
)

// DefaultArch is the target Compile uses when none is given.
const DefaultArch = "sm_90a"

// Names of the device globals iket.cuh defines in an instrumented module.
const (
	stateSymbol     = "iket_state"
	nameTableSymbol = "iket_name_table"
	// jitSymbol marks a dormant build (iket.cuh): 0 where its events are
	// compiled out.
	jitSymbol = "iket_jit"
	stateSize = 32
)

// Module is a loaded kernel module in one build. Close it when done (the
// Device's Close also frees it).
type Module struct {
	d            *Device
	mod          cuda.Module
	src          Source
	arch         string
	instrumented bool
	log          string
	state        cuda.DevicePtr
	names        []trace.Name
	funcs        map[string]cuda.Function
	res          *resource
	build        uint32 // iket_state's build flags: buildWrap
	format       int    // iket_state's record format version
	image        []byte // what was loaded (for Reload; a copy, not the caller's src.Data)
}

// Build flags the header puts in iket_state (docs/FORMAT.md section 2).
const (
	buildWrap = 1 // built with IKET_WRAP: records in wrap mode only
)

// Mode reports the buffer mode an instrumented module records in: a build
// records in one mode, chosen when it is compiled (-DIKET_WRAP=1 for wrap).
func (m *Module) Mode() trace.Mode {
	if m.build&buildWrap != 0 {
		return trace.ModeWrap
	}
	return trace.ModeStop
}

// Compile builds src for the device and loads it. CUDA C++ is compiled with
// NVRTC for arch (default [DefaultArch]) with -DIKET_ENABLE=1 when
// instrumented, the embedded iket.cuh supplied as a header; the NVRTC log is
// in the error on failure. A prebuilt PTX/cubin/fatbin is loaded as given,
// and instrumented must match what it is (whether it defines iket_state): a
// prebuilt image is one build, so an uninstrumented baseline needs a second
// file built without IKET_ENABLE.
func (d *Device) Compile(src Source, instrumented bool, arch string) (*Module, error) {
	if arch == "" {
		arch = DefaultArch
	}
	name := moduleName(src)
	if src.Kind == KindUnknown {
		k, err := DetectKind(src.Path, src.Data)
		if err != nil {
			return nil, fmt.Errorf("compile %s: %w", name, err)
		}
		src.Kind = k
	}
	build := buildName(instrumented)
	image, log, err := buildImage(name, src, instrumented, arch)
	if err != nil {
		return nil, fmt.Errorf("compile %s (%s build, %s): %w", name, build, arch, err)
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(); err != nil {
		return nil, fmt.Errorf("load %s: %w", name, err)
	}
	mod, err := d.ctx.LoadModule(image)
	if err != nil {
		return nil, fmt.Errorf("load %s (%s build, %v): %w", name, build, src.Kind, err)
	}
	return d.load(name, src, arch, log, image, mod, instrumented)
}

// moduleName is how errors name a module built from src.
func moduleName(src Source) string {
	if src.Path == "" {
		return "kernel"
	}
	return filepath.Base(src.Path)
}

func buildName(instrumented bool) string {
	if instrumented {
		return "instrumented"
	}
	return "uninstrumented"
}

// load wraps a loaded module (d.mu held).
func (d *Device) load(name string, src Source, arch, log string, image []byte, mod cuda.Module, instrumented bool) (*Module, error) {
	m := &Module{d: d, mod: mod, src: src, arch: arch, log: log, image: image, funcs: map[string]cuda.Function{}}
	m.res = d.track("module "+name, func() error { return d.ctx.Unload(mod) })
	if err := m.inspect(name, instrumented); err != nil {
		_ = d.release(m.res)
		m.res = nil
		return nil, err
	}
	return m, nil
}

// Reload loads the module's image a second time, as a module of its own:
// the same code, in its own place. [Time] times such a second load of the
// uninstrumented build as a control, to show what two identical builds
// differ by in that run.
func (m *Module) Reload() (*Module, error) {
	name := moduleName(m.src)
	d := m.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if m.res == nil {
		return nil, fmt.Errorf("reload %s: the module is closed", name)
	}
	if err := d.usable(); err != nil {
		return nil, fmt.Errorf("reload %s: %w", name, err)
	}
	mod, err := d.ctx.LoadModule(m.image)
	if err != nil {
		return nil, fmt.Errorf("reload %s (%s build, %s): %w", name, buildName(m.instrumented), m.arch, err)
	}
	return d.load(name, m.src, m.arch, m.log, m.image, mod, m.instrumented)
}

// buildImage returns the image to load: a copy of src.Data for a prebuilt
// kind (the module keeps it for Reload), else NVRTC's output (a cubin for an
// sm_ arch, PTX for compute_) and its log.
func buildImage(name string, src Source, instrumented bool, arch string) ([]byte, string, error) {
	if src.Kind != KindCU {
		return bytes.Clone(src.Data), "", nil
	}
	opts := []string{"-arch=" + arch, "-std=c++17", "-lineinfo"}
	if instrumented {
		opts = append(opts, "-DIKET_ENABLE=1")
	}
	opts = append(opts, src.Options...)
	headers := map[string][]byte{kernels.HeaderName: kernels.Header()}
	for k, v := range src.Includes {
		headers[k] = v
	}
	return cuda.Compile(name, src.Data, headers, opts, strings.HasPrefix(arch, "sm_"))
}

// inspect checks the module is the build asked for and reads the name table
// of an instrumented one (d.mu held).
func (m *Module) inspect(name string, instrumented bool) error {
	c := m.d.ctx
	p, size, err := c.Global(m.mod, stateSymbol)
	var r cuda.Result
	has := err == nil
	if err != nil && !(errors.As(err, &r) && r == cuda.ErrNotFound) {
		return fmt.Errorf("load %s: %w", name, err)
	}
	switch {
	case instrumented && !has:
		return fmt.Errorf("load %s: the module has no %s: it was not built with -DIKET_ENABLE=1 and iket.cuh", name, stateSymbol)
	case !instrumented && has:
		return fmt.Errorf("load %s: the module defines %s: it is an instrumented build, not a baseline (a prebuilt image is one build; build the baseline without IKET_ENABLE)", name, stateSymbol)
	case !has:
		return nil
	}
	if size != stateSize {
		return fmt.Errorf("load %s: %s is %d bytes, this iket expects %d (a different iket.cuh?)", name, stateSymbol, size, stateSize)
	}
	var st [stateSize]byte
	if err := c.CopyDtoH(st[:], p); err != nil {
		return fmt.Errorf("load %s: read %s: %w", name, stateSymbol, err)
	}
	v := binary.LittleEndian.Uint32(st[20:])
	if v < raw.MinFormatVersion || v > raw.FormatVersion {
		return fmt.Errorf("load %s: %s version %d, this iket reads versions %d to %d", name, stateSymbol, v, raw.MinFormatVersion, raw.FormatVersion)
	}
	if jp, jsize, err := c.Global(m.mod, jitSymbol); err == nil && jsize == 4 {
		var j [4]byte
		if err := c.CopyDtoH(j[:], jp); err != nil {
			return fmt.Errorf("load %s: read %s: %w", name, jitSymbol, err)
		}
		if binary.LittleEndian.Uint32(j[:]) == 0 {
			return fmt.Errorf("load %s: a dormant build (nvcc with -DIKET_ENABLE=1 alone): its events are compiled out of its SASS; build it with -DIKET_LIVE=1 as well", name)
		}
	}
	m.format = int(v)
	m.state = p
	m.instrumented = true
	m.build = binary.LittleEndian.Uint32(st[24:])
	tp, tsize, err := c.Global(m.mod, nameTableSymbol)
	if err != nil {
		return fmt.Errorf("load %s: the instrumented module has no %s (IKET_NAMES missing?): %w", name, nameTableSymbol, err)
	}
	if tsize == 0 || tsize > 1<<20 {
		return fmt.Errorf("load %s: %s is %d bytes", name, nameTableSymbol, tsize)
	}
	tb := make([]byte, tsize)
	if err := c.CopyDtoH(tb, tp); err != nil {
		return fmt.Errorf("load %s: read %s: %w", name, nameTableSymbol, err)
	}
	names, err := trace.ParseNameTable(string(tb))
	if err != nil {
		return fmt.Errorf("load %s: %w", name, err)
	}
	m.names = names
	return nil
}

// Instrumented reports whether the module records events (defines
// iket_state).
func (m *Module) Instrumented() bool { return m.instrumented }

// Source returns the source the module was built from.
func (m *Module) Source() Source { return m.src }

// Arch returns the target architecture the module was compiled for.
func (m *Module) Arch() string { return m.arch }

// Log returns NVRTC's log of a successful compile (warnings), often "".
func (m *Module) Log() string { return m.log }

// Names returns the module's name table (iket_name_table, read back when the
// module was loaded); the caller owns the slice. Only instrumented modules
// have one.
func (m *Module) Names() ([]trace.Name, error) {
	if !m.instrumented {
		return nil, fmt.Errorf("read name table of %s: the module is not instrumented", m.src.Path)
	}
	return append([]trace.Name(nil), m.names...), nil
}

// Close unloads the module; it is idempotent.
func (m *Module) Close() error {
	if m == nil || m.res == nil {
		return nil
	}
	m.d.mu.Lock()
	defer m.d.mu.Unlock()
	r := m.res
	m.res = nil
	if err := m.d.release(r); err != nil {
		return fmt.Errorf("close module %s: %w", m.src.Path, err)
	}
	return nil
}

// prepared is a checked launch, ready to queue.
type prepared struct {
	fn   cuda.Function
	dims cuda.Dims
	blob []byte
	offs []uintptr
}

// prepare checks cfg and args against the device and the kernel and packs
// the arguments (d.mu held).
func (m *Module) prepare(cfg LaunchConfig, args []Arg) (*prepared, error) {
	if m.res == nil {
		return nil, fmt.Errorf("launch %s: module closed", cfg.Kernel)
	}
	if err := m.d.usable(); err != nil {
		return nil, fmt.Errorf("launch %s: %w", cfg.Kernel, err)
	}
	if err := cfg.Validate(m.d.limits); err != nil {
		return nil, err
	}
	c := m.d.ctx
	fn, ok := m.funcs[cfg.Kernel]
	if !ok {
		var err error
		fn, err = c.Function(m.mod, cfg.Kernel)
		if err != nil {
			return nil, &ConfigError{Kernel: cfg.Kernel, Field: "kernel",
				Msg: fmt.Sprintf("module %s has no kernel named %q (declare it extern \"C\" or give the mangled name): %v", m.src.Path, cfg.Kernel, err)}
		}
		m.funcs[cfg.Kernel] = fn
	}
	maxThreads, err := c.FuncAttr(fn, cuda.FuncAttrMaxThreadsPerBlock)
	if err != nil {
		return nil, fmt.Errorf("launch %s: %w", cfg.Kernel, err)
	}
	if cfg.Threads() > uint64(maxThreads) {
		return nil, &ConfigError{Kernel: cfg.Kernel, Field: "block",
			Msg: fmt.Sprintf("%d threads per CTA, the compiled kernel allows at most %d (launch bounds or registers)", cfg.Threads(), maxThreads)}
	}
	if cfg.SharedBytes > 48<<10 {
		if err := c.SetFuncAttr(fn, cuda.FuncAttrMaxDynamicShared, int(cfg.SharedBytes)); err != nil {
			return nil, &ConfigError{Kernel: cfg.Kernel, Field: "shared_bytes",
				Msg: fmt.Sprintf("cannot allow %d bytes of dynamic shared memory: %v", cfg.SharedBytes, err)}
		}
	}
	if n, err := c.Occupancy(fn, int(cfg.Threads()), cfg.SharedBytes); err == nil && n == 0 {
		regs, _ := c.FuncAttr(fn, cuda.FuncAttrNumRegs)
		static, _ := c.FuncAttr(fn, cuda.FuncAttrSharedSizeBytes)
		return nil, &ConfigError{Kernel: cfg.Kernel, Field: "block",
			Msg: fmt.Sprintf("no CTA fits on an SM: %d threads x %d registers, %d static + %d dynamic shared bytes", cfg.Threads(), regs, static, cfg.SharedBytes)}
	}
	blob, offs, err := packArgs(args)
	if err != nil {
		return nil, &ConfigError{Kernel: cfg.Kernel, Field: "args", Msg: err.Error()}
	}
	return &prepared{
		fn:   fn,
		dims: cuda.Dims{Grid: cfg.Grid, Block: cfg.Block, Cluster: cfg.Cluster, SharedBytes: cfg.SharedBytes},
		blob: blob,
		offs: offs,
	}, nil
}

// setState writes iket_state (d.mu held). base 0: no buffers, nothing
// stored.
func (m *Module) setState(base uint64, capacity, wrapMask, warpsPerCTA uint32) error {
	if !m.instrumented {
		return nil
	}
	var st [stateSize]byte
	le := binary.LittleEndian
	le.PutUint64(st[0:], base)
	le.PutUint32(st[8:], capacity)
	le.PutUint32(st[12:], wrapMask)
	le.PutUint32(st[16:], warpsPerCTA)
	le.PutUint32(st[20:], uint32(m.format))
	le.PutUint32(st[24:], m.build)
	if err := m.d.ctx.CopyHtoD(m.state, st[:]); err != nil {
		return fmt.Errorf("set %s: %w", stateSymbol, err)
	}
	return nil
}
