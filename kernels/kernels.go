// Package kernels embeds iket's device header and the built-in example
// kernels, so the iket binary can compile them with NVRTC on a machine that
// has a CUDA driver but no source tree.
package kernels

import "embed"

// FS holds include/iket.cuh and examples/*.cu.
//
//go:embed include/iket.cuh examples/*.cu
var FS embed.FS

// HeaderName is the include name kernels use: #include "iket.cuh".
const HeaderName = "iket.cuh"

// Header returns the device header's source.
func Header() []byte {
	b, err := FS.ReadFile("include/iket.cuh")
	if err != nil {
		panic("kernels: embedded header missing: " + err.Error()) // build invariant
	}
	return b
}

// Example returns the source of a built-in example kernel by file name
// ("warp_roles.cu").
func Example(name string) ([]byte, error) { return FS.ReadFile("examples/" + name) }
