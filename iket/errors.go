package iket

import (
	"errors"
	"fmt"
	"time"

	"github.com/iket-trace/iket/iket/internal/cuda"
)

// ErrNoDevice is matched (errors.Is) by every error meaning there is no CUDA
// driver or no GPU on this machine; GPU tests skip on it.
var ErrNoDevice = cuda.ErrNoDevice

// ErrDeviceUnusable is matched by errors from a [Device] that is closed, that
// a hung kernel still occupies, or, after a kernel fault anywhere in the
// process, by every Device method that needs the GPU and by [OpenDevice]. A
// fault (a sticky CUDA error such as CUDA_ERROR_ILLEGAL_ADDRESS) ends the
// process's use of CUDA: no context, old or new, works again until the
// process exits. Such an error names the original fault and unwraps to it.
var ErrDeviceUnusable = errors.New("device unusable")

// ConfigError is an invalid launch configuration or argument list, found
// before anything is launched.
type ConfigError struct {
	Kernel string
	Field  string // "grid", "block", "cluster", "shared_bytes", "args", "kernel", "capacity", ...
	Msg    string
}

func (e *ConfigError) Error() string {
	if e.Kernel == "" {
		return fmt.Sprintf("launch config: %s: %s", e.Field, e.Msg)
	}
	return fmt.Sprintf("launch config of %s: %s: %s", e.Kernel, e.Field, e.Msg)
}

// KernelError is a launch that failed on the device: a fault (illegal
// address, trap, ...) or a launch the driver refused. Code is the CUDA error
// name (cuGetErrorName). Result holds whatever the warp buffers held when
// the fault was seen (nil when they could not be read: only host-mapped
// buffers, [TraceOptions.Watch], survive a fault).
type KernelError struct {
	Kernel string
	Config LaunchConfig
	Code   string // e.g. "CUDA_ERROR_ILLEGAL_ADDRESS"
	Err    error  // the driver error
	Result *TraceResult
}

func (e *KernelError) Error() string {
	return fmt.Sprintf("kernel %s %s failed: %v", e.Kernel, e.Config, e.Err)
}

// Unwrap returns the driver error.
func (e *KernelError) Unwrap() error { return e.Err }

// HangError is a kernel that did not finish within the timeout. Result holds
// the partial warp buffers (always with [TraceOptions.Watch]; without it a
// best-effort copy on a second stream, nil when that copy did not finish).
// The kernel keeps running: the [Device] refuses new work until it ends.
type HangError struct {
	Kernel  string
	Config  LaunchConfig
	Timeout time.Duration
	Result  *TraceResult
}

func (e *HangError) Error() string {
	partial := "no warp buffers could be read"
	if e.Result != nil {
		partial = "partial warp buffers read"
	}
	return fmt.Sprintf("kernel %s %s did not finish within %v (%s)", e.Kernel, e.Config, e.Timeout, partial)
}

// deviceError wraps a device-state refusal so it matches ErrDeviceUnusable
// and keeps the cause.
type deviceError struct {
	ordinal int
	msg     string
	cause   error
}

func (e *deviceError) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("device %d: %s: %v", e.ordinal, e.msg, e.cause)
	}
	return fmt.Sprintf("device %d: %s", e.ordinal, e.msg)
}

func (e *deviceError) Is(target error) bool { return target == ErrDeviceUnusable }
func (e *deviceError) Unwrap() error        { return e.cause }

// codeOf returns the CUDA error name inside err, or "".
func codeOf(err error) string {
	var r cuda.Result
	if errors.As(err, &r) {
		return r.Name()
	}
	return ""
}

// sticky reports whether err is a kernel fault that poisons the context.
func sticky(err error) bool {
	var r cuda.Result
	return errors.As(err, &r) && r.Sticky()
}
