//go:build cgo

package cuda

import (
	"errors"
	"strings"
	"testing"
)

func TestInitDriverMissingLibrary(t *testing.T) {
	err := initDriver("libcuda-iket-test-absent.so.1")
	if err == nil {
		t.Fatal("initDriver succeeded with a library that does not exist")
	}
	if !errors.Is(err, ErrNoDevice) {
		t.Errorf("errors.Is(%v, ErrNoDevice) = false", err)
	}
	for _, want := range []string{"load CUDA driver", "dlopen libcuda-iket-test-absent.so.1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

// A library that loads but lacks the driver's symbols yields an error that
// names the first missing symbol, and is not "no device".
func TestInitDriverMissingSymbol(t *testing.T) {
	err := initDriver("libm.so.6")
	if err == nil {
		t.Fatal("initDriver succeeded with libm")
	}
	var se *SymbolError
	if !errors.As(err, &se) {
		t.Fatalf("error %v is not a *SymbolError", err)
	}
	if se.Symbol != "cuInit" || se.Library != "libm.so.6" {
		t.Errorf("SymbolError = %+v, want symbol cuInit in libm.so.6", se)
	}
	if errors.Is(err, ErrNoDevice) {
		t.Errorf("a missing symbol matched ErrNoDevice: %v", err)
	}
}

func TestResultNames(t *testing.T) {
	tests := []struct {
		r        Result
		name     string
		noDevice bool
		sticky   bool
	}{
		{ErrInvalidValue, "CUDA_ERROR_INVALID_VALUE", false, false},
		{ErrNoDeviceResult, "CUDA_ERROR_NO_DEVICE", true, false},
		{ErrStubLibrary, "CUDA_ERROR_STUB_LIBRARY", true, false},
		{ErrNotReady, "CUDA_ERROR_NOT_READY", false, false},
		{ErrIllegalAddress, "CUDA_ERROR_ILLEGAL_ADDRESS", false, true},
		{ErrLaunchFailed, "CUDA_ERROR_LAUNCH_FAILED", false, true},
		{ErrIllegalInstr, "CUDA_ERROR_ILLEGAL_INSTRUCTION", false, true},
		{912, "CUDA_ERROR_INVALID_CLUSTER_SIZE", false, false},
		{12345, "CUresult(12345)", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.Name(); got != tt.name {
				t.Errorf("Name() = %q, want %q", got, tt.name)
			}
			if got := errors.Is(tt.r, ErrNoDevice); got != tt.noDevice {
				t.Errorf("errors.Is(ErrNoDevice) = %v, want %v", got, tt.noDevice)
			}
			if got := tt.r.Sticky(); got != tt.sticky {
				t.Errorf("Sticky() = %v, want %v", got, tt.sticky)
			}
			wrapped := &Error{Op: "cuMemAlloc", Result: tt.r}
			if !strings.HasPrefix(wrapped.Error(), "cuMemAlloc: "+tt.name) {
				t.Errorf("Error() = %q, want prefix %q", wrapped.Error(), "cuMemAlloc: "+tt.name)
			}
			var r Result
			if !errors.As(wrapped, &r) || r != tt.r {
				t.Errorf("errors.As(Error) = %v, want %v", r, tt.r)
			}
		})
	}
}

// Every driver symbol slot has a distinct, non-empty name: shim.h's enum and
// shim.c's name list stay in step.
func TestSymbolTable(t *testing.T) {
	names := symbolNames()
	seen := map[string]bool{}
	for i, n := range names {
		if n == "" || !strings.HasPrefix(n, "cu") {
			t.Errorf("slot %d: name %q", i, n)
		}
		if seen[n] {
			t.Errorf("slot %d: %q listed twice", i, n)
		}
		seen[n] = true
	}
	for _, want := range []string{"cuInit", "cuLaunchKernelEx", "cuMemAlloc_v2", "cuModuleGetGlobal_v2", "cuEventElapsedTime_v2|cuEventElapsedTime", "cuCtxResetPersistingL2Cache"} {
		if !seen[want] {
			t.Errorf("symbol table lacks %q", want)
		}
	}
}

func TestLaunchChecksOffsets(t *testing.T) {
	var c Context
	err := c.Launch(Function{}, Dims{}, Stream{}, make([]byte, 8), []uintptr{0, 8})
	if err == nil || !strings.Contains(err.Error(), "argument 1 at offset 8") {
		t.Errorf("Launch with an offset past the block: err = %v", err)
	}
	err = c.Launch(Function{}, Dims{}, Stream{}, make([]byte, 8), make([]uintptr, MaxParams+1))
	if err == nil || !strings.Contains(err.Error(), "arguments, at most") {
		t.Errorf("Launch with too many arguments: err = %v", err)
	}
}

func TestCompileWithoutNVRTC(t *testing.T) {
	if LoadNVRTC() == nil {
		t.Skip("NVRTC is installed here; the missing-library path cannot be tested")
	}
	_, _, err := Compile("k.cu", []byte("__global__ void k(){}"), nil, nil, false)
	if err == nil || !strings.Contains(err.Error(), "load NVRTC") || !strings.Contains(err.Error(), "libnvrtc.so.13") {
		t.Errorf("Compile without NVRTC: err = %v, want one naming libnvrtc.so.13", err)
	}
}
