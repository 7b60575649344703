package iket

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iket-trace/iket/iket/internal/cuda"
	"github.com/iket-trace/iket/trace"
)

// DeviceCount returns the number of CUDA devices; without a driver the error
// matches [ErrNoDevice].
func DeviceCount() (int, error) {
	if err := cuda.Init(); err != nil {
		return 0, fmt.Errorf("count devices: %w", err)
	}
	n, err := cuda.DeviceCount()
	if err != nil {
		return 0, fmt.Errorf("count devices: %w", err)
	}
	return n, nil
}

// Device is an open GPU: its retained primary context, one stream for
// iket's launches, its static description and an NVML handle (when NVML
// loads). Its methods serialise on an internal lock; it is safe for
// concurrent use. Close it when done.
type Device struct {
	mu      sync.Mutex
	ordinal int
	ctx     *cuda.Context
	stream  cuda.Stream
	info    trace.Device
	limits  Limits
	l2Bytes int
	// The L2's persisting lines (keepRecords): the most the set-aside and
	// an access-policy window may be; 0 on devices without them.
	persistMax, windowMax int
	nvml                  *nvmlDevice // nil when NVML is unavailable
	nvmlErr               error

	live   map[*resource]struct{} // what Close frees if the caller did not
	broken error                  // a sticky kernel fault
	hung   *hangState             // a kernel that outlived its timeout
	closed bool
}

// resource is something allocated in the device's context.
type resource struct {
	what string
	free func() error
}

// hangState is a launch that did not finish: its completion event and what
// it may still write, which is released only once it ends.
type hangState struct {
	kernel string
	since  time.Time
	done   cuda.Event
	// borrowed: done belongs to a parked resource, which destroys it.
	borrowed bool
	parked   []*resource
	// after runs once the kernel has ended without a fault (the records'
	// L2 set-aside put back, keepRecords).
	after func()
}

// OpenDevice opens GPU ordinal. Without a driver or GPU the error matches
// [ErrNoDevice] and names the reason (for example "load CUDA driver: dlopen
// libcuda.so.1: ...").
//
// After a kernel fault (a sticky CUDA error) anywhere in the process, CUDA is
// unusable until the process exits: OpenDevice then fails with an error
// matching [ErrDeviceUnusable] that names the original fault.
func OpenDevice(ordinal int) (*Device, error) {
	if err := processFault(ordinal); err != nil {
		return nil, fmt.Errorf("open device %d: %w", ordinal, err)
	}
	ctx, err := cuda.Retain(ordinal)
	if err != nil {
		if sticky(err) {
			// A fault iket did not see (another user of CUDA in this
			// process) poisoned the driver state.
			recordFault(err)
			return nil, fmt.Errorf("open device %d: %w", ordinal, &deviceError{ordinal: ordinal, msg: faultMsg, cause: err})
		}
		return nil, fmt.Errorf("open device %d: %w", ordinal, err)
	}
	d := &Device{ordinal: ordinal, ctx: ctx, live: map[*resource]struct{}{}}
	if err := d.describe(); err != nil {
		ctx.Release()
		return nil, fmt.Errorf("open device %d: %w", ordinal, err)
	}
	s, err := ctx.NewStream(false)
	if err != nil {
		ctx.Release()
		return nil, fmt.Errorf("open device %d: %w", ordinal, err)
	}
	d.stream = s
	d.nvml, d.nvmlErr = openNVML(d.info.UUID)
	if d.nvml != nil {
		d.nvml.static(&d.info)
	}
	return d, nil
}

