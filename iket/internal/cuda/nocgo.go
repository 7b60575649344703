//go:build !cgo

package cuda

import (
	"errors"
	"fmt"
)

// A build without cgo (CGO_ENABLED=0, or a cross-compile such as
// GOOS=darwin) cannot dlopen the driver: this file gives the package's API
// with every entry point failing with errNoCgo, which matches
// [ErrNoDevice], so that the commands that read captures work and the ones
// that need a GPU say why they cannot.

// ErrNoDevice is matched (errors.Is) by every error that means "no usable
// CUDA driver or GPU here": in a build without cgo, every call.
var ErrNoDevice = errors.New("no CUDA driver or device")

var errNoCgo = fmt.Errorf("%w: this iket was built without cgo (CGO_ENABLED=0) and cannot load the CUDA driver or run kernels; build it with cgo on Linux", ErrNoDevice)

// DriverLibrary is the file name dlopen'ed for the driver API.
const DriverLibrary = "libcuda.so.1"

// NVRTCLibraries are tried in order when the first compile needs NVRTC.
var NVRTCLibraries = []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}

// SymbolError reports a symbol a loaded library lacks.
type SymbolError struct {
	Library string
	Symbol  string
	Reason  string
}

func (e *SymbolError) Error() string {
	return fmt.Sprintf("resolve %s in %s: %s", e.Symbol, e.Library, e.Reason)
}

// Result is a CUresult. It is an error; [Success] is never returned as one.
type Result int

// Results iket branches on.
const (
	Success           Result = 0
	ErrNotFound       Result = 500
	ErrIllegalAddress Result = 700
)

// Name returns "CUresult(n)": without the driver there is no name table.
func (r Result) Name() string { return fmt.Sprintf("CUresult(%d)", int(r)) }

// Description returns "".
func (r Result) Description() string { return "" }

func (r Result) Error() string { return r.Name() }

// Is reports false: no CUresult comes from a build without cgo.
func (r Result) Is(target error) bool { return false }

// Sticky reports false.
func (r Result) Sticky() bool { return false }

// Error is a failed driver call: which entry point and its CUresult.
type Error struct {
	Op     string
	Result Result
}

func (e *Error) Error() string { return e.Op + ": " + e.Result.Error() }

// Unwrap returns the CUresult.
func (e *Error) Unwrap() error { return e.Result }

// RTCResult is an nvrtcResult.
type RTCResult int

func (r RTCResult) Error() string { return fmt.Sprintf("nvrtcResult(%d)", int(r)) }

// CompileError is a failed NVRTC compile with the compiler's log.
type CompileError struct {
	Name   string
	Result RTCResult
	Log    string
}

func (e *CompileError) Error() string { return fmt.Sprintf("nvrtc compile %s: %v", e.Name, e.Result) }

// Unwrap returns the nvrtcResult.
func (e *CompileError) Unwrap() error { return e.Result }

// Init fails: no driver can be loaded without cgo.
func Init() error { return errNoCgo }

// LoadNVRTC fails: no NVRTC can be loaded without cgo.
func LoadNVRTC() error { return errNoCgo }

// NVRTCVersion fails.
func NVRTCVersion() (major, minor int, err error) { return 0, 0, errNoCgo }

// Compile fails.
func Compile(name string, src []byte, headers map[string][]byte, opts []string, cubin bool) (image []byte, log string, err error) {
	return nil, "", errNoCgo
}

// DriverVersion fails.
func DriverVersion() (int, error) { return 0, errNoCgo }

// DeviceCount fails.
func DeviceCount() (int, error) { return 0, errNoCgo }

// Context is a retained primary context; none exists without cgo.
type Context struct {
	Ordinal int
}

// Retain fails.
func Retain(ordinal int) (*Context, error) { return nil, errNoCgo }

// HostMem is page-locked host memory; none exists without cgo.
type HostMem struct {
	// Device is the memory's device address when it was allocated mapped.
	Device DevicePtr
}

