// Package bundled holds the capture that ships inside iket: warp_roles
// recorded on an NVIDIA H200 by scripts/gpu.sh. `iket demo` replays it on a
// machine without a GPU, and tests across the module decode it as a fixture.
package bundled

import (
	"bytes"
	"embed"
	"fmt"

	"github.com/iket-trace/iket/trace"
)

//go:embed testdata
var files embed.FS

// WarpRolesName is the bundled capture's file name under testdata/.
const WarpRolesName = "warp_roles_h200.iket"

// GEMMName is the bundled capture of the warp-specialized bf16 GEMM
// (kernels/hopper/gemm.cu, 1024^3, one producer and two consumer
// warpgroups), recorded by scripts/overhead.sh on the H200.
const GEMMName = "gemm_h200.iket"

// PipelineName is the bundled capture of the persistent warp-specialized
// streaming kernel (kernels/hopper/pipeline.cu: one producer warp with bulk
// copies into an 8-slot ring, four consumer warps), recorded by
// scripts/overhead.sh on the H200.
const PipelineName = "pipeline_h200.iket"

// AppCppName and AppPyName are captures of the example application
// (examples/app: a producer warp and two consumer warps per CTA handing
// tiles over named barriers), traced inside the application by
// `iket run -- CMD` on the H200 (scripts/gpu-app.sh, steps fixture-cpp and
// fixture-py): built with nvcc and launched with <<<>>>, and compiled by
// NVRTC through CuPy from Python.
const (
	AppCppName = "app_cpp_h200.iket"
	AppPyName  = "app_py_h200.iket"
)

// WarpRolesH200 returns the bundled warp_roles capture. The caller owns the
// returned slice.
func WarpRolesH200() ([]byte, error) { return Capture(WarpRolesName) }

// Read returns the bundled capture with the given file name, read.
func Read(name string) (*trace.Capture, error) {
	b, err := Capture(name)
	if err != nil {
		return nil, err
	}
	c, err := trace.Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("bundled capture %s: %w", name, err)
	}
	return c, nil
}

// Capture returns the bundled capture with the given file name. The caller
// owns the returned slice.
func Capture(name string) ([]byte, error) {
	b, err := files.ReadFile("testdata/" + name)
	if err != nil {
		return nil, fmt.Errorf("bundled capture %s: %w", name, err)
	}
	return b, nil
}
