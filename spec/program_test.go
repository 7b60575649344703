package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/iket-trace/iket/iket"
)

// The example spec becomes a program without a GPU: name, entry, parameter
// kinds, configuration and source come from the spec.
func TestProgram(t *testing.T) {
	s, err := Load("../kernels/examples/warp_roles.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, base, err := s.Program()
	if err != nil {
		t.Fatal(err)
	}
	if base != nil {
		t.Errorf("baseline = %+v, want nil (the spec names none)", base)
	}
	if p.Name != "warp_roles" || p.Entry != "warp_roles" || !strings.Contains(p.Description, "warp_roles.yaml") {
		t.Errorf("program %q entry %q description %q", p.Name, p.Entry, p.Description)
	}
	if diff := cmp.Diff([]iket.ParamKind{iket.ParamPtr, iket.ParamPtr}, p.Params); diff != "" {
		t.Errorf("params (-want +got):\n%s", diff)
	}
	want := iket.LaunchConfig{Kernel: "warp_roles", Grid: [3]uint32{1056, 1, 1}, Block: [3]uint32{64, 1, 1}}
	if diff := cmp.Diff(want, p.ConfigFor(132)); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	src, err := p.Source()
	if err != nil {
		t.Fatal(err)
	}
	if src.Kind != iket.KindCU || !strings.Contains(string(src.Data), "warp_roles(") {
		t.Errorf("source %s kind %v", src.Path, src.Kind)
	}
}

func TestProgramErrors(t *testing.T) {
	const head = "entry: k\ngrid: 1\nblock: 32\n"
	const buf = "args:\n  - {name: out, buffer: {dtype: f32, shape: [32], output: true}}\n"
	tests := []struct {
		name    string
		spec    string
		files   []string // created empty next to the spec
		wantErr string
	}{
		{"no kernel", "kernel: k.cu\n" + head + buf, nil, "kernel:"},
		{"no baseline", "kernel: k.ptx\nbaseline: b.cubin\n" + head + buf, []string{"k.ptx"}, "baseline:"},
		{"2-byte scalar", "kernel: k.cu\n" + head + buf + "  - {name: h, scalar: {dtype: f16, value: 1}}\n", []string{"k.cu"}, "args[1].scalar.dtype: f16 scalars cannot be kernel parameters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, f), []byte("extern \"C\" __global__ void k(float* out) {}\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(dir, "s.yaml")
			if err := os.WriteFile(path, []byte(tt.spec), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = s.Program()
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), path) {
				t.Errorf("Program error = %v, want one naming %s and containing %q", err, path, tt.wantErr)
			}
		})
	}
}
