//go:build cgo

package cuda

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"fmt"
	"sort"
	"strings"
	"unsafe"
)

// RTCResult is an nvrtcResult.
type RTCResult int

// NVRTC_ERROR_COMPILATION: the source did not compile; the log says why.
const rtcErrorCompilation RTCResult = 6

var rtcNames = map[RTCResult]string{
	0: "NVRTC_SUCCESS", 1: "NVRTC_ERROR_OUT_OF_MEMORY", 2: "NVRTC_ERROR_PROGRAM_CREATION_FAILURE",
	3: "NVRTC_ERROR_INVALID_INPUT", 4: "NVRTC_ERROR_INVALID_PROGRAM", 5: "NVRTC_ERROR_INVALID_OPTION",
	6: "NVRTC_ERROR_COMPILATION", 7: "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE",
	8: "NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION", 9: "NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION",
	10: "NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID", 11: "NVRTC_ERROR_INTERNAL_ERROR",
	12: "NVRTC_ERROR_TIME_FILE_WRITE_FAILED",
}

func (r RTCResult) Error() string {
	if s := C.w_rtc_error_string(C.nvrtcResult(r)); s != nil {
		return C.GoString(s)
	}
	if n, ok := rtcNames[r]; ok {
		return n
	}
	return fmt.Sprintf("nvrtcResult(%d)", int(r))
}

// CompileError is a failed NVRTC compile with the compiler's log.
type CompileError struct {
	Name   string // the source's name
	Result RTCResult
	Log    string
}

func (e *CompileError) Error() string {
	log := strings.TrimSpace(e.Log)
	if log == "" {
		return fmt.Sprintf("nvrtc compile %s: %v", e.Name, e.Result)
	}
	return fmt.Sprintf("nvrtc compile %s: %v:\n%s", e.Name, e.Result, log)
}

// Unwrap returns the nvrtcResult.
func (e *CompileError) Unwrap() error { return e.Result }

// NVRTCVersion returns NVRTC's version, loading it first.
func NVRTCVersion() (major, minor int, err error) {
	if err := LoadNVRTC(); err != nil {
		return 0, 0, err
	}
	var a, b C.int
	if r := RTCResult(C.w_rtc_version(&a, &b)); r != 0 {
		return 0, 0, fmt.Errorf("nvrtcVersion: %w", r)
	}
	return int(a), int(b), nil
}

// cStrings holds C copies of Go strings until free.
type cStrings struct{ p []*C.char }

func newCStrings(ss []string) *cStrings {
	c := &cStrings{}
	for _, s := range ss {
		c.p = append(c.p, C.CString(s))
	}
	return c
}

// array returns a C array of the strings (nil when empty); free releases it.
func (c *cStrings) array() **C.char {
	if len(c.p) == 0 {
		return nil
	}
	a := (**C.char)(C.malloc(C.size_t(len(c.p)) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	copy(unsafe.Slice(a, len(c.p)), c.p)
	return a
}

func (c *cStrings) free() {
	for _, p := range c.p {
		C.free(unsafe.Pointer(p))
	}
}

// Compile compiles CUDA C++ source with NVRTC. headers maps include names to
// their sources; opts are NVRTC options ("-arch=sm_90a", "-DX=1"). With
// cubin it returns the CUBIN (opts must name a real sm_ arch), else PTX. The
// log of a successful compile (warnings) is returned too.
func Compile(name string, src []byte, headers map[string][]byte, opts []string, cubin bool) (image []byte, log string, err error) {
	if err := LoadNVRTC(); err != nil {
		return nil, "", err
	}
	incNames := make([]string, 0, len(headers))
	for k := range headers {
		incNames = append(incNames, k)
	}
	sort.Strings(incNames)
	hdrSrc := make([]string, len(incNames))
	for i, k := range incNames {
		hdrSrc[i] = string(headers[k])
	}
	cSrc := C.CString(string(src))
	defer C.free(unsafe.Pointer(cSrc))
	cName := C.CString(name)
	defer C.free(unsafe.Pointer(cName))
	hs, ns, ops := newCStrings(hdrSrc), newCStrings(incNames), newCStrings(opts)
	defer hs.free()
	defer ns.free()
	defer ops.free()
	ha, na, oa := hs.array(), ns.array(), ops.array()
	defer C.free(unsafe.Pointer(ha))
	defer C.free(unsafe.Pointer(na))
	defer C.free(unsafe.Pointer(oa))

	var prog C.nvrtcProgram
	if r := RTCResult(C.w_rtc_create(&prog, cSrc, cName, C.int(len(incNames)), ha, na)); r != 0 {
		return nil, "", fmt.Errorf("nvrtcCreateProgram %s: %w", name, r)
	}
	defer C.w_rtc_destroy(&prog)
	cr := RTCResult(C.w_rtc_compile(prog, C.int(len(opts)), oa))
	var n C.size_t
	if r := RTCResult(C.w_rtc_log_size(prog, &n)); r == 0 && n > 1 {
		buf := (*C.char)(C.calloc(n, 1))
		if C.w_rtc_log(prog, buf) == 0 {
			log = C.GoString(buf)
		}
		C.free(unsafe.Pointer(buf))
	}
	if cr != 0 {
		return nil, log, &CompileError{Name: name, Result: cr, Log: log}
	}
	what := "PTX"
	if cubin {
		what = "CUBIN"
	}
	var r RTCResult
	if cubin {
		r = RTCResult(C.w_rtc_cubin_size(prog, &n))
	} else {
		r = RTCResult(C.w_rtc_ptx_size(prog, &n))
	}
	if r != 0 {
		return nil, log, fmt.Errorf("nvrtcGet%sSize %s: %w", what, name, r)
	}
	if n == 0 {
		return nil, log, fmt.Errorf("nvrtcGet%s %s: empty output", what, name)
	}
	buf := C.malloc(n)
	defer C.free(buf)
	if cubin {
		r = RTCResult(C.w_rtc_cubin(prog, (*C.char)(buf)))
	} else {
		r = RTCResult(C.w_rtc_ptx(prog, (*C.char)(buf)))
	}
	if r != 0 {
		return nil, log, fmt.Errorf("nvrtcGet%s %s: %w", what, name, r)
	}
	image = C.GoBytes(buf, C.int(n))
	if !cubin {
		image = []byte(strings.TrimRight(string(image), "\x00"))
	}
	return image, log, nil
}
