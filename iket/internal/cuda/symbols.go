//go:build cgo

package cuda

// #cgo LDFLAGS: -ldl
// #include <dlfcn.h>
// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// ErrNoDevice is matched (errors.Is) by every error that means "no usable
// CUDA driver or GPU here": the driver library is missing, it has no GPU, or
// it is a stub.
var ErrNoDevice = errors.New("no CUDA driver or device")

// DriverLibrary is the file name dlopen'ed for the driver API.
const DriverLibrary = "libcuda.so.1"

// NVRTCLibraries are tried in order when the first compile needs NVRTC.
var NVRTCLibraries = []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}

// SymbolError reports a symbol a loaded library lacks.
type SymbolError struct {
	Library string
	Symbol  string // the names tried, "a|b"
	Reason  string // dlerror's text
}

func (e *SymbolError) Error() string {
	return fmt.Sprintf("resolve %s in %s: %s", e.Symbol, e.Library, e.Reason)
}

// withOSLock runs f with the goroutine locked to its thread, so dlerror reads
// the error of the dlopen/dlsym made on that same thread.
func withOSLock(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return f()
}

func dlError() string {
	if s := C.dlerror(); s != nil {
		return C.GoString(s)
	}
	return "unknown dlerror"
}

// library is one dlopen'ed shared object whose symbols fill a C table.
type library struct {
	name   string
	handle unsafe.Pointer
}

func dlopen(name string) (*library, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var lib *library
	err := withOSLock(func() error {
		C.dlerror() // clear a stale error
		h := C.dlopen(cname, C.RTLD_NOW|C.RTLD_LOCAL)
		if h == nil {
			return fmt.Errorf("dlopen %s: %s", name, dlError())
		}
		lib = &library{name: name, handle: h}
		return nil
	})
	return lib, err
}

// resolve looks up each entry of names ("a|b" tries a, then b) and stores
// the pointers in table. It stores nothing when one is missing.
func (l *library) resolve(names []*C.char, table []unsafe.Pointer) error {
	ptrs := make([]unsafe.Pointer, len(names))
	for i, cn := range names {
		alts := C.GoString(cn)
		err := withOSLock(func() error {
			var reason string
			for _, alt := range strings.Split(alts, "|") {
				cs := C.CString(alt)
				C.dlerror()
				p := C.dlsym(l.handle, cs)
				C.free(unsafe.Pointer(cs))
				if p != nil {
					ptrs[i] = p
					return nil
				}
				reason = dlError()
			}
			return &SymbolError{Library: l.name, Symbol: alts, Reason: reason}
		})
		if err != nil {
			return err
		}
	}
	copy(table, ptrs)
	return nil
}

func (l *library) close() {
	_ = withOSLock(func() error {
		C.dlclose(l.handle)
		return nil
	})
}

var (
	driverOnce sync.Once
	driverErr  error
	rtcMu      sync.Mutex
	rtcLib     *library
)

// Init loads libcuda.so.1, resolves its symbols and calls cuInit, once per
// process; later calls return the first outcome. Errors meaning "no driver"
// or "no device" match [ErrNoDevice].
func Init() error {
	driverOnce.Do(func() { driverErr = initDriver(DriverLibrary) })
	return driverErr
}

func initDriver(name string) error {
	lib, err := dlopen(name)
	if err != nil {
		return fmt.Errorf("load CUDA driver: %w: %w", err, ErrNoDevice)
	}
	names := unsafe.Slice(&C.iket_cu_names[0], C.CU_NUM)
	table := unsafe.Slice((*unsafe.Pointer)(unsafe.Pointer(&C.iket_cu[0])), C.CU_NUM)
	if err := lib.resolve(names, table); err != nil {
		lib.close()
		return fmt.Errorf("load CUDA driver: %w", err)
	}
	if r := Result(C.w_init()); r != Success {
		return fmt.Errorf("load CUDA driver: %s: cuInit: %w", name, r)
	}
	return nil
}

// LoadNVRTC opens the first of [NVRTCLibraries] that loads and resolves its
// symbols; it retries on each call until one succeeds.
func LoadNVRTC() error {
	rtcMu.Lock()
	defer rtcMu.Unlock()
	if rtcLib != nil {
		return nil
	}
	var errs []error
	names := unsafe.Slice(&C.iket_rtc_names[0], C.RTC_NUM)
	table := unsafe.Slice((*unsafe.Pointer)(unsafe.Pointer(&C.iket_rtc[0])), C.RTC_NUM)
	for _, n := range NVRTCLibraries {
		lib, err := dlopen(n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := lib.resolve(names, table); err != nil {
			lib.close()
			errs = append(errs, err)
			continue
		}
		rtcLib = lib
		return nil
	}
	return fmt.Errorf("load NVRTC: %w", errors.Join(errs...))
}

// symbolNames returns the driver symbol table's entries, for tests.
func symbolNames() []string {
	names := unsafe.Slice(&C.iket_cu_names[0], C.CU_NUM)
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = C.GoString(n)
	}
	return out
}
