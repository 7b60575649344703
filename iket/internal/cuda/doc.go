// Package cuda is iket's only cgo package: a thin, checked binding to the
// CUDA driver API (libcuda.so.1) and NVRTC (libnvrtc.so.*), both opened at
// run time with dlopen, so the module builds and its tests run on machines
// with no CUDA toolkit and no GPU.
//
// The few CUDA types iket needs are declared in shim.h; every entry point is a
// function pointer resolved with dlsym into a table (a missing symbol is an
// error naming it). Every call that acts on a context makes that context
// current on the calling OS thread inside the same C call, so callers need
// not lock goroutines to threads. A CUresult becomes a [Result], whose names
// are known even when the driver is absent; "no driver" and "no device" match
// [ErrNoDevice] with errors.Is.
//
// The handles (Context, Module, Stream, Event, ...) are plain values; the
// caller (package iket) owns their lifetimes and releases them exactly once.
// Functions are safe for concurrent use as far as the CUDA driver is.
package cuda
