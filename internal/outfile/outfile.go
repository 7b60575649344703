package outfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrRefused is matched (errors.Is) by every error of [Create] that refuses
// the target rather than failing to create the temporary file.
var ErrRefused = errors.New("refused output path")

// RefusedError says why [Create] will not write to Path.
type RefusedError struct {
	Path   string
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("output %s: %s", e.Path, e.Reason)
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// File is an output being written to a temporary file beside its target.
// It is an io.Writer; it is not safe for concurrent use.
type File struct {
	f    *os.File
	ctx  context.Context
	path string
	tmp  string
	done bool
}

// Create starts writing the file at path. It returns a [*RefusedError]
// when path is one of inputs (the same file, however named), exists and is
// not a regular file, or is a symbolic link. Nothing at path changes until
// [File.Commit]; call [File.Abort] (a no-op after Commit) on every other
// path, typically deferred.
func Create(path string, inputs ...string) (*File, error) {
	return CreateContext(context.Background(), path, inputs...)
}

// CreateContext is [Create] with a context: once ctx is done, Write and
// Commit fail with ctx's error, so a writer stops at its next write.
func CreateContext(ctx context.Context, path string, inputs ...string) (*File, error) {
	if err := check(path, inputs); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	return &File{f: f, ctx: ctx, path: path, tmp: f.Name()}, nil
}

// check refuses targets that must not be replaced.
func check(path string, inputs []string) error {
	refuse := func(format string, a ...any) error {
		return &RefusedError{Path: path, Reason: fmt.Sprintf(format, a...)}
	}
	if path == "" {
		return refuse("empty path")
	}
	lst, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil // a new file: it cannot be an input
	case err != nil:
		return fmt.Errorf("create %s: %w", path, err)
	case lst.Mode()&fs.ModeSymlink != 0:
		return refuse("is a symbolic link; iket does not write through links (give the target's path, or remove the link)")
	case !lst.Mode().IsRegular():
		return refuse("exists and is not a regular file (%s)", fileKind(lst.Mode()))
	}
	for _, in := range inputs {
		if in == "" {
			continue
		}
		ist, err := os.Stat(in)
		if err != nil {
			continue // an input that is gone is not the output
		}
		if os.SameFile(lst, ist) {
			return refuse("is the input %s; give another output path", in)
		}
	}
	return nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}

// Name returns the target path.
func (f *File) Name() string { return f.path }

// Write writes to the temporary file. It fails once the context is done.
func (f *File) Write(p []byte) (int, error) {
	if f.done {
		return 0, fmt.Errorf("write %s: %w", f.path, os.ErrClosed)
	}
	if err := f.ctx.Err(); err != nil {
		return 0, fmt.Errorf("write %s: %w", f.path, err)
	}
	n, err := f.f.Write(p)
	if err != nil {
		return n, fmt.Errorf("write %s: %w", f.path, err)
	}
	return n, nil
}

// Commit flushes the temporary file to disk and renames it to the target,
// replacing the old file in one step. On error the temporary file is
// removed and the target is as it was.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("commit %s: %w", f.path, os.ErrClosed)
	}
	f.done = true
	fail := func(err error) error {
		f.f.Close()
		os.Remove(f.tmp)
		return fmt.Errorf("commit %s: %w", f.path, err)
	}
	if err := f.ctx.Err(); err != nil {
		return fail(err)
	}
	if err := f.f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.f.Close(); err != nil {
		os.Remove(f.tmp)
		return fmt.Errorf("commit %s: %w", f.path, err)
	}
	// The target may have changed since Create (say, into a link).
	if err := check(f.path, nil); err != nil {
		os.Remove(f.tmp)
		return err
	}
	if err := os.Rename(f.tmp, f.path); err != nil {
		os.Remove(f.tmp)
		return fmt.Errorf("commit %s: %w", f.path, err)
	}
	return nil
}

// Abort discards the temporary file; the target is untouched. It is a
// no-op after [File.Commit] or another Abort, so it can be deferred.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.f.Close()
	os.Remove(f.tmp)
}

// WriteFile writes data to path through a [File]: all of it or, on error,
// nothing.
func WriteFile(ctx context.Context, path string, data []byte, inputs ...string) error {
	f, err := CreateContext(ctx, path, inputs...)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Commit()
}