// describe reads the device's static description and limits.
func (d *Device) describe() error {
	c := d.ctx
	var err error
	attr := func(a int) uint32 {
		if err != nil {
			return 0
		}
		var v int
		v, err = c.Attr(a)
		return uint32(v)
	}
	name, nerr := c.Name()
	if nerr != nil {
		return nerr
	}
	d.info.Name = name
	if u, uerr := c.UUID(); uerr == nil {
		d.info.UUID = formatUUID(u)
	}
	if v, verr := cuda.DriverVersion(); verr == nil {
		d.info.CUDA = fmt.Sprintf("%d.%d", v/1000, v%1000/10)
	}
	d.info.ComputeCap = fmt.Sprintf("%d.%d", attr(cuda.AttrComputeCapabilityMajor), attr(cuda.AttrComputeCapabilityMinor))
	d.info.SMs = int(attr(cuda.AttrMultiprocessorCount))
	d.limits = Limits{
		MaxThreadsPerBlock: attr(cuda.AttrMaxThreadsPerBlock),
		MaxBlock:           [3]uint32{attr(cuda.AttrMaxBlockDimX), attr(cuda.AttrMaxBlockDimY), attr(cuda.AttrMaxBlockDimZ)},
		MaxGrid:            [3]uint32{attr(cuda.AttrMaxGridDimX), attr(cuda.AttrMaxGridDimY), attr(cuda.AttrMaxGridDimZ)},
		MaxSharedOptin:     attr(cuda.AttrMaxSharedPerBlockOptin),
	}
	d.l2Bytes = int(attr(cuda.AttrL2CacheSize))
	if err != nil {
		return err
	}
	// Optional attributes: absent on older drivers, deprecated on newer.
	if v, e := c.Attr(cuda.AttrClusterLaunch); e == nil && v != 0 {
		d.limits.MaxClusterSize = 8
	}
	if v, e := c.Attr(cuda.AttrClockRateKHz); e == nil && v > 0 {
		d.info.MaxSMClockMHz = uint32(v / 1000)
	}
	if p, e := c.Attr(cuda.AttrMaxPersistingL2); e == nil {
		if w, e := c.Attr(cuda.AttrMaxAccessPolicyWindow); e == nil {
			d.persistMax, d.windowMax = p, w
		}
	}
	return nil
}

func formatUUID(u [16]byte) string {
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// Ordinal returns the device's ordinal.
func (d *Device) Ordinal() int { return d.ordinal }

// Limits returns the device's launch limits.
func (d *Device) Limits() Limits { return d.limits }

// Info returns the device's description (name, UUID, driver, CUDA version,
// compute capability, SMs, max SM clock) with Before set to the conditions
// now (nil when NVML is unavailable). The caller owns the result.
func (d *Device) Info() trace.Device {
	info := d.info
	info.Before = d.Conditions()
	return info
}

// Conditions reads the SM and memory clocks, temperature, power, power limit
// and clock-event (throttle) reasons through NVML. It returns nil when NVML
// is unavailable; a field NVML could not read stays zero.
func (d *Device) Conditions() *trace.Conditions {
	if d.nvml == nil {
		return nil
	}
	return d.nvml.conditions()
}

// NVMLError returns why NVML conditions are unavailable, or nil.
func (d *Device) NVMLError() error { return d.nvmlErr }

// track registers a resource Close frees if the caller does not.
func (d *Device) track(what string, free func() error) *resource {
	r := &resource{what: what, free: free}
	d.live[r] = struct{}{}
	return r
}

// release frees r once (d.mu held).
func (d *Device) release(r *resource) error {
	if _, ok := d.live[r]; !ok {
		return nil
	}
	delete(d.live, r)
	if d.hung != nil {
		// The hung kernel may still touch it: free it when the kernel ends.
		d.hung.parked = append(d.hung.parked, r)
		return nil
	}
	err := r.free()
	if err != nil && d.broken != nil {
		return nil // a poisoned context fails every call; the context's end frees it
	}
	return err
}

// liveCount returns the number of resources not yet freed.
func (d *Device) liveCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := len(d.live)
	if d.hung != nil {
		n += len(d.hung.parked)
	}
	return n
}

