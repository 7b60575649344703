package spec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/iket-trace/iket/iket"
)

// Program turns s into a program for [iket.Run], so a user's kernel goes
// through the same checked, traced and timed path as the built-in ones. It
// reads the kernel file (and the baseline, if the spec names one) now; the
// program's Setup allocates and fills the buffers on the device and makes
// the output check: expected values from the check files, or from the
// reference entry run once on the same inputs. baseline, nil unless the spec
// names one, is for [iket.RunOptions.Baseline]. The program refers to s,
// which must not change while it is in use.
func (s *Spec) Program() (prog *iket.Program, baseline *iket.Source, err error) {
	src, err := iket.LoadSource(s.Path(s.Kernel))
	if err != nil {
		return nil, nil, fmt.Errorf("spec %s: kernel: %w", s.name, err)
	}
	src.Options = append(src.Options, s.Options...)
	if s.Baseline != "" {
		b, err := iket.LoadSource(s.Path(s.Baseline))
		if err != nil {
			return nil, nil, fmt.Errorf("spec %s: baseline: %w", s.name, err)
		}
		baseline = &b
	}
	params := make([]iket.ParamKind, len(s.Args))
	for i, a := range s.Args {
		switch {
		case a.Buffer != nil:
			params[i] = iket.ParamPtr
		case a.Scalar.DType.Size() == 4:
			params[i] = iket.ParamU32
		case a.Scalar.DType.Size() == 8:
			params[i] = iket.ParamU64
		default:
			return nil, nil, fmt.Errorf("spec %s: args[%d].scalar.dtype: %s scalars cannot be kernel parameters here; pass 4- or 8-byte scalars", s.name, i, a.Scalar.DType)
		}
	}
	cfg := iket.LaunchConfig{Kernel: s.Entry, Grid: s.Grid, Block: s.Block, Cluster: s.Cluster, SharedBytes: s.SharedBytes}
	prog = &iket.Program{
		Name:        strings.TrimSuffix(filepath.Base(s.name), filepath.Ext(s.name)),
		Entry:       s.Entry,
		Description: "from spec " + s.name,
		Source:      func() (iket.Source, error) { return src, nil },
		Params:      params,
		ConfigFor:   func(int) iket.LaunchConfig { return cfg },
		Setup: func(d *iket.Device, cfg iket.LaunchConfig) (*iket.Workload, error) {
			return workload(d, s, src, cfg)
		},
	}
	return prog, baseline, nil
}

// scalarArg converts a spec scalar to a kernel argument.
func scalarArg(sc *Scalar) iket.Arg {
	switch sc.DType {
	case F32:
		return iket.F32(sc.Value)
	case F64:
		return iket.F64(sc.Value)
	case I32:
		return iket.I32(int32(sc.Value))
	case U32:
		return iket.U32(uint32(sc.Value))
	case I64:
		return iket.I64(int64(sc.Value))
	}
	return nil // rejected by Program
}

// workload allocates and fills the spec's buffers and prepares the
// output check: expected values from files, or from the reference kernel run
// once here on the same inputs.
func workload(d *iket.Device, s *Spec, src iket.Source, cfg iket.LaunchConfig) (w *iket.Workload, err error) {
	w = &iket.Workload{Buffers: map[string]*iket.Buffer{}}
	defer func() {
		if err != nil {
			w.Close()
		}
	}()
	index := map[string]int{}
	for i, a := range s.Args {
		index[a.Name] = i
		if a.Scalar != nil {
			w.Args = append(w.Args, scalarArg(a.Scalar))
			continue
		}
		data, err := s.HostData(i)
		if err != nil {
			return nil, err
		}
		b, err := d.Alloc(uint64(len(data)))
		if err != nil {
			return nil, fmt.Errorf("args[%d] (%s): %w", i, a.Name, err)
		}
		w.Buffers[a.Name] = b
		if err := b.Write(data); err != nil {
			return nil, fmt.Errorf("args[%d] (%s): %w", i, a.Name, err)
		}
		w.Args = append(w.Args, b)
	}
	w.Poison = func() error {
		for _, a := range s.Args {
			if a.Buffer == nil || !a.Buffer.Output {
				continue
			}
			p := make([]byte, a.Buffer.Bytes())
			Poison(a.Buffer.DType, p)
			if err := w.Buffers[a.Name].Write(p); err != nil {
				return fmt.Errorf("poison %s: %w", a.Name, err)
			}
		}
		return nil
	}
	expected := make([][]byte, len(s.Check))
	for j, c := range s.Check {
		if c.File != "" {
			b, err := os.ReadFile(s.Path(c.File))
			if err != nil {
				return nil, fmt.Errorf("check[%d].file: %w", j, err)
			}
			expected[j] = b
			continue
		}
		if expected[j], err = runReference(d, s, src, cfg, w, index[c.Arg], c.Reference); err != nil {
			return nil, fmt.Errorf("check[%d].reference %s: %w", j, c.Reference, err)
		}
	}
	w.Verify = func() error {
		var errs []error
		for j, c := range s.Check {
			a := s.Args[index[c.Arg]]
			got := make([]byte, a.Buffer.Bytes())
			if err := w.Buffers[c.Arg].Read(got); err != nil {
				return fmt.Errorf("read %s: %w", c.Arg, err)
			}
			if err := Compare(c.Arg, a.Buffer.DType, got, expected[j], c.RTol, c.ATol); err != nil {
				errs = append(errs, fmt.Errorf("check[%d]: %w", j, err))
			}
		}
		return errors.Join(errs...)
	}
	return w, nil
}

// runReference launches the reference entry (uninstrumented build) with the
// checked output replaced by a fresh poisoned buffer and returns its result.
func runReference(d *iket.Device, s *Spec, src iket.Source, cfg iket.LaunchConfig, w *iket.Workload, out int, entry string) ([]byte, error) {
	if src.Kind.Prebuilt() {
		return nil, fmt.Errorf("a reference kernel needs a .cu kernel (it is compiled here); give expected values in a file instead")
	}
	m, err := d.Compile(src, false, s.Arch)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	a := s.Args[out]
	ref, err := d.Alloc(a.Buffer.Bytes())
	if err != nil {
		return nil, err
	}
	defer ref.Close()
	p := make([]byte, a.Buffer.Bytes())
	Poison(a.Buffer.DType, p)
	if err := ref.Write(p); err != nil {
		return nil, err
	}
	args := append([]iket.Arg(nil), w.Args...)
	args[out] = ref
	cfg.Kernel = entry
	if err := m.Launch(cfg, args, 0); err != nil {
		return nil, err
	}
	if err := ref.Read(p); err != nil {
		return nil, err
	}
	return p, nil
}
