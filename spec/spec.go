package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// Spec is one kernel launch to trace and time.
type Spec struct {
	// Kernel is the kernel file (.cu, .ptx, .cubin, .fatbin), relative to the
	// spec file's folder unless absolute.
	Kernel string `yaml:"kernel"`
	// Baseline optionally names a separately built uninstrumented binary for
	// .ptx/.cubin/.fatbin kernels (a .cu is compiled both ways by iket).
	Baseline string   `yaml:"baseline,omitempty"`
	Entry    string   `yaml:"entry"`
	Arch     string   `yaml:"arch,omitempty"`
	Options  []string `yaml:"options,omitempty"`
	Grid     Dim3     `yaml:"grid"`
	Block    Dim3     `yaml:"block"`
	Cluster  Dim3     `yaml:"cluster,omitempty"`
	// SharedBytes is the dynamic shared memory per CTA.
	SharedBytes uint32  `yaml:"shared_bytes,omitempty"`
	Trace       Trace   `yaml:"trace,omitempty"`
	Args        []Arg   `yaml:"args"`
	Check       []Check `yaml:"check,omitempty"`

	dir  string // folder of the spec file
	name string // the spec file's path, or the name given to Parse
}

// Dim3 is a launch dimension; YAML accepts 5, [5], [5, 2] or [5, 2, 1].
type Dim3 [3]uint32

// UnmarshalYAML accepts a scalar or a list of one to three positive integers.
func (d *Dim3) UnmarshalYAML(n *yaml.Node) error {
	var vals []uint32
	switch n.Kind {
	case yaml.ScalarNode:
		var v uint32
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: want a positive integer or a list of 1 to 3, have %q", n.Line, n.Value)
		}
		vals = []uint32{v}
	case yaml.SequenceNode:
		if err := n.Decode(&vals); err != nil {
			return fmt.Errorf("line %d: want a list of 1 to 3 positive integers", n.Line)
		}
	default:
		return fmt.Errorf("line %d: want a positive integer or a list of 1 to 3", n.Line)
	}
	if len(vals) == 0 || len(vals) > 3 {
		return fmt.Errorf("line %d: want 1 to 3 dimensions, have %d", n.Line, len(vals))
	}
	*d = Dim3{1, 1, 1}
	copy(d[:], vals)
	return nil
}

// Product returns x*y*z.
func (d Dim3) Product() uint64 { return uint64(d[0]) * uint64(d[1]) * uint64(d[2]) }

// Trace sets the per-warp trace buffers.
type Trace struct {
	Capacity uint32 `yaml:"capacity,omitempty"` // records per warp; default 4096
	Mode     string `yaml:"mode,omitempty"`     // stop (default) or wrap
}

// Arg is one kernel parameter, in order: exactly one of Buffer and Scalar.
type Arg struct {
	Name   string  `yaml:"name"`
	Buffer *Buffer `yaml:"buffer,omitempty"`
	Scalar *Scalar `yaml:"scalar,omitempty"`
}

// Buffer is a device buffer passed by pointer.
type Buffer struct {
	DType DType    `yaml:"dtype"`
	Shape []uint64 `yaml:"shape"`
	Init  *Init    `yaml:"init,omitempty"`
	// Output buffers are poisoned (NaN for floats, 0xA5 bytes otherwise)
	// before each run, so unwritten elements show.
	Output bool `yaml:"output,omitempty"`
}

// Init says how a buffer starts.
type Init struct {
	Kind  string  `yaml:"kind"`            // uniform, normal, arange, constant, file
	Seed  uint64  `yaml:"seed,omitempty"`  // uniform, normal
	Low   float64 `yaml:"low,omitempty"`   // uniform (default -1)
	High  float64 `yaml:"high,omitempty"`  // uniform (default 1)
	Mean  float64 `yaml:"mean,omitempty"`  // normal
	Std   float64 `yaml:"std,omitempty"`   // normal (default 1)
	Start float64 `yaml:"start,omitempty"` // arange
	Step  float64 `yaml:"step,omitempty"`  // arange (default 1)
	Value float64 `yaml:"value,omitempty"` // constant
	File  string  `yaml:"file,omitempty"`  // file: raw little-endian elements
}

// Scalar is a by-value parameter.
type Scalar struct {
	DType DType   `yaml:"dtype"`
	Value float64 `yaml:"value"`
}

