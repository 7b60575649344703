package outfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCreateRefuses(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.iket")
	if err := os.WriteFile(in, []byte("input"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard")
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
	}{
		{"the input", in},
		{"a hard link to the input", hard},
		{"a symlink", link},
		{"a directory", dir},
		{"a device", os.DevNull},
		{"empty", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Create(tt.path, in)
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("Create(%q) error %v, want ErrRefused", tt.path, err)
			}
		})
	}
	if b, err := os.ReadFile(in); err != nil || string(b) != "input" {
		t.Errorf("input now %q, %v", b, err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 3 {
		t.Errorf("dir holds %d entries, want 3 (no temporary files left)", len(ents))
	}
}

func TestCommitAbort(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(out)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("partial"))
	f.Abort()
	if b, _ := os.ReadFile(out); string(b) != "old" {
		t.Errorf("after Abort: %q, want the old file", b)
	}
	if err := WriteFile(context.Background(), out, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); string(b) != "new" {
		t.Errorf("after WriteFile: %q", b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f, err = CreateContext(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := f.Write([]byte("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("Write after cancel: %v", err)
	}
	if err := f.Commit(); !errors.Is(err, context.Canceled) {
		t.Errorf("Commit after cancel: %v", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "new" {
		t.Errorf("after a cancelled write: %q", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("dir holds %d entries, want 1", len(ents))
	}
}