// usable reports why the device cannot take work, if it cannot (d.mu held).
// A hung kernel that has since ended releases what it held.
func (d *Device) usable() error {
	if d.closed {
		return &deviceError{ordinal: d.ordinal, msg: "closed"}
	}
	if h := d.hung; h != nil {
		done, err := d.ctx.EventDone(h.done)
		if !done {
			return &deviceError{ordinal: d.ordinal, msg: fmt.Sprintf("kernel %s has been hung for %v; the device takes no work until it ends or the process exits",
				h.kernel, time.Since(h.since).Round(time.Millisecond))}
		}
		d.hung = nil
		if err != nil {
			d.fault(err)
		}
		if h.after != nil && d.broken == nil {
			h.after()
		}
		var errs []error
		for _, r := range h.parked {
			if ferr := r.free(); ferr != nil && d.broken == nil {
				errs = append(errs, ferr)
			}
		}
		if !h.borrowed {
			if ferr := d.ctx.DestroyEvent(h.done); ferr != nil && d.broken == nil {
				errs = append(errs, ferr)
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("device %d: release a hung kernel's buffers: %w", d.ordinal, errors.Join(errs...))
		}
	}
	if d.broken == nil {
		if f := lastFault.Load(); f != nil {
			d.broken = f.err // another Device of this process saw a fault
		}
	}
	if d.broken != nil {
		return &deviceError{ordinal: d.ordinal, msg: faultMsg, cause: d.broken}
	}
	return nil
}

// faultMsg is what every refusal after a sticky fault says.
const faultMsg = "a kernel fault made CUDA unusable in this process; the process must exit before it can use the GPU again"

// processFaultState is the first sticky fault the process saw.
type processFaultState struct{ err error }

// lastFault is set once, by the first sticky fault: CUDA keeps such an error
// for the life of the process (every context, every later call), so no
// Device of this process can work after it.
var lastFault atomic.Pointer[processFaultState]

// recordFault remembers a sticky fault for the whole process.
func recordFault(err error) {
	lastFault.CompareAndSwap(nil, &processFaultState{err: err})
}

// processFault returns an error matching ErrDeviceUnusable if a sticky fault
// ended the process's use of CUDA, or nil.
func processFault(ordinal int) error {
	if f := lastFault.Load(); f != nil {
		return &deviceError{ordinal: ordinal, msg: faultMsg, cause: f.err}
	}
	return nil
}

// fault records err if it is a sticky fault, for d and for the process
// (d.mu held). It returns err.
func (d *Device) fault(err error) error {
	if sticky(err) {
		if d.broken == nil {
			d.broken = err
		}
		recordFault(err)
	}
	return err
}

// WaitIdle waits up to timeout for a hung kernel to end, polling; it returns
// nil when the device can take work again.
func (d *Device) WaitIdle(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		d.mu.Lock()
		err := d.usable()
		hung := d.hung != nil
		d.mu.Unlock()
		if !hung || time.Now().After(deadline) {
			return err
		}
		time.Sleep(time.Millisecond)
	}
}

// Close frees everything the device still holds (buffers, modules, the
// stream) and releases the primary context; the driver destroys the context
// when no other [Device] of the same ordinal holds it. After a kernel fault
// nothing can be freed (every call fails with the fault) and nothing can be
// recovered in this process: Close releases its handles best effort and
// returns nil; the driver reclaims everything when the process exits. Close
// never blocks on a hung kernel: if one still runs, Close frees nothing, keeps
// the context and returns an error matching [ErrDeviceUnusable]; the driver
// reclaims it all when the process exits. Close is idempotent.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	if h := d.hung; h != nil {
		if done, _ := d.ctx.EventDone(h.done); !done {
			d.closed = true
			return &deviceError{ordinal: d.ordinal, msg: fmt.Sprintf("close: kernel %s still runs; its context and memory are left to the driver until the process exits", h.kernel)}
		}
		_ = d.usable() // releases the parked resources
	}
	d.closed = true
	var errs []error
	for r := range d.live {
		delete(d.live, r)
		if err := r.free(); err != nil {
			errs = append(errs, fmt.Errorf("free %s: %w", r.what, err))
		}
	}
	if err := d.ctx.DestroyStream(d.stream); err != nil {
		errs = append(errs, err)
	}
	if d.broken == nil {
		if f := lastFault.Load(); f != nil {
			d.broken = f.err
		}
	}
	if d.broken != nil {
		// Every call fails with the fault; CUDA cannot be recovered in this
		// process (not even by resetting the primary context), so there is
		// nothing to report: process exit frees it all.
		errs = nil
		_ = d.ctx.Release()
	} else if err := d.ctx.Release(); err != nil {
		errs = append(errs, err)
	}
	if d.nvml != nil {
		d.nvml.close()
	}
	if len(errs) > 0 {
		return fmt.Errorf("close device %d: %w", d.ordinal, errors.Join(errs...))
	}
	return nil
}

// Buffer is device memory, or page-locked host memory mapped into the
// device's address space ([Device.AllocMapped]). It is an [Arg] (its device
// address). Close it when done, before its Device.
type Buffer struct {
	d      *Device
	ptr    cuda.DevicePtr
	n      uint64
	host   cuda.HostMem // mapped buffers
	mapped bool
	res    *resource
}

