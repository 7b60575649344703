package iket

import (
	"fmt"
	"time"

	"github.com/iket-trace/iket/iket/internal/cuda"
	"github.com/iket-trace/iket/internal/raw"
	"github.com/iket-trace/iket/trace"
)

// Defaults of [TraceOptions].
const (
	DefaultCapacity = 4096
	DefaultTimeout  = 10 * time.Second
	// partialCopyWait bounds the best-effort copy of a hung launch's
	// device-memory buffers.
	partialCopyWait = 2 * time.Second
)

// TraceOptions configure one traced launch.
type TraceOptions struct {
	Capacity uint32     // records per warp; default [DefaultCapacity]; a power of two in wrap mode
	Mode     trace.Mode // trace.ModeStop (default) or trace.ModeWrap
	// Watch puts the warp buffers in host memory mapped into the device, so
	// they stay readable while the kernel runs and after it faults or hangs.
	// Every record then crosses the host link: slower, see docs/RUNTIME.md.
	Watch   bool
	Timeout time.Duration // default [DefaultTimeout]
}

func (o *TraceOptions) defaults() error {
	if o.Capacity == 0 {
		o.Capacity = DefaultCapacity
	}
	if o.Mode == "" {
		o.Mode = trace.ModeStop
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	switch {
	case o.Capacity > raw.MaxCapacity:
		return &ConfigError{Field: "capacity", Msg: fmt.Sprintf("%d records per warp, at most %d", o.Capacity, raw.MaxCapacity)}
	case o.Mode != trace.ModeStop && o.Mode != trace.ModeWrap:
		return &ConfigError{Field: "mode", Msg: fmt.Sprintf("%q, want %q or %q", o.Mode, trace.ModeStop, trace.ModeWrap)}
	case o.Mode == trace.ModeWrap && o.Capacity&(o.Capacity-1) != 0:
		return &ConfigError{Field: "capacity", Msg: fmt.Sprintf("wrap mode needs a power of two, have %d", o.Capacity)}
	}
	return nil
}

func (o *TraceOptions) wrapMask() uint32 {
	if o.Mode == trace.ModeWrap {
		return o.Capacity - 1
	}
	return raw.StopMask
}

// checkMode refuses a buffer mode the module was not built for: a build
// records in one mode (IKET_WRAP).
func (m *Module) checkMode(kernel string, mode trace.Mode) error {
	if got := m.Mode(); got != mode {
		flag := "without IKET_WRAP"
		if mode == trace.ModeWrap {
			flag = "with -DIKET_WRAP=1"
		}
		return &ConfigError{Kernel: kernel, Field: "mode", Msg: fmt.Sprintf("%s mode asked, but module %s records in %s mode: a build records in one mode; build it %s", mode, m.src.Path, got, flag)}
	}
	return nil
}

// windowMargin is the room a launch's buffers must leave below the next
// 4 GiB boundary: the header's cursor saturates at 2^32 - 32, which must lie
// past every warp's last slot.
const windowMargin = 32

// straddles reports whether [p, p+size+windowMargin) crosses a 4 GiB
// boundary. The header keeps only the low word of a record's address per
// event (the high word is fixed per warp), so a launch's buffers must not
// (docs/FORMAT.md section 3).
func straddles(p, size uint64) bool {
	return size > 0 && p>>32 != (p+size+windowMargin-1)>>32
}

// allocWindow allocates size bytes of device memory that do not straddle a
// 4 GiB boundary: raw is what to free, p where the buffers start. When the
// first allocation straddles, one of twice the size has a part that does not.
func allocWindow(c *cuda.Context, size uint64) (raw, p cuda.DevicePtr, err error) {
	raw, err = c.Alloc(size)
	if err != nil || !straddles(uint64(raw), size) {
		return raw, raw, err
	}
	if err := c.Free(raw); err != nil {
		return 0, 0, err
	}
	if size > 1<<31 {
		return 0, 0, fmt.Errorf("%d bytes straddle a 4 GiB boundary and are too many to place inside one (at most 2 GiB then)", size)
	}
	// Of [raw, raw+2*size+margin), the part below or above the boundary in
	// it holds size+margin bytes.
	raw, err = c.Alloc(2*size + windowMargin)
	if err != nil {
		return 0, 0, err
	}
	p = raw
	if straddles(uint64(p), size) {
		p = cuda.DevicePtr((uint64(raw)>>32 + 1) << 32)
	}
	return raw, p, nil
}

// TraceResult is one traced launch: its metadata (as a capture stores it)
// and the raw warp buffers, Meta.Size() bytes, owned by the caller.
type TraceResult struct {
	Meta    trace.LaunchMeta
	Buffers []byte
	// KernelTime is the launch's duration between CUDA events (instrumented,
	// L2 not flushed); 0 for a partial result.
	KernelTime time.Duration
	// Partial is set when the buffers were read before the kernel ended (a
	// fault or a hang): headers of unfinished warps have flag bit 1 clear.
	Partial bool
	// Format is the record format version the module wrote (its iket.cuh's
	// IKET_FORMAT_VERSION); 0 means raw.FormatVersion.
	Format int
}

// launchMeta builds the metadata of a traced launch.
func (m *Module) launchMeta(cfg LaunchConfig, o TraceOptions) trace.LaunchMeta {
	return trace.LaunchMeta{
		Kernel:      cfg.Kernel,
		Source:      m.src.Path,
		Grid:        cfg.Grid,
		Block:       cfg.Block,
		Cluster:     cfg.Cluster,
		SharedBytes: cfg.SharedBytes,
		WarpsPerCTA: cfg.WarpsPerCTA(),
		Warps:       cfg.Warps(),
		Capacity:    o.Capacity,
		Mode:        o.Mode,
		Names:       append([]trace.Name(nil), m.names...),
	}
}

// Trace runs one instrumented launch with per-warp buffers and returns them.
// It allocates Warps()*stride zeroed bytes, sets iket_state, launches with
// cuLaunchKernelEx and waits up to opt.Timeout, polling. A fault returns a
// *KernelError, a timeout a *HangError, both with what the buffers held
// (see their docs). Trace blocks until the launch ends or times out.
func (m *Module) Trace(cfg LaunchConfig, args []Arg, opt TraceOptions) (*TraceResult, error) {
	if err := opt.defaults(); err != nil {
		return nil, err
	}
	d := m.d
	d.mu.Lock()
	defer d.mu.Unlock()
	p, err := m.prepare(cfg, args)
	if err != nil {
		return nil, err
	}
	if !m.instrumented {
		return nil, fmt.Errorf("trace %s: module %s is not instrumented", cfg.Kernel, m.src.Path)
	}
	if err := m.checkMode(cfg.Kernel, opt.Mode); err != nil {
		return nil, err
	}
	meta := m.launchMeta(cfg, opt)
	size := uint64(meta.Size())
	if size>>40 != 0 {
		return nil, &ConfigError{Kernel: cfg.Kernel, Field: "capacity", Msg: fmt.Sprintf("%d warps x %d bytes is %d bytes of buffers", meta.Warps, meta.Stride(), size)}
	}
	c := d.ctx

	// The warp buffers.
	var (
		base  uint64
		host  cuda.HostMem
		dev   cuda.DevicePtr
		bufs  *resource
		where = "device"
	)
	if opt.Watch {
		where = "mapped host"
		host, err = c.HostAlloc(size, true)
		if err != nil {
			return nil, fmt.Errorf("trace %s: allocate %d bytes of warp buffers (%d warps x %d): %w", cfg.Kernel, size, meta.Warps, meta.Stride(), err)
		}
		bufs = d.track("warp buffers", func() error { return c.HostFree(host) })
		if straddles(uint64(host.Device), size) {
			// Rare: a mapping across a 4 GiB boundary. Say so rather than
			// juggle host allocations.
			d.release(bufs)
			return nil, &ConfigError{Kernel: cfg.Kernel, Field: "watch", Msg: fmt.Sprintf("the mapped warp buffers (%d bytes at device address %#x) straddle a 4 GiB boundary, which the header cannot address; run again or without --watch", size, uint64(host.Device))}
		}
		clear(host.Bytes())
		base = uint64(host.Device)
	} else {
		var raw cuda.DevicePtr
		raw, dev, err = allocWindow(c, size)
		if err != nil {
			return nil, fmt.Errorf("trace %s: allocate %d bytes of warp buffers (%d warps x %d): %w", cfg.Kernel, size, meta.Warps, meta.Stride(), err)
		}
		bufs = d.track("warp buffers", func() error { return c.Free(raw) })
		if err := c.Memset(dev, 0, size); err != nil {
			d.release(bufs)
			return nil, fmt.Errorf("trace %s: zero warp buffers: %w", cfg.Kernel, err)
		}
		base = uint64(dev)
	}
	read := func() []byte {
		b := make([]byte, size)
		if opt.Watch {
			copy(b, host.Bytes())
			return b
		}
		if err := c.CopyDtoH(b, dev); err != nil {
			return nil
		}
		return b
	}

	if err := m.setState(base, opt.Capacity, opt.wrapMask(), meta.WarpsPerCTA); err != nil {
		d.release(bufs)
		return nil, fmt.Errorf("trace %s: %w", cfg.Kernel, err)
	}
	var kept uint64
	restore := func() {}
	if !opt.Watch {
		p.dims.Window, kept, restore = d.keepRecords(dev, size)
	}
	run, err := d.launchAndWait(p, cfg, opt.Timeout, true)
	if run.hung {
		d.hung.after = restore // once the kernel has ended
	} else if d.broken == nil {
		restore()
	}
	if p.dims.Window.Bytes == 0 {
		kept = 0 // refused: launched without it
	}
	switch {
	case run.hung:
		he := &HangError{Kernel: cfg.Kernel, Config: cfg, Timeout: opt.Timeout}
		if opt.Watch {
			he.Result = &TraceResult{Meta: meta, Buffers: read(), Partial: true, Format: m.format}
		} else if b := d.copyBeside(dev, size); b != nil {
			he.Result = &TraceResult{Meta: meta, Buffers: b, Partial: true, Format: m.format}
		}
		d.release(bufs) // parked until the kernel ends
		return nil, he
	case err != nil:
		ke := &KernelError{Kernel: cfg.Kernel, Config: cfg, Code: codeOf(err), Err: err}
		if run.launched {
			if b := read(); b != nil {
				ke.Result = &TraceResult{Meta: meta, Buffers: b, Partial: true, Format: m.format}
			}
		}
		if d.broken == nil {
			_ = m.setState(0, 0, raw.StopMask, 1)
		}
		d.release(bufs)
		return nil, ke
	}
	meta.RecordsL2Bytes = &kept
	res := &TraceResult{Meta: meta, KernelTime: run.elapsed, Format: m.format}
	if opt.Watch {
		res.Buffers = read()
	} else {
		res.Buffers = make([]byte, size)
		if err := c.CopyDtoH(res.Buffers, dev); err != nil {
			d.release(bufs)
			return nil, fmt.Errorf("trace %s: read %d bytes of %s warp buffers: %w", cfg.Kernel, size, where, err)
		}
	}
	// No buffers in iket_state again, so that no later launch writes into
	// freed ones.
	if err := m.setState(0, 0, raw.StopMask, 1); err != nil {
		d.release(bufs)
		return nil, fmt.Errorf("trace %s: %w", cfg.Kernel, err)
	}
	if err := d.release(bufs); err != nil {
		return nil, fmt.Errorf("trace %s: free warp buffers: %w", cfg.Kernel, err)
	}
	return res, nil
}

// keepRecords keeps a traced launch's records (size bytes of buffers at
// dev) in the L2, as the injection library does for launches in an
// application (docs/RUNTIME.md, "What happens to a launch", step 5):
// written through the L2 with the kernel's data, they go back to DRAM
// between the kernel's own loads. It returns the launch's persisting
// window, the set-aside the driver then reports (as the injection library
// does: at least min(size, the device's maximum, an eighth of the L2); 0
// and no window when the device or driver has none) and what undoes it
// once the launch ended: the persisting lines made normal, the set-aside
// as it was.
func (d *Device) keepRecords(dev cuda.DevicePtr, size uint64) (cuda.Window, uint64, func()) {
	c := d.ctx
	if d.persistMax <= 0 || d.windowMax <= 0 || d.l2Bytes <= 0 {
		return cuda.Window{}, 0, func() {}
	}
	limit, err := c.PersistingL2()
	if err != nil {
		return cuda.Window{}, 0, func() {}
	}
	want := min(size, uint64(d.persistMax), uint64(d.l2Bytes)/8)
	raised, kept := limit < want, limit
	if raised {
		if c.SetPersistingL2(want) != nil {
			return cuda.Window{}, 0, func() {}
		}
		kept = want
		if n, err := c.PersistingL2(); err == nil {
			kept = n // what the driver holds (it may round)
		}
	}
	return cuda.Window{Base: dev, Bytes: min(size, uint64(d.windowMax))}, kept, func() {
		_ = c.ResetPersistingL2()
		if raised {
			_ = c.SetPersistingL2(limit)
		}
	}
}

// launch queues p on the device's stream. A launch the driver refuses with
// p's access-policy window (as a virtualized GPU may) is queued again
// without it, and p keeps none: its records then go through the L2 with
// the kernel's data.
func (d *Device) launch(p *prepared) error {
	err := d.ctx.Launch(p.fn, p.dims, d.stream, p.blob, p.offs)
	if err != nil && p.dims.Window.Bytes != 0 && !sticky(err) {
		p.dims.Window = cuda.Window{}
		err = d.ctx.Launch(p.fn, p.dims, d.stream, p.blob, p.offs)
	}
	return err
}

// runOutcome says how far a launch got.
type runOutcome struct {
	launched bool
	hung     bool
	elapsed  time.Duration
}

// launchAndWait queues the launch between two events on the device's stream
// and polls the end event until it completes or timeout passes (d.mu held).
// On a fault it marks the device broken; on a timeout it records the hang
// (later releases park until the kernel ends) and returns hung.
func (d *Device) launchAndWait(p *prepared, cfg LaunchConfig, timeout time.Duration, timed bool) (runOutcome, error) {
	var out runOutcome
	c := d.ctx
	start, err := c.NewEvent(timed)
	if err != nil {
		return out, fmt.Errorf("launch %s: %w", cfg.Kernel, err)
	}
	startRes := d.track("event", func() error { return c.DestroyEvent(start) })
	end, err := c.NewEvent(timed)
	if err != nil {
		d.release(startRes)
		return out, fmt.Errorf("launch %s: %w", cfg.Kernel, err)
	}
	if err := c.Record(start, d.stream); err != nil {
		d.release(startRes)
		c.DestroyEvent(end)
		return out, fmt.Errorf("launch %s: %w", cfg.Kernel, err)
	}
	if err := d.launch(p); err != nil {
		d.fault(err)
		d.release(startRes)
		c.DestroyEvent(end)
		return out, err
	}
	out.launched = true
	if err := c.Record(end, d.stream); err != nil {
		d.release(startRes)
		c.DestroyEvent(end)
		return out, fmt.Errorf("launch %s: %w", cfg.Kernel, err)
	}
	done, err := d.poll(end, timeout)
	if !done {
		out.hung = true
		d.hung = &hangState{kernel: cfg.Kernel, since: time.Now(), done: end}
		d.release(startRes) // parked
		return out, nil
	}
	if err != nil {
		d.fault(err)
		d.release(startRes)
		c.DestroyEvent(end)
		return out, err
	}
	if timed {
		ms, eerr := c.Elapsed(start, end)
		if eerr == nil {
			out.elapsed = time.Duration(float64(ms) * float64(time.Millisecond))
		}
	}
	d.release(startRes)
	if err := c.DestroyEvent(end); err != nil {
		return out, fmt.Errorf("launch %s: %w", cfg.Kernel, err)
	}
	return out, nil
}

// poll waits for e up to timeout, sleeping between queries (10 µs growing
// to 1 ms). It returns done false on timeout; err is the work's failure.
func (d *Device) poll(e cuda.Event, timeout time.Duration) (done bool, err error) {
	deadline := time.Now().Add(timeout)
	sleep := 10 * time.Microsecond
	for {
		done, err := d.ctx.EventDone(e)
		if done {
			return true, err
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		time.Sleep(sleep)
		if sleep < time.Millisecond {
			sleep *= 2
		}
	}
}

// copyBeside copies device memory on a separate non-blocking stream while a
// hung kernel occupies the device's stream; nil when the copy did not finish
// within partialCopyWait (d.mu held, d.hung set: unfinished pieces park).
func (d *Device) copyBeside(p cuda.DevicePtr, n uint64) []byte {
	c := d.ctx
	s, err := c.NewStream(true)
	if err != nil {
		return nil
	}
	sr := d.track("side stream", func() error { return c.DestroyStream(s) })
	defer d.release(sr)
	h, err := c.HostAlloc(n, false)
	if err != nil {
		return nil
	}
	hr := d.track("pinned copy", func() error { return c.HostFree(h) })
	defer d.release(hr)
	if err := c.CopyDtoHAsync(h, p, s); err != nil {
		return nil
	}
	deadline := time.Now().Add(partialCopyWait)
	for {
		done, err := c.StreamDone(s)
		if done {
			if err != nil {
				return nil
			}
			return append([]byte(nil), h.Bytes()...)
		}
		if time.Now().After(deadline) {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
}

// Launch runs the module's kernel once and waits up to timeout (0: the
// default), with an instrumented module's events storing nothing (no
// buffers). Correctness checks use it. Faults and hangs are reported as
// by [Module.Trace], without buffers.
func (m *Module) Launch(cfg LaunchConfig, args []Arg, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	d := m.d
	d.mu.Lock()
	defer d.mu.Unlock()
	p, err := m.prepare(cfg, args)
	if err != nil {
		return err
	}
	if err := m.setState(0, 0, raw.StopMask, 1); err != nil {
		return fmt.Errorf("launch %s: %w", cfg.Kernel, err)
	}
	run, err := d.launchAndWait(p, cfg, timeout, false)
	if run.hung {
		return &HangError{Kernel: cfg.Kernel, Config: cfg, Timeout: timeout}
	}
	if err != nil {
		return &KernelError{Kernel: cfg.Kernel, Config: cfg, Code: codeOf(err), Err: err}
	}
	return nil
}
