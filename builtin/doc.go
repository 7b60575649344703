// Package builtin holds iket's built-in example programs: warp_roles (the
// seed example), fault and hang (which exercise the runtime's fault and
// timeout paths) and calibrate (the clock-alignment kernel read by
// `iket calibrate`). Each is an [iket.Program]: its kernel embedded in
// package kernels, its launch configuration for a GPU's SM count, and a
// Setup that allocates random (never all-zero) inputs and an exact output
// check. [Lookup] finds one by name; [Programs] lists them.
//
// The programs are registered once, at package initialisation, and never
// change: the functions here are safe for concurrent use. The returned
// programs are shared; do not modify them.
package builtin
