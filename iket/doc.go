// Package iket is the host runtime of iket: it opens a GPU through the CUDA
// driver (loaded at run time, see iket/internal/cuda), compiles kernels with
// NVRTC in two builds (instrumented with -DIKET_ENABLE=1 and uninstrumented),
// reads a module's name table, traces one launch into per-warp buffers,
// times both builds with CUDA events, and writes capture files (through
// trace.WriteCapture, the format's one writer).
//
// The flow for one kernel:
//
//	dev, err := iket.OpenDevice(0)            // errors.Is(err, iket.ErrNoDevice) without a GPU
//	defer dev.Close()
//	inst, err := dev.Compile(src, true, "")   // sm_90a by default
//	res, err := inst.Trace(cfg, args, iket.TraceOptions{Capacity: 1024})
//	lat, err := iket.Time(base, inst, cfg, args, iket.TimingOptions{})
//	err = iket.WriteCapture("trace.iket", meta, res)
//
// [Run] does all of it for a [Program] (package builtin holds the built-in
// ones, package spec makes one from a spec file).
//
// Failures a kernel causes are typed: a fault is a [*KernelError], a kernel
// that does not finish within [TraceOptions.Timeout] a [*HangError]; both
// carry whatever warp buffers could be read. A bad launch configuration is a
// [*ConfigError]. A [Device] serialises its own calls and is safe for
// concurrent use; after a fault or a hang it refuses new work (see
// [Device.Close] for what happens to the context).
package iket
