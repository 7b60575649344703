package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInterrupted: a command whose context is cancelled (SIGINT, SIGTERM)
// exits 130 and leaves every output as it was.
func TestInterrupted(t *testing.T) {
	capPath := bundledCapture(t)
	dir := t.TempDir()
	old := filepath.Join(dir, "old.pftrace")
	if err := os.WriteFile(old, []byte("the old trace"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{
		{"export", capPath, "-o", old},
		{"export", capPath, "-o", filepath.Join(dir, "new.html")},
		{"stats", capPath},
		{"validate", capPath},
		{"check", capPath, "--expect", "strict", "--junit", filepath.Join(dir, "junit.xml")},
		{"demo", "--replay", "-o", filepath.Join(dir, "demo")},
	} {
		var out, errb bytes.Buffer
		if code := run(ctx, args, &out, &errb); code != exitInterrupted || !strings.Contains(errb.String(), "interrupted") {
			t.Errorf("%v: exit %d, stderr %q; want %d and \"interrupted\"", args, code, errb.String(), exitInterrupted)
		}
	}
	if b, _ := os.ReadFile(old); string(b) != "the old trace" {
		t.Errorf("the old output is now %q", b)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != "old.pftrace" && e.Name() != "demo" {
			t.Errorf("left %s behind", e.Name())
		}
	}
}
