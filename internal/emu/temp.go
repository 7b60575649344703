package emu

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"

	"github.com/iket-trace/iket/trace"
)

// OpenTemp writes the launches' capture to a file in tb's temp directory
// and opens it with [trace.Open]; the capture is closed when tb ends. For
// benchmarks and tests that need a real file (decoding through ReadAt).
func OpenTemp(tb testing.TB, ls ...*Launch) *trace.Capture {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "emu.iket")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := Write(bw, ls...); err != nil {
		tb.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	c, err := trace.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// MustRead lays out the launches' capture in memory and opens it with
// [Read], failing tb on an error.
func MustRead(tb testing.TB, ls ...*Launch) *trace.Capture {
	tb.Helper()
	data, err := Capture(ls...)
	if err != nil {
		tb.Fatalf("emu capture: %v", err)
	}
	c, err := Read(data)
	if err != nil {
		tb.Fatalf("read capture: %v", err)
	}
	return c
}
