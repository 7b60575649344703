package iket

import (
	"bufio"
	"bytes"
	"fmt"
	"io"

	"github.com/iket-trace/iket/internal/outfile"
	"github.com/iket-trace/iket/trace"
)

// WriteCapture writes a capture file at path: meta (its Launches replaced by
// the launches' metadata, in order) and each launch's warp buffers, through
// trace.WriteCapture. It writes a temporary file in the same directory and
// renames it, so path never holds a half-written capture. The capture's
// format version is the launches' (one capture holds one version); a
// meta.Version that is set must match it.
func WriteCapture(path string, meta trace.Meta, launches ...*TraceResult) error {
	if len(launches) == 0 {
		return fmt.Errorf("write capture %s: no launches", path)
	}
	meta.Launches = make([]trace.LaunchMeta, len(launches))
	bufs := make([]io.Reader, len(launches))
	format := 0
	for i, l := range launches {
		if l == nil {
			return fmt.Errorf("write capture %s: launch %d is nil", path, i)
		}
		f := l.Format
		if f == 0 {
			f = trace.FormatVersion
		}
		if i == 0 {
			format = f
		} else if f != format {
			return fmt.Errorf("write capture %s: launch %d (%s) has record format %d, launch 0 format %d: write them to two captures", path, i, l.Meta.Kernel, f, format)
		}
		meta.Launches[i] = l.Meta
		if want := l.Meta.Size(); int64(len(l.Buffers)) != want {
			return fmt.Errorf("write capture %s: launch %d (%s) has %d bytes of buffers, its metadata says %d", path, i, l.Meta.Kernel, len(l.Buffers), want)
		}
		bufs[i] = bytes.NewReader(l.Buffers)
	}
	if meta.Version != 0 && meta.Version != format {
		return fmt.Errorf("write capture %s: metadata says format version %d, the launches' records are version %d", path, meta.Version, format)
	}
	meta.Version = format
	// A temporary file renamed into place; a link, a device or a folder at
	// path is refused (internal/outfile).
	f, err := outfile.Create(path)
	if err != nil {
		return fmt.Errorf("write capture %s: %w", path, err)
	}
	defer f.Abort()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := trace.WriteCapture(bw, &meta, bufs); err != nil {
		return fmt.Errorf("write capture %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write capture %s: %w", path, err)
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("write capture %s: %w", path, err)
	}
	return nil
}