// Alloc allocates n bytes of device memory (contents undefined).
func (d *Device) Alloc(n uint64) (*Buffer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(); err != nil {
		return nil, fmt.Errorf("allocate %d bytes: %w", n, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("allocate 0 bytes on device %d", d.ordinal)
	}
	p, err := d.ctx.Alloc(n)
	if err != nil {
		return nil, fmt.Errorf("allocate %d bytes on device %d: %w", n, d.ordinal, err)
	}
	b := &Buffer{d: d, ptr: p, n: n}
	b.res = d.track(fmt.Sprintf("device buffer of %d bytes", n), func() error { return d.ctx.Free(p) })
	return b, nil
}

// AllocMapped allocates n bytes of zeroed page-locked host memory mapped into
// the device's address space: kernels write it directly and [Buffer.Bytes]
// reads it while they run, even after a fault.
func (d *Device) AllocMapped(n uint64) (*Buffer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(); err != nil {
		return nil, fmt.Errorf("allocate %d mapped bytes: %w", n, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("allocate 0 mapped bytes on device %d", d.ordinal)
	}
	h, err := d.ctx.HostAlloc(n, true)
	if err != nil {
		return nil, fmt.Errorf("allocate %d mapped bytes on device %d: %w", n, d.ordinal, err)
	}
	clear(h.Bytes())
	b := &Buffer{d: d, ptr: h.Device, n: n, host: h, mapped: true}
	b.res = d.track(fmt.Sprintf("mapped host buffer of %d bytes", n), func() error { return d.ctx.HostFree(h) })
	return b, nil
}

// Len returns the buffer's size in bytes.
func (b *Buffer) Len() uint64 { return b.n }

// Ptr returns the buffer's device address.
func (b *Buffer) Ptr() uint64 { return uint64(b.ptr) }

// Bytes returns a mapped buffer's host view (nil for device memory or a
// freed buffer); a running kernel may change it. It is valid until the
// buffer or its Device is closed.
func (b *Buffer) Bytes() []byte {
	if !b.mapped {
		return nil
	}
	b.d.mu.Lock()
	defer b.d.mu.Unlock()
	if _, ok := b.d.live[b.res]; !ok || b.res == nil {
		return nil
	}
	return b.host.Bytes()
}

func (b *Buffer) check(op string, n int) error {
	if b.res == nil {
		return fmt.Errorf("%s buffer: closed", op)
	}
	if uint64(n) > b.n {
		return fmt.Errorf("%s buffer: %d bytes, the buffer holds %d", op, n, b.n)
	}
	return b.d.usable()
}

// Write copies src to the start of the buffer.
func (b *Buffer) Write(src []byte) error {
	b.d.mu.Lock()
	defer b.d.mu.Unlock()
	if err := b.check("write", len(src)); err != nil {
		return err
	}
	if b.mapped {
		copy(b.host.Bytes(), src)
		return nil
	}
	if err := b.d.ctx.CopyHtoD(b.ptr, src); err != nil {
		return fmt.Errorf("write buffer: %w", err)
	}
	return nil
}

// Read copies the start of the buffer into dst.
func (b *Buffer) Read(dst []byte) error {
	b.d.mu.Lock()
	defer b.d.mu.Unlock()
	if err := b.check("read", len(dst)); err != nil {
		return err
	}
	if b.mapped {
		copy(dst, b.host.Bytes())
		return nil
	}
	if err := b.d.ctx.CopyDtoH(dst, b.ptr); err != nil {
		return fmt.Errorf("read buffer: %w", err)
	}
	return nil
}

// Fill sets every byte of the buffer to v.
func (b *Buffer) Fill(v byte) error {
	b.d.mu.Lock()
	defer b.d.mu.Unlock()
	if err := b.check("fill", 0); err != nil {
		return err
	}
	if b.mapped {
		h := b.host.Bytes()
		for i := range h {
			h[i] = v
		}
		return nil
	}
	if err := b.d.ctx.Memset(b.ptr, v, b.n); err != nil {
		return fmt.Errorf("fill buffer: %w", err)
	}
	return nil
}

// Close frees the buffer; it is idempotent. A buffer a hung kernel may still
// write is freed when that kernel ends.
func (b *Buffer) Close() error {
	if b == nil || b.res == nil {
		return nil
	}
	b.d.mu.Lock()
	defer b.d.mu.Unlock()
	r := b.res
	b.res = nil
	if err := b.d.release(r); err != nil {
		return fmt.Errorf("close buffer: %w", err)
	}
	return nil
}

func (b *Buffer) param() ([8]byte, int, bool, error) {
	if b == nil {
		return [8]byte{}, 8, true, errors.New("nil buffer")
	}
	if b.res == nil {
		return [8]byte{}, 8, true, errors.New("buffer closed")
	}
	return le64(uint64(b.ptr)), 8, true, nil
}

func (b *Buffer) String() string {
	if b == nil {
		return "buffer <nil>"
	}
	kind := "device"
	if b.mapped {
		kind = "mapped"
	}
	return fmt.Sprintf("%s buffer 0x%x (%d bytes)", kind, uint64(b.ptr), b.n)
}
