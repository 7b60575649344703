package iket

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"

	"github.com/iket-trace/iket/internal/outfile"
	"github.com/iket-trace/iket/internal/raw"
	"github.com/iket-trace/iket/trace"
)

// WriteCapture writes traced launches to a capture file at path through
// [trace.WriteCapture], the one writer of the format: meta, with its
// Launches replaced by the launches' metadata (in order) and its Version set
// to their record format, then each launch's buffers. The launches must
// share one record format, and a meta.Version that is set must match it.
// path is replaced only by a complete capture (internal/outfile: a
// temporary file renamed into place); a link, a device or a folder at path
// is refused, and a failed write leaves path as it was.
func WriteCapture(path string, meta trace.Meta, launches ...*TraceResult) error {
	fail := func(err error) error { return fmt.Errorf("write capture %s: %w", path, err) }
	if len(launches) == 0 {
		return fail(errors.New("no launches"))
	}
	meta.Launches = make([]trace.LaunchMeta, len(launches))
	bufs := make([]io.Reader, len(launches))
	format := 0
	for i, l := range launches {
		if l == nil {
			return fail(fmt.Errorf("launch %d is nil", i))
		}
		f := cmp.Or(l.Format, raw.FormatVersion)
		if i == 0 {
			format = f
		} else if f != format {
			return fail(fmt.Errorf("launch %d (%s) has record format %d, launch 0 format %d: write them to two captures", i, l.Meta.Kernel, f, format))
		}
		meta.Launches[i] = l.Meta
		// As many records per warp as its fullest warp used, when every
		// warp's fit (trace.Shrink).
		rd, err := trace.Shrink(f, &meta.Launches[i], bytes.NewReader(l.Buffers))
		if err != nil {
			return fail(err)
		}
		bufs[i] = rd
	}
	if meta.Version != 0 && meta.Version != format {
		return fail(fmt.Errorf("metadata says format version %d, the launches' records are version %d", meta.Version, format))
	}
	meta.Version = format
	f, err := outfile.Create(path)
	if err != nil {
		return fail(err)
	}
	defer f.Abort()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := trace.WriteCapture(bw, &meta, bufs); err != nil {
		return fail(err)
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	if err := f.Commit(); err != nil {
		return fail(err)
	}
	return nil
}
