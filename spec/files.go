package spec

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Limits on what a spec may ask iket to read or allocate.
const (
	// MaxSpecBytes bounds the spec file itself.
	MaxSpecBytes = 1 << 20
	// MaxKernelBytes bounds a kernel or baseline file.
	MaxKernelBytes = 256 << 20
	// MaxBufferBytes bounds one buffer argument (its host copy is built in
	// memory before the device is opened).
	MaxBufferBytes = 16 << 30
)

// readSpecFile reads the spec at path: a regular file of at most
// MaxSpecBytes.
func readSpecFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load spec: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("load spec: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("load spec %s: not a regular file (%s)", path, st.Mode().Type())
	}
	if st.Size() > MaxSpecBytes {
		return nil, fmt.Errorf("load spec %s: %d bytes, at most %d", path, st.Size(), MaxSpecBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSpecBytes+1))
	if err != nil {
		return nil, fmt.Errorf("load spec: %w", err)
	}
	if len(b) > MaxSpecBytes {
		return nil, fmt.Errorf("load spec %s: more than %d bytes", path, MaxSpecBytes)
	}
	return b, nil
}

// CheckFiles checks every file the spec names, to be called before
// anything reads them or a device is opened: each must exist and be a
// regular file (after links), the kernel and baseline at most
// MaxKernelBytes, a buffer's init file and a check's expected values
// exactly the buffer's size. It returns every problem, joined.
func (s *Spec) CheckFiles() error {
	var errs []error
	file := func(field, p string, want int64, limit int64) {
		st, err := os.Stat(s.Path(p))
		switch {
		case err != nil:
			errs = append(errs, fieldErr(field, "%v", err))
		case !st.Mode().IsRegular():
			errs = append(errs, fieldErr(field, "%s is not a regular file (%s)", p, st.Mode().Type()))
		case want >= 0 && st.Size() != want:
			errs = append(errs, fieldErr(field, "%s has %d bytes; the buffer needs %d", p, st.Size(), want))
		case limit > 0 && st.Size() > limit:
			errs = append(errs, fieldErr(field, "%s has %d bytes, at most %d", p, st.Size(), limit))
		}
	}
	if s.Kernel != "" {
		file("kernel", s.Kernel, -1, MaxKernelBytes)
	}
	if s.Baseline != "" {
		file("baseline", s.Baseline, -1, MaxKernelBytes)
	}
	byName := map[string]*Buffer{}
	for i, a := range s.Args {
		if a.Buffer == nil {
			continue
		}
		byName[a.Name] = a.Buffer
		if in := a.Buffer.Init; in != nil && in.Kind == "file" && in.File != "" {
			file(fmt.Sprintf("args[%d].buffer.init.file", i), in.File, int64(a.Buffer.Bytes()), 0)
		}
	}
	for i, c := range s.Check {
		if b := byName[c.Arg]; b != nil && c.File != "" {
			file(fmt.Sprintf("check[%d].file", i), c.File, int64(b.Bytes()), 0)
		}
	}
	return errors.Join(errs...)
}
