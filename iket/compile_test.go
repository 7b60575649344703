package iket

import (
	"errors"
	"io/fs"
	"path"
	"strings"
	"testing"

	"github.com/iket-trace/iket/iket/internal/cuda"
	"github.com/iket-trace/iket/kernels"
)

// nvrtcArch returns a PTX target the local NVRTC accepts, skipping when
// NVRTC is not installed. PTX (compute_) keeps the test independent of the
// NVRTC version; the GPU tests build sm_90a cubins.
func nvrtcArch(t *testing.T) string {
	t.Helper()
	if err := cuda.LoadNVRTC(); err != nil {
		t.Skipf("NVRTC not installed: %v", err)
	}
	return "compute_90"
}

// Both builds of every example kernel embedded in package kernels (the
// built-in programs' sources) compile with NVRTC and the embedded header;
// only the instrumented one defines iket_state and the name table.
func TestBuildImageExamples(t *testing.T) {
	arch := nvrtcArch(t)
	files, err := fs.Glob(kernels.FS, "examples/*.cu")
	if err != nil || len(files) == 0 {
		t.Fatalf("embedded examples: %v, %v", files, err)
	}
	for _, f := range files {
		name := path.Base(f)
		entry := strings.TrimSuffix(name, ".cu") // each example's kernel is named after its file
		data, err := kernels.Example(name)
		if err != nil {
			t.Fatal(err)
		}
		src := Source{Path: name, Kind: KindCU, Data: data}
		for _, inst := range []bool{false, true} {
			ptx, log, err := buildImage(name, src, inst, arch)
			if err != nil {
				t.Fatalf("%s instrumented=%v: %v", name, inst, err)
			}
			text := string(ptx)
			if !strings.Contains(text, ".entry "+entry+"(") {
				t.Errorf("%s instrumented=%v: PTX has no entry %s (log %q)", name, inst, entry, log)
			}
			for _, sym := range []string{stateSymbol, nameTableSymbol} {
				if got := strings.Contains(text, sym); got != inst {
					t.Errorf("%s instrumented=%v: PTX mentions %s = %v", name, inst, sym, got)
				}
			}
		}
	}
}

func TestBuildImageErrors(t *testing.T) {
	arch := nvrtcArch(t)
	bad := Source{Path: "bad.cu", Kind: KindCU, Data: []byte("#include \"iket.cuh\"\nextern \"C\" __global__ void k() { undeclared_thing(); }\n")}
	_, _, err := buildImage("bad.cu", bad, true, arch)
	var ce *cuda.CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("compile error = %v, want a *cuda.CompileError", err)
	}
	if !strings.Contains(ce.Log, "undeclared_thing") || !strings.Contains(err.Error(), "bad.cu") {
		t.Errorf("compile error does not carry the log naming the problem: %v", err)
	}
	// Extra includes and options reach NVRTC.
	inc := Source{Path: "inc.cu", Kind: KindCU,
		Data:     []byte("#include \"iket.cuh\"\n#include \"mine.h\"\nextern \"C\" __global__ void k(int* p) { *p = MINE + EXTRA; }\n"),
		Includes: map[string][]byte{"mine.h": []byte("#define MINE 41\n")},
		Options:  []string{"-DEXTRA=1"}}
	if _, _, err := buildImage("inc.cu", inc, false, arch); err != nil {
		t.Errorf("compile with an extra include and option: %v", err)
	}
	inc.Options = nil
	if _, _, err := buildImage("inc.cu", inc, false, arch); err == nil {
		t.Error("compile without -DEXTRA succeeded: options are not passed")
	}
	// A prebuilt image is returned as given.
	pre := Source{Path: "k.ptx", Kind: KindPTX, Data: []byte(".version 8.0\n.target sm_90\n")}
	if img, _, err := buildImage("k.ptx", pre, true, arch); err != nil || string(img) != string(pre.Data) {
		t.Errorf("prebuilt image = %q, %v", img, err)
	}
}
