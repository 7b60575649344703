package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/perfetto"
	"github.com/iket-trace/iket/trace"
)

// hostCapture writes an emulated capture to dir/name as iket run -- CMD
// would, with a process (pid, host, rank) and, unless realtime is 0, host
// clocks around its launch.
func hostCapture(t *testing.T, dir, name string, pid, rank int, realtime int64) string {
	t.Helper()
	l := &emu.Launch{Kernel: "k", Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{32, 1, 1}, Capacity: 8, SMs: 1, Names: emu.MustNames("RANGE load")}
	for cta := range uint32(2) {
		l.Warp([3]uint32{cta, 0, 0}, 0).Push("load", 0, 500_002_000_000).Pop(500_002_001_000)
	}
	c := emu.MustRead(t, l)
	meta := c.Meta
	meta.Process = &trace.Process{PID: pid, Host: "node", Rank: rank}
	if realtime != 0 {
		meta.Launches[0].HostClock = &trace.HostClock{RealtimeBefore: realtime, RealtimeAfter: realtime + 100_000}
	}
	var b bytes.Buffer
	if err := trace.WriteCapture(&b, &meta, []io.Reader{c.Launch(0).SectionReader()}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExportMergedCLI(t *testing.T) {
	dir := t.TempDir()
	a := hostCapture(t, dir, "a.iket", 10, 0, 1_765_000_000_000_000_000)
	b := hostCapture(t, dir, "b.iket", 11, 1, 1_765_000_000_050_000_000)
	bare := hostCapture(t, dir, "bare.iket", 12, -1, 0)
	out := filepath.Join(dir, "merged.pftrace")
	if code, _, errs := runCLI(t, "export", a, b, "-o", out); code != 0 {
		t.Fatalf("export a b: exit %d: %s", code, errs)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := perfetto.CheckValid(bytes.NewReader(data)); err != nil {
		t.Errorf("merged trace: %v", err)
	}
	for _, name := range []string{"node · rank 0 · pid 10 · emulated", "node · rank 1 · pid 11 · emulated"} {
		if !bytes.Contains(data, []byte(name)) {
			t.Errorf("merged trace has no track %q", name)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"without host clocks", []string{a, bare, "-o", filepath.Join(dir, "m2.pftrace")}, bare},
		{"without -o", []string{a, b}, "-o"},
		{"as json", []string{a, b, "-o", filepath.Join(dir, "m.json")}, "pftrace"},
		{"over a capture", []string{a, b, "-o", b}, b},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := runCLI(t, append([]string{"export"}, tc.args...)...)
			if code != exitError || !strings.Contains(errs, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errs, exitError, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "m2.pftrace")); !os.IsNotExist(err) {
		t.Errorf("a refused merge left its output: %v", err)
	}
}

// TestWriteAppMerged: a run of several captures gets OUT/merged.pftrace;
// one that cannot be merged gets a warning, not an error.
func TestWriteAppMerged(t *testing.T) {
	out := t.TempDir()
	paths := []string{
		hostCapture(t, out, "pid10-gpu0/trace.iket", 10, 0, 1_765_000_000_000_000_000),
		hostCapture(t, out, "pid10-gpu1/trace.iket", 10, 0, 1_765_000_000_000_100_000),
		filepath.Join(out, "pid11-gpu0", captureFile), // missing: left out with a warning
	}
	var w bytes.Buffer
	writeAppMerged(context.Background(), out, paths, &w)
	if !strings.Contains(w.String(), "wrote "+filepath.Join(out, mergedFile)) {
		t.Errorf("output %q does not say it wrote %s", w.String(), mergedFile)
	}
	if !strings.Contains(w.String(), "warning: "+paths[2]+" left out") {
		t.Errorf("output %q does not name the missing capture", w.String())
	}
	f, err := os.Open(filepath.Join(out, mergedFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := perfetto.CheckValid(f); err != nil {
		t.Errorf("%s: %v", mergedFile, err)
	}

	out2 := t.TempDir()
	bad := []string{
		hostCapture(t, out2, "pid10-gpu0/trace.iket", 10, 0, 1_765_000_000_000_000_000),
		hostCapture(t, out2, "pid11-gpu0/trace.iket", 11, 1, 0),
	}
	w.Reset()
	writeAppMerged(context.Background(), out2, bad, &w)
	if !strings.Contains(w.String(), "warning") || !strings.Contains(w.String(), bad[1]) {
		t.Errorf("output %q: want a warning naming %s", w.String(), bad[1])
	}
	if _, err := os.Stat(filepath.Join(out2, mergedFile)); !os.IsNotExist(err) {
		t.Errorf("a failed merge left %s: %v", mergedFile, err)
	}
}

// TestRunAppMerged: a run of two processes (the fake driver's) writes
// OUT/merged.pftrace beside their captures.
func TestRunAppMerged(t *testing.T) {
	app := withFake(t)
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := runCLI(t, "run", "-o", out, "--", app, "--fork", "2", "--launches", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	f, err := os.Open(filepath.Join(out, mergedFile))
	if err != nil {
		t.Fatalf("%s: %v\nstderr:\n%s", mergedFile, err, stderr)
	}
	defer f.Close()
	if err := perfetto.CheckValid(f); err != nil {
		t.Errorf("%s: %v", mergedFile, err)
	}
	if !strings.Contains(stderr, "2 captures on one timeline") {
		t.Errorf("stderr does not say the merged trace was written:\n%s", stderr)
	}
}