// Len returns 0.
func (h HostMem) Len() uint64 { return 0 }

// Bytes returns nil.
func (h HostMem) Bytes() []byte { return nil }

// Module is a loaded module.
type Module struct{}

// Function is a kernel of a module.
type Function struct{}

// Stream is a CUDA stream.
type Stream struct{}

// Event is a CUDA event.
type Event struct{}

// Dims is a launch's configuration.
type Dims struct {
	Grid, Block, Cluster [3]uint32
	SharedBytes          uint32
	Window               Window
}

// The Context methods all fail: no Context can be made without cgo.

func (c *Context) Release() error                             { return errNoCgo }
func (c *Context) Reset() error                               { return errNoCgo }
func (c *Context) Name() (string, error)                      { return "", errNoCgo }
func (c *Context) UUID() ([16]byte, error)                    { return [16]byte{}, errNoCgo }
func (c *Context) Attr(attr int) (int, error)                 { return 0, errNoCgo }
func (c *Context) PersistingL2() (uint64, error)              { return 0, errNoCgo }
func (c *Context) SetPersistingL2(n uint64) error             { return errNoCgo }
func (c *Context) ResetPersistingL2() error                   { return errNoCgo }
func (c *Context) TotalMem() (uint64, error)                  { return 0, errNoCgo }
func (c *Context) MemInfo() (free, total uint64, err error)   { return 0, 0, errNoCgo }
func (c *Context) Synchronize() error                         { return errNoCgo }
func (c *Context) Alloc(n uint64) (DevicePtr, error)          { return 0, errNoCgo }
func (c *Context) Free(p DevicePtr) error                     { return errNoCgo }
func (c *Context) Memset(p DevicePtr, v byte, n uint64) error { return errNoCgo }
func (c *Context) MemsetAsync(p DevicePtr, v byte, n uint64, s Stream) error {
	return errNoCgo
}
func (c *Context) CopyHtoD(p DevicePtr, src []byte) error { return errNoCgo }
func (c *Context) CopyDtoH(dst []byte, p DevicePtr) error { return errNoCgo }
func (c *Context) CopyDtoHAsync(dst HostMem, p DevicePtr, s Stream) error {
	return errNoCgo
}
func (c *Context) HostAlloc(n uint64, mapped bool) (HostMem, error) { return HostMem{}, errNoCgo }
func (c *Context) HostFree(h HostMem) error                         { return errNoCgo }
func (c *Context) LoadModule(image []byte) (Module, error)          { return Module{}, errNoCgo }
func (c *Context) Unload(m Module) error                            { return errNoCgo }
func (c *Context) Function(m Module, name string) (Function, error) {
	return Function{}, errNoCgo
}
func (c *Context) Global(m Module, name string) (DevicePtr, uint64, error) {
	return 0, 0, errNoCgo
}
func (c *Context) FuncAttr(f Function, attr int) (int, error) { return 0, errNoCgo }
func (c *Context) SetFuncAttr(f Function, attr, v int) error  { return errNoCgo }
func (c *Context) Occupancy(f Function, blockSize int, smem uint32) (int, error) {
	return 0, errNoCgo
}
func (c *Context) NewStream(nonBlocking bool) (Stream, error) { return Stream{}, errNoCgo }
func (c *Context) DestroyStream(s Stream) error               { return errNoCgo }
func (c *Context) StreamDone(s Stream) (bool, error)          { return false, errNoCgo }
func (c *Context) NewEvent(timing bool) (Event, error)        { return Event{}, errNoCgo }
func (c *Context) DestroyEvent(e Event) error                 { return errNoCgo }
func (c *Context) Record(e Event, s Stream) error             { return errNoCgo }
func (c *Context) EventDone(e Event) (bool, error)            { return false, errNoCgo }
func (c *Context) Elapsed(start, end Event) (float32, error)  { return 0, errNoCgo }
func (c *Context) Launch(f Function, d Dims, s Stream, params []byte, offsets []uintptr) error {
	return errNoCgo
}