// Check compares one output buffer after the run.
type Check struct {
	Arg string `yaml:"arg"`
	// File holds the expected values (raw little-endian, the buffer's dtype).
	File string `yaml:"file,omitempty"`
	// Reference names a kernel entry in the same module that writes the
	// expected values; it is called with the same arguments, except that the
	// checked buffer is replaced by a fresh one.
	Reference string  `yaml:"reference,omitempty"`
	RTol      float64 `yaml:"rtol,omitempty"`
	ATol      float64 `yaml:"atol,omitempty"`
}

// Dir returns the folder relative paths in the spec are resolved against.
func (s *Spec) Dir() string { return s.dir }

// Path resolves a path of the spec against its folder.
func (s *Spec) Path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(s.dir, p)
}

// Load reads and validates the spec file at path.
func Load(path string) (*Spec, error) {
	b, err := readSpecFile(path)
	if err != nil {
		return nil, err
	}
	s, err := Parse(bytes.NewReader(b), path)
	if err != nil {
		return nil, err
	}
	s.dir = filepath.Dir(path)
	return s, nil
}

// Parse reads and validates a spec; name is used in errors.
func Parse(r io.Reader, name string) (*Spec, error) {
	dec := yaml.NewDecoder(r)
	dec.KnownFields(true)
	var s Spec
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty spec: want at least kernel, entry, grid, block, args", name)
		}
		return nil, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	s.dir, s.name = ".", name
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &s, nil
}

// FieldError is a problem with one field of a spec.
type FieldError struct {
	Field string // path such as args[1].buffer.dtype
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func fieldErr(field, format string, a ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, a...)}
}

var kernelExts = []string{".cu", ".ptx", ".cubin", ".fatbin"}

func (s *Spec) validate() error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	if s.Kernel == "" {
		add(fieldErr("kernel", "missing: want the kernel file (%s)", strings.Join(kernelExts, ", ")))
	} else if ext := strings.ToLower(filepath.Ext(s.Kernel)); !contains(kernelExts, ext) {
		add(fieldErr("kernel", "%q: want a file ending in %s", s.Kernel, strings.Join(kernelExts, ", ")))
	}
	if s.Entry == "" {
		add(fieldErr("entry", "missing: want the kernel's entry point (its extern \"C\" name)"))
	}
	if s.Arch != "" && !strings.HasPrefix(s.Arch, "sm_") && !strings.HasPrefix(s.Arch, "compute_") {
		add(fieldErr("arch", "%q: want sm_XY or compute_XY, e.g. sm_90a", s.Arch))
	}
	checkDim := func(field string, d Dim3, required bool, max [3]uint32) {
		if d == (Dim3{}) {
			if required {
				add(fieldErr(field, "missing: want 1 to 3 positive integers"))
			}
			return
		}
		for i, v := range d {
			if v == 0 {
				add(fieldErr(field, "dimension %d is 0: want a positive integer", i))
			} else if v > max[i] {
				add(fieldErr(field, "dimension %d is %d: at most %d", i, v, max[i]))
			}
		}
	}
	checkDim("grid", s.Grid, true, [3]uint32{1<<31 - 1, 65535, 65535})
	checkDim("block", s.Block, true, [3]uint32{1024, 1024, 64})
	checkDim("cluster", s.Cluster, false, [3]uint32{16, 16, 16})
	if s.Block != (Dim3{}) && s.Block.Product() > 1024 {
		add(fieldErr("block", "%d threads per CTA: at most 1024", s.Block.Product()))
	}
	if s.Cluster != (Dim3{}) && s.Grid != (Dim3{}) {
		for i := range s.Cluster {
			if s.Cluster[i] != 0 && s.Grid[i]%s.Cluster[i] != 0 {
				add(fieldErr("cluster", "grid dimension %d (%d) is not a multiple of the cluster's (%d)", i, s.Grid[i], s.Cluster[i]))
			}
		}
	}
	switch s.Trace.Mode {
	case "", "stop", "wrap":
	default:
		add(fieldErr("trace.mode", "%q: want stop or wrap", s.Trace.Mode))
	}
	if c := s.Trace.Capacity; c > 1<<30 {
		add(fieldErr("trace.capacity", "%d: at most %d records per warp", c, 1<<30))
	} else if s.Trace.Mode == "wrap" && c != 0 && c&(c-1) != 0 {
		add(fieldErr("trace.capacity", "%d: wrap mode needs a power of two", c))
	}
	if len(s.Args) == 0 {
		add(fieldErr("args", "missing: list the kernel's parameters in order"))
	}
	names := map[string]int{}
	for i := range s.Args {
		errs = append(errs, s.Args[i].validate(fmt.Sprintf("args[%d]", i))...)
		if n := s.Args[i].Name; n != "" {
			if j, dup := names[n]; dup {
				add(fieldErr(fmt.Sprintf("args[%d].name", i), "%q is also args[%d]'s name", n, j))
			}
			names[n] = i
		}
	}
	for i, c := range s.Check {
		field := fmt.Sprintf("check[%d]", i)
		j, ok := names[c.Arg]
		switch {
		case c.Arg == "":
			add(fieldErr(field+".arg", "missing: want the name of an output buffer"))
		case !ok:
			add(fieldErr(field+".arg", "%q names no argument", c.Arg))
		case s.Args[j].Buffer == nil || !s.Args[j].Buffer.Output:
			add(fieldErr(field+".arg", "%q is not an output buffer (buffer with output: true)", c.Arg))
		}
		if (c.File == "") == (c.Reference == "") {
			add(fieldErr(field, "want exactly one of file and reference"))
		}
		if c.RTol < 0 || c.ATol < 0 {
			add(fieldErr(field, "rtol and atol must be >= 0"))
		}
	}
	return errors.Join(errs...)
}

