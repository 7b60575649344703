package spec

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadExample(t *testing.T) {
	s, err := Load("testdata/scale.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Dim3{528, 1, 1}, s.Grid); diff != "" {
		t.Errorf("grid (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Dim3{256, 1, 1}, s.Block); diff != "" {
		t.Errorf("block (-want +got):\n%s", diff)
	}
	if got, want := s.Path(s.Kernel), filepath.Join("testdata", "scale.cu"); got != want {
		t.Errorf("kernel path = %q, want %q", got, want)
	}
	if got := s.Args[0].Buffer.Bytes(); got != 528*256*4 {
		t.Errorf("in bytes = %d, want %d", got, 528*256*4)
	}
	if s.Args[3].Scalar.DType != I32 || s.Args[3].Scalar.Value != 135168 {
		t.Errorf("n = %+v", s.Args[3].Scalar)
	}
}

const okSpec = `kernel: k.cu
entry: k
grid: 4
block: [64]
args:
  - name: in
    buffer: {dtype: f32, shape: [256], init: {kind: arange}}
  - name: out
    buffer: {dtype: f32, shape: [256], output: true}
`

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want []string // substrings of the error, each naming a field
	}{
		{"empty", "", []string{"empty spec"}},
		{"unknown field", okSpec + "colour: red\n", []string{"field colour not found"}},
		{"missing kernel", strings.Replace(okSpec, "kernel: k.cu\n", "", 1), []string{"kernel: missing"}},
		{"bad extension", strings.Replace(okSpec, "k.cu", "k.txt", 1), []string{`kernel: "k.txt": want a file ending in .cu`}},
		{"missing entry", strings.Replace(okSpec, "entry: k\n", "", 1), []string{"entry: missing"}},
		{"zero grid", strings.Replace(okSpec, "grid: 4", "grid: [4, 0]", 1), []string{"grid: dimension 1 is 0"}},
		{"too many dims", strings.Replace(okSpec, "grid: 4", "grid: [1, 2, 3, 4]", 1), []string{"want 1 to 3 dimensions, have 4"}},
		{"grid not a number", strings.Replace(okSpec, "grid: 4", "grid: lots", 1), []string{`have "lots"`}},
		{"block too big", strings.Replace(okSpec, "block: [64]", "block: [64, 32]", 1), []string{"block: 2048 threads per CTA: at most 1024"}},
		{"cluster does not divide", okSpec + "cluster: 3\n", []string{"cluster: grid dimension 0 (4) is not a multiple of the cluster's (3)"}},
		{"bad mode", okSpec + "trace: {mode: ring}\n", []string{`trace.mode: "ring": want stop or wrap`}},
		{"wrap needs power of two", okSpec + "trace: {mode: wrap, capacity: 100}\n", []string{"trace.capacity: 100: wrap mode needs a power of two"}},
		{"bad dtype", strings.Replace(okSpec, "dtype: f32, shape: [256], init", "dtype: f33, shape: [256], init", 1), []string{`args[0].buffer.dtype: "f33": want one of f64, f32`}},
		{"zero shape", strings.Replace(okSpec, "shape: [256], init", "shape: [256, 0], init", 1), []string{"args[0].buffer.shape[1]: 0: want a positive size"}},
		{"input without init", strings.Replace(okSpec, ", init: {kind: arange}", "", 1), []string{"args[0].buffer.init: missing"}},
		{"bad init kind", strings.Replace(okSpec, "kind: arange", "kind: zeros", 1), []string{`args[0].buffer.init.kind: "zeros": want uniform, normal`}},
		{"uniform bounds", strings.Replace(okSpec, "kind: arange", "kind: uniform, low: 2, high: 1", 1), []string{"args[0].buffer.init: uniform needs low < high"}},
		{"both buffer and scalar", okSpec + "  - name: x\n    scalar: {dtype: i32, value: 1}\n    buffer: {dtype: f32, shape: [1], output: true}\n", []string{"args[2]: want exactly one of buffer and scalar"}},
		{"scalar not integer", okSpec + "  - name: n\n    scalar: {dtype: i32, value: 1.5}\n", []string{"args[2].scalar.value: 1.5 is not an integer"}},
		{"scalar out of range", okSpec + "  - name: n\n    scalar: {dtype: u8, value: 300}\n", []string{"args[2].scalar.value: 300 is out of u8's range"}},
		{"duplicate name", okSpec + "  - name: in\n    scalar: {dtype: i32, value: 1}\n", []string{`args[2].name: "in" is also args[0]'s name`}},
		{"check unknown arg", okSpec + "check: [{arg: res, file: x.bin}]\n", []string{`check[0].arg: "res" names no argument`}},
		{"check input", okSpec + "check: [{arg: in, file: x.bin}]\n", []string{`check[0].arg: "in" is not an output buffer`}},
		{"check needs one source", okSpec + "check: [{arg: out}]\n", []string{"check[0]: want exactly one of file and reference"}},
		{"several at once", strings.Replace(strings.Replace(okSpec, "entry: k\n", "", 1), "grid: 4", "grid: 0", 1), []string{"entry: missing", "grid: dimension 0 is 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tt.spec), "test.yaml")
			if err == nil {
				t.Fatalf("Parse succeeded, want an error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), "test.yaml: ") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestDTypeRoundTrip(t *testing.T) {
	tests := []struct {
		d    DType
		in   float64
		want float64
	}{
		{F64, math.Pi, math.Pi},
		{F32, 1.5, 1.5},
		{F32, math.Pi, float64(float32(math.Pi))},
		{BF16, 1.0, 1.0},
		{BF16, 3.140625, 3.140625},
		{BF16, 1.00390625, 1.0},      // half-way, rounds to even
		{BF16, 1.01171875, 1.015625}, // half-way, rounds to even (up)
		{F16, 1.0, 1.0},
		{F16, 65504, 65504},                                 // largest normal
		{F16, 70000, math.Inf(1)},                           // overflow
		{F16, 5.960464477539063e-08, 5.960464477539063e-08}, // smallest subnormal
		{F16, 0.1, 0.0999755859375},
		{F16, -2.5, -2.5},
		{I32, -7, -7},
		{U32, 4000000000, 4000000000},
		{I64, -1 << 40, -1 << 40},
		{U8, 200, 200},
	}
	for _, tt := range tests {
		b := make([]byte, tt.d.Size())
		tt.d.Put(b, tt.in)
		if got := tt.d.Get(b); got != tt.want {
			t.Errorf("%s: Put(%g) then Get = %g, want %g", tt.d, tt.in, got, tt.want)
		}
	}
	for _, d := range []DType{F16, BF16, F32, F64} {
		b := make([]byte, d.Size())
		d.Put(b, math.NaN())
		if got := d.Get(b); !math.IsNaN(got) {
			t.Errorf("%s: NaN round-trips to %g", d, got)
		}
	}
}

func TestHostData(t *testing.T) {
	dir := t.TempDir()
	raw := make([]byte, 8)
	F32.Put(raw, 1.25)
	F32.Put(raw[4:], -3)
	if err := os.WriteFile(filepath.Join(dir, "in.bin"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	spec := func(init string) *Spec {
		t.Helper()
		src := strings.Replace(okSpec, "shape: [256], init: {kind: arange}", "shape: [2], init: "+init, 1)
		s, err := Parse(strings.NewReader(src), "t.yaml")
		if err != nil {
			t.Fatal(err)
		}
		s.dir = dir
		return s
	}
	values := func(b []byte) []float64 {
		var v []float64
		for i := 0; i < len(b); i += 4 {
			v = append(v, F32.Get(b[i:]))
		}
		return v
	}
	tests := []struct {
		init string
		want []float64
	}{
		{"{kind: arange, start: 3, step: 0.5}", []float64{3, 3.5}},
		{"{kind: constant, value: 2}", []float64{2, 2}},
		{"{kind: file, file: in.bin}", []float64{1.25, -3}},
	}
	for _, tt := range tests {
		got, err := spec(tt.init).HostData(0)
		if err != nil {
			t.Fatalf("%s: %v", tt.init, err)
		}
		if diff := cmp.Diff(tt.want, values(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.init, diff)
		}
	}
	// Random inits: deterministic per seed, different across seeds, in range.
	a, _ := spec("{kind: uniform, low: 10, high: 11, seed: 1}").HostData(0)
	b, _ := spec("{kind: uniform, low: 10, high: 11, seed: 1}").HostData(0)
	c, _ := spec("{kind: uniform, low: 10, high: 11, seed: 2}").HostData(0)
	if !cmp.Equal(a, b) || cmp.Equal(a, c) {
		t.Errorf("uniform: same seed gave %v and %v, other seed %v", values(a), values(b), values(c))
	}
	for _, v := range values(a) {
		if v < 10 || v >= 11 {
			t.Errorf("uniform value %g outside [10, 11)", v)
		}
	}
	if _, err := spec("{kind: file, file: missing.bin}").HostData(0); err == nil || !strings.Contains(err.Error(), "args[0].buffer.init.file") {
		t.Errorf("missing file: error %v does not name the field", err)
	}
	short := spec("{kind: file, file: in.bin}")
	short.Args[0].Buffer.Shape = []uint64{3}
	if _, err := short.HostData(0); err == nil || !strings.Contains(err.Error(), "has 8 bytes; the buffer ([3] f32) needs 12") {
		t.Errorf("short file: error %v", err)
	}
	out, err := spec("{kind: arange}").HostData(1)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range values(out) {
		if !math.IsNaN(v) {
			t.Errorf("output element %d = %g, want the NaN poison", i, v)
		}
	}
}

func TestCompare(t *testing.T) {
	mk := func(v ...float64) []byte {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			F32.Put(b[4*i:], x)
		}
		return b
	}
	if err := Compare("out", F32, mk(1, 2.001), mk(1, 2), 1e-3, 0); err != nil {
		t.Errorf("within rtol: %v", err)
	}
	err := Compare("out", F32, mk(1, 2.01, math.NaN()), mk(1, 2, 3), 1e-3, 0)
	ce, ok := err.(*CompareError)
	if !ok {
		t.Fatalf("err = %v, want *CompareError", err)
	}
	if ce.Mismatches != 2 || ce.First[0].Index != 1 || ce.First[1].Index != 2 {
		t.Errorf("mismatches = %+v", ce)
	}
	if !strings.Contains(err.Error(), "output out: 2 of 3 elements differ; [1] got 2.00999") {
		t.Errorf("message %q", err)
	}
	if err := Compare("out", F32, mk(1), mk(1, 2), 0, 0); err == nil {
		t.Error("length mismatch not reported")
	}
}
