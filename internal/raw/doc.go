// Package raw is the device's layout of a warp slot (docs/FORMAT.md): the
// 8-byte records and the 64-byte warp header exactly as
// kernels/include/iket.cuh writes them, unvalidated. Package trace decodes
// and validates them; the runtime (package iket), the emulator
// (internal/emu) and tests write or inspect them. Users of a decoded trace
// never need it.
package raw