func (a *Arg) validate(field string) []error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	if a.Name == "" {
		add(fieldErr(field+".name", "missing: want a name for the argument"))
	}
	switch {
	case (a.Buffer == nil) == (a.Scalar == nil):
		add(fieldErr(field, "want exactly one of buffer and scalar"))
	case a.Buffer != nil:
		b := a.Buffer
		f := field + ".buffer"
		if err := b.DType.check(f + ".dtype"); err != nil {
			add(err)
		}
		if len(b.Shape) == 0 {
			add(fieldErr(f+".shape", "missing: want a list of positive sizes"))
		}
		n := uint64(1)
		for i, d := range b.Shape {
			if d == 0 {
				add(fieldErr(fmt.Sprintf("%s.shape[%d]", f, i), "0: want a positive size"))
				continue
			}
			if n > (1<<40)/d {
				add(fieldErr(f+".shape", "more than 2^40 elements"))
				break
			}
			n *= d
		}
		if sz := uint64(b.DType.Size()); sz > 0 && n <= 1<<40 && n*sz > MaxBufferBytes {
			add(fieldErr(f+".shape", "%v: %d elements of %d bytes, more than the %d-byte limit of a buffer", b.Shape, n, sz, uint64(MaxBufferBytes)))
		}
		if b.Init == nil && !b.Output {
			add(fieldErr(f+".init", "missing: an input buffer needs init (uniform, normal, arange, constant or file); outputs say output: true"))
		}
		if b.Init != nil {
			errs = append(errs, b.Init.validate(f+".init")...)
		}
	case a.Scalar != nil:
		if err := a.Scalar.DType.check(field + ".scalar.dtype"); err != nil {
			add(err)
		} else if err := a.Scalar.DType.checkValue(a.Scalar.Value); err != nil {
			add(fieldErr(field+".scalar.value", "%v", err))
		}
	}
	return errs
}

func (in *Init) validate(field string) []error {
	var errs []error
	switch in.Kind {
	case "uniform":
		if in.Low == 0 && in.High == 0 {
			in.Low, in.High = -1, 1
		}
		if !(in.Low < in.High) {
			errs = append(errs, fieldErr(field, "uniform needs low < high, have %g and %g", in.Low, in.High))
		}
	case "normal":
		if in.Std == 0 {
			in.Std = 1
		}
		if in.Std < 0 {
			errs = append(errs, fieldErr(field+".std", "%g: want > 0", in.Std))
		}
	case "arange":
		if in.Step == 0 {
			in.Step = 1
		}
	case "constant":
	case "file":
		if in.File == "" {
			errs = append(errs, fieldErr(field+".file", "missing: want a raw little-endian file of the buffer's dtype"))
		}
	case "":
		errs = append(errs, fieldErr(field+".kind", "missing: want uniform, normal, arange, constant or file"))
	default:
		errs = append(errs, fieldErr(field+".kind", "%q: want uniform, normal, arange, constant or file", in.Kind))
	}
	return errs
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
