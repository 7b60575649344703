//go:build cgo

package cuda

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"fmt"
	"unsafe"
)

// DriverVersion returns cuDriverGetVersion's number (13000 for CUDA 13.0).
func DriverVersion() (int, error) {
	var v C.int
	if err := check("cuDriverGetVersion", C.w_driver_version(&v)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// DeviceCount returns the number of CUDA devices.
func DeviceCount() (int, error) {
	var n C.int
	if err := check("cuDeviceGetCount", C.w_device_count(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Context is a device's retained primary context.
type Context struct {
	ctx     C.CUcontext
	dev     C.CUdevice
	Ordinal int
}

// Retain returns device ordinal's primary context, retained: call
// [Context.Release] once.
func Retain(ordinal int) (*Context, error) {
	if err := Init(); err != nil {
		return nil, err
	}
	n, err := DeviceCount()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("open device %d: the driver sees no GPU: %w", ordinal, ErrNoDevice)
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("open device %d: have %d device(s), ordinals 0..%d", ordinal, n, n-1)
	}
	c := &Context{Ordinal: ordinal}
	if err := check("cuDeviceGet", C.w_device_get(&c.dev, C.int(ordinal))); err != nil {
		return nil, err
	}
	if err := check("cuDevicePrimaryCtxRetain", C.w_primary_retain(&c.ctx, c.dev)); err != nil {
		return nil, err
	}
	return c, nil
}

// Release releases the primary context; when it held the last reference the
// driver destroys it with everything allocated in it.
func (c *Context) Release() error {
	return check("cuDevicePrimaryCtxRelease", C.w_primary_release(c.dev))
}

// Reset destroys the device's primary context and everything in it,
// whoever holds it: the recovery after a kernel fault poisoned it.
func (c *Context) Reset() error {
	return check("cuDevicePrimaryCtxReset", C.w_primary_reset(c.dev))
}

// Name returns the device's name.
func (c *Context) Name() (string, error) {
	var buf [maxNameLen]C.char
	if err := check("cuDeviceGetName", C.w_device_name(&buf[0], maxNameLen, c.dev)); err != nil {
		return "", err
	}
	return C.GoString(&buf[0]), nil
}

// UUID returns the device's 16-byte UUID.
func (c *Context) UUID() ([16]byte, error) {
	var u [uuidLen]C.uchar
	var out [16]byte
	if err := check("cuDeviceGetUuid", C.w_device_uuid(&u[0], c.dev)); err != nil {
		return out, err
	}
	for i := range u {
		out[i] = byte(u[i])
	}
	return out, nil
}

// PersistingL2 returns the context's L2 set-aside for persisting lines
// (CU_LIMIT_PERSISTING_L2_CACHE_SIZE), in bytes.
func (c *Context) PersistingL2() (uint64, error) {
	var v C.size_t
	if err := check("cuCtxGetLimit(persisting L2)", C.w_persisting_limit(c.ctx, &v)); err != nil {
		return 0, err
	}
	return uint64(v), nil
}

// SetPersistingL2 sets the context's L2 set-aside for persisting lines.
func (c *Context) SetPersistingL2(n uint64) error {
	return check("cuCtxSetLimit(persisting L2)", C.w_set_persisting_limit(c.ctx, C.size_t(n)))
}

// ResetPersistingL2 makes every persisting line in the L2 normal.
func (c *Context) ResetPersistingL2() error {
	return check("cuCtxResetPersistingL2Cache", C.w_reset_persisting(c.ctx))
}

// Attr returns a device attribute.
func (c *Context) Attr(attr int) (int, error) {
	var v C.int
	if err := check(fmt.Sprintf("cuDeviceGetAttribute(%d)", attr), C.w_device_attr(&v, C.int(attr), c.dev)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// TotalMem returns the device's memory in bytes.
func (c *Context) TotalMem() (uint64, error) {
	var n C.size_t
	if err := check("cuDeviceTotalMem", C.w_device_total_mem(&n, c.dev)); err != nil {
		return 0, err
	}
	return uint64(n), nil
}

// MemInfo returns free and total device memory.
func (c *Context) MemInfo() (free, total uint64, err error) {
	var f, t C.size_t
	if err := check("cuMemGetInfo", C.w_mem_info(c.ctx, &f, &t)); err != nil {
		return 0, 0, err
	}
	return uint64(f), uint64(t), nil
}

// Synchronize blocks until all work in the context finished.
func (c *Context) Synchronize() error { return check("cuCtxSynchronize", C.w_ctx_sync(c.ctx)) }

// Alloc allocates n bytes of device memory.
func (c *Context) Alloc(n uint64) (DevicePtr, error) {
	var p C.CUdeviceptr
	if err := check(fmt.Sprintf("cuMemAlloc(%d bytes)", n), C.w_mem_alloc(c.ctx, &p, C.size_t(n))); err != nil {
		return 0, err
	}
	return DevicePtr(p), nil
}

// Free frees device memory from [Context.Alloc].
func (c *Context) Free(p DevicePtr) error {
	return check("cuMemFree", C.w_mem_free(c.ctx, C.CUdeviceptr(p)))
}

// Memset sets n bytes at p to v (synchronous with respect to the host).
func (c *Context) Memset(p DevicePtr, v byte, n uint64) error {
	return check("cuMemsetD8", C.w_memset_d8(c.ctx, C.CUdeviceptr(p), C.uchar(v), C.size_t(n)))
}

// MemsetAsync queues a memset of n bytes at p on s.
func (c *Context) MemsetAsync(p DevicePtr, v byte, n uint64, s Stream) error {
	return check("cuMemsetD8Async", C.w_memset_d8_async(c.ctx, C.CUdeviceptr(p), C.uchar(v), C.size_t(n), s.s))
}

// CopyHtoD copies src to device address p.
func (c *Context) CopyHtoD(p DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return check("cuMemcpyHtoD", C.w_htod(c.ctx, C.CUdeviceptr(p), unsafe.Pointer(&src[0]), C.size_t(len(src))))
}

// CopyDtoH copies len(dst) bytes from device address p.
func (c *Context) CopyDtoH(dst []byte, p DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	return check("cuMemcpyDtoH", C.w_dtoh(c.ctx, unsafe.Pointer(&dst[0]), C.CUdeviceptr(p), C.size_t(len(dst))))
}

// CopyDtoHAsync queues a copy of dst.Len() bytes from p into pinned memory.
func (c *Context) CopyDtoHAsync(dst HostMem, p DevicePtr, s Stream) error {
	if dst.n == 0 {
		return nil
	}
	return check("cuMemcpyDtoHAsync", C.w_dtoh_async(c.ctx, dst.p, C.CUdeviceptr(p), C.size_t(dst.n), s.s))
}

// HostMem is page-locked host memory from cuMemHostAlloc.
type HostMem struct {
	p unsafe.Pointer
	n uint64
	// Device is the memory's device address when it was allocated mapped.
	Device DevicePtr
}

// Len returns the size in bytes.
func (h HostMem) Len() uint64 { return h.n }

// Bytes returns the memory as a slice; it is valid until [Context.HostFree].
// The device may write it concurrently while a kernel runs.
func (h HostMem) Bytes() []byte {
	if h.p == nil {
		return nil
	}
	return unsafe.Slice((*byte)(h.p), h.n)
}

// HostAlloc allocates n bytes of page-locked host memory; mapped also maps it
// into the device's address space (HostMem.Device).
func (c *Context) HostAlloc(n uint64, mapped bool) (HostMem, error) {
	flags := C.uint(hostAllocPortable)
	if mapped {
		flags |= hostAllocDeviceMap
	}
	var p unsafe.Pointer
	if err := check(fmt.Sprintf("cuMemHostAlloc(%d bytes)", n), C.w_host_alloc(c.ctx, &p, C.size_t(n), flags)); err != nil {
		return HostMem{}, err
	}
	h := HostMem{p: p, n: n}
	if mapped {
		var d C.CUdeviceptr
		if err := check("cuMemHostGetDevicePointer", C.w_host_dptr(c.ctx, &d, p)); err != nil {
			C.w_host_free(c.ctx, p)
			return HostMem{}, err
		}
		h.Device = DevicePtr(d)
	}
	return h, nil
}

// HostFree frees memory from [Context.HostAlloc].
func (c *Context) HostFree(h HostMem) error {
	if h.p == nil {
		return nil
	}
	return check("cuMemFreeHost", C.w_host_free(c.ctx, h.p))
}

// Module is a loaded CUmodule.
type Module struct{ m C.CUmodule }

// LoadModule loads a cubin, fatbin or PTX image (PTX must be text; a NUL is
// appended here). The JIT's error log, if any, is in the error.
func (c *Context) LoadModule(image []byte) (Module, error) {
	if len(image) == 0 {
		return Module{}, fmt.Errorf("cuModuleLoadDataEx: empty image")
	}
	img := C.CBytes(append(image[:len(image):len(image)], 0))
	defer C.free(img)
	logBuf := (*C.char)(C.calloc(errorLogSize, 1))
	defer C.free(unsafe.Pointer(logBuf))
	var m C.CUmodule
	if r := C.w_module_load(c.ctx, &m, img, logBuf, errorLogSize); r != 0 {
		err := error(&Error{Op: "cuModuleLoadDataEx", Result: Result(r)})
		if log := C.GoString(logBuf); log != "" {
			err = fmt.Errorf("%w\n%s", err, log)
		}
		return Module{}, err
	}
	return Module{m: m}, nil
}

// Unload unloads the module.
func (c *Context) Unload(m Module) error {
	return check("cuModuleUnload", C.w_module_unload(c.ctx, m.m))
}

// Function is a kernel in a loaded module.
type Function struct{ f C.CUfunction }

// Function looks up a kernel by its (extern "C" or mangled) name.
func (c *Context) Function(m Module, name string) (Function, error) {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	var f C.CUfunction
	if err := check(fmt.Sprintf("cuModuleGetFunction(%q)", name), C.w_module_function(c.ctx, &f, m.m, cn)); err != nil {
		return Function{}, err
	}
	return Function{f: f}, nil
}

// Global returns the address and size of a module's __device__ variable.
func (c *Context) Global(m Module, name string) (DevicePtr, uint64, error) {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	var p C.CUdeviceptr
	var n C.size_t
	if err := check(fmt.Sprintf("cuModuleGetGlobal(%q)", name), C.w_module_global(c.ctx, &p, &n, m.m, cn)); err != nil {
		return 0, 0, err
	}
	return DevicePtr(p), uint64(n), nil
}

// FuncAttr returns a function attribute.
func (c *Context) FuncAttr(f Function, attr int) (int, error) {
	var v C.int
	if err := check(fmt.Sprintf("cuFuncGetAttribute(%d)", attr), C.w_func_get_attr(c.ctx, &v, C.int(attr), f.f)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// SetFuncAttr sets a function attribute.
func (c *Context) SetFuncAttr(f Function, attr, v int) error {
	return check(fmt.Sprintf("cuFuncSetAttribute(%d, %d)", attr, v), C.w_func_set_attr(c.ctx, f.f, C.int(attr), C.int(v)))
}

// Occupancy returns how many CTAs of blockSize threads and smem dynamic
// shared bytes fit on one SM.
func (c *Context) Occupancy(f Function, blockSize int, smem uint32) (int, error) {
	var n C.int
	if err := check("cuOccupancyMaxActiveBlocksPerMultiprocessor", C.w_occupancy(c.ctx, &n, f.f, C.int(blockSize), C.size_t(smem))); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Stream is a CUstream.
type Stream struct{ s C.CUstream }

// NewStream creates a stream. A blocking stream (nonBlocking false) is
// ordered with the legacy default stream, which the synchronous copies and
// memsets use; a non-blocking one runs beside it.
func (c *Context) NewStream(nonBlocking bool) (Stream, error) {
	var flags C.uint
	if nonBlocking {
		flags = streamNonBlocking
	}
	var s C.CUstream
	if err := check("cuStreamCreate", C.w_stream_create(c.ctx, &s, flags)); err != nil {
		return Stream{}, err
	}
	return Stream{s: s}, nil
}

// DestroyStream destroys s; work queued on it still completes.
func (c *Context) DestroyStream(s Stream) error {
	return check("cuStreamDestroy", C.w_stream_destroy(c.ctx, s.s))
}

// StreamDone reports whether all work on s finished; an error is the first
// failure of that work (a kernel fault) or of the query.
func (c *Context) StreamDone(s Stream) (bool, error) {
	r := C.w_stream_query(c.ctx, s.s)
	if Result(r) == ErrNotReady {
		return false, nil
	}
	return true, check("cuStreamQuery", r)
}

// Event is a CUevent.
type Event struct{ e C.CUevent }

// NewEvent creates an event; timing selects whether it records time.
func (c *Context) NewEvent(timing bool) (Event, error) {
	var flags C.uint
	if !timing {
		flags = eventDisableTiming
	}
	var e C.CUevent
	if err := check("cuEventCreate", C.w_event_create(c.ctx, &e, flags)); err != nil {
		return Event{}, err
	}
	return Event{e: e}, nil
}

// DestroyEvent destroys e.
func (c *Context) DestroyEvent(e Event) error {
	return check("cuEventDestroy", C.w_event_destroy(c.ctx, e.e))
}

// Record queues e on s.
func (c *Context) Record(e Event, s Stream) error {
	return check("cuEventRecord", C.w_event_record(c.ctx, e.e, s.s))
}

// EventDone reports whether e completed; an error is a failure of the work
// before it or of the query.
func (c *Context) EventDone(e Event) (bool, error) {
	r := C.w_event_query(c.ctx, e.e)
	if Result(r) == ErrNotReady {
		return false, nil
	}
	return true, check("cuEventQuery", r)
}

// Elapsed returns the milliseconds between two completed events.
func (c *Context) Elapsed(start, end Event) (float32, error) {
	var ms C.float
	if err := check("cuEventElapsedTime", C.w_event_elapsed(c.ctx, &ms, start.e, end.e)); err != nil {
		return 0, err
	}
	return float32(ms), nil
}

// Dims is a launch's geometry. A zero Cluster launches without clusters;
// a Window of bytes keeps the lines it covers in the L2's set-aside
// (persisting; the launch's access-policy window).
type Dims struct {
	Grid, Block, Cluster [3]uint32
	SharedBytes          uint32
	Window               Window
}

// Launch queues f on s with cuLaunchKernelEx. params holds the packed
// argument values; offsets[i] is where argument i starts in it.
func (c *Context) Launch(f Function, d Dims, s Stream, params []byte, offsets []uintptr) error {
	if len(offsets) > MaxParams {
		return fmt.Errorf("cuLaunchKernelEx: %d arguments, at most %d", len(offsets), MaxParams)
	}
	for i, o := range offsets {
		if o >= uintptr(len(params)) {
			return fmt.Errorf("cuLaunchKernelEx: argument %d at offset %d is outside the %d-byte parameter block", i, o, len(params))
		}
	}
	var l C.iket_launch
	for i := 0; i < 3; i++ {
		l.grid[i] = C.uint(d.Grid[i])
		l.block[i] = C.uint(d.Block[i])
		l.cluster[i] = C.uint(d.Cluster[i])
	}
	l.shared = C.uint(d.SharedBytes)
	l.window_base = C.ulonglong(d.Window.Base)
	l.window_bytes = C.ulonglong(d.Window.Bytes)
	// C memory: the driver reads the values during the call.
	var blob unsafe.Pointer
	var offs *C.size_t
	if len(params) > 0 {
		blob = C.CBytes(params)
		defer C.free(blob)
	}
	if len(offsets) > 0 {
		o := (*C.size_t)(C.malloc(C.size_t(len(offsets)) * C.size_t(unsafe.Sizeof(C.size_t(0)))))
		defer C.free(unsafe.Pointer(o))
		dst := unsafe.Slice(o, len(offsets))
		for i, v := range offsets {
			dst[i] = C.size_t(v)
		}
		offs = o
	}
	return check("cuLaunchKernelEx", C.w_launch(c.ctx, f.f, &l, s.s, (*C.uchar)(blob), offs, C.int(len(offsets))))
}
