package attach

// The fake CUDA driver, CUPTI and application of testdata/fake (README.md
// there): buildFake compiles them once per test binary, so that tests run
// the injection library end to end with no GPU.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iket-trace/iket/internal/fakecuda"
	"github.com/iket-trace/iket/trace"
)

// fake holds the fake's compiled files (internal/fakecuda), built once per
// test binary in a directory removed at once: buildFake writes them into
// each test's own t.TempDir (fakeapp finds libcuda.so.1 beside it, through
// an rpath of $ORIGIN), so nothing outlives the tests.
var fake struct {
	once      sync.Once
	lib, app  []byte
	skip, err string
}

// buildFake writes the fake driver and fakeapp into a directory of t's:
// libDir/libcuda.so.1 (the fake driver, which is also the fake CUPTI: give
// it to the injection library as IKET_CUPTI_LIB), libDir/libcuda.so (a link
// to it, for linking) and app (libDir/fakeapp, which loads
// libDir/libcuda.so.1). It skips the test when there is no C compiler.
func buildFake(t *testing.T) (libDir, app string) {
	t.Helper()
	fake.once.Do(func() {
		dir, err := os.MkdirTemp("", "iket-fake-")
		if err != nil {
			fake.err = err.Error()
			return
		}
		defer os.RemoveAll(dir)
		app, err := fakecuda.Build(dir)
		switch {
		case errors.Is(err, fakecuda.ErrNoCompiler):
			fake.skip = err.Error()
			return
		case err != nil:
			fake.err = err.Error()
			return
		}
		if fake.lib, err = os.ReadFile(filepath.Join(dir, "libcuda.so.1")); err == nil {
			fake.app, err = os.ReadFile(app)
		}
		if err != nil {
			fake.err = err.Error()
		}
	})
	if fake.skip != "" {
		if os.Getenv("IKET_REQUIRE_CC") == "1" {
			t.Fatalf("%s (IKET_REQUIRE_CC=1)", fake.skip)
		}
		t.Skip(fake.skip)
	}
	if fake.err != "" {
		t.Fatalf("building the fake CUDA driver: %s", fake.err)
	}
	libDir = t.TempDir()
	app = filepath.Join(libDir, "fakeapp")
	if err := os.WriteFile(filepath.Join(libDir, "libcuda.so.1"), fake.lib, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("libcuda.so.1", filepath.Join(libDir, "libcuda.so")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(app, fake.app, 0o755); err != nil {
		t.Fatal(err)
	}
	return libDir, app
}

// fakeEnv returns this environment without the variables that steer the
// fake or an injection, plus extra ("K=V").
func fakeEnv(extra ...string) []string { return fakecuda.Env(os.Environ(), extra...) }

type fakeAppRun struct {
	code           int            // exit code, -1 when killed by a signal
	signal         syscall.Signal // the signal, when killed
	stdout, stderr string
	timedOut       bool
}

// runFake runs app with args and env, killing it after timeout.
func runFakeApp(t *testing.T, timeout time.Duration, env []string, app string, args ...string) fakeAppRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, app, args...)
	cmd.Env = env
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	r := fakeAppRun{stdout: so.String(), stderr: se.String(), timedOut: ctx.Err() != nil}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.signal = ws.Signal()
		}
	default:
		t.Fatalf("%s %v: %v", app, args, err)
	}
	return r
}

func TestFakeDriverSelfCheck(t *testing.T) {
	_, app := buildFake(t)
	cases := []struct {
		args   string
		env    string
		code   int
		signal syscall.Signal
		stdout string
		stderr string // a substring
		hangs  bool
	}{
		{args: ""},
		{args: "--print", stdout: "fakeapp stdout line\n", stderr: "fakeapp stderr line\n"},
		{args: "--launches 5 --grid 3 --block 96"},
		{args: "--launches 0"},
		{args: "--uninstrumented"},
		{args: "--ex"},
		{args: "--ex --ptsz"},
		{args: "--coop"},
		{args: "--coop --grid 100000", code: 3, stderr: "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"},
		{args: "--ptsz"},
		{args: "--graph"},
		{args: "--graph --ex --launches 3"},
		{args: "--graph --ptsz --capture-mode relaxed"},
		{args: "--graph --nonblocking --capture-mode thread"},
		{args: "--kernel a pc --kernel b plain --kernel c unpaired"},
		{args: "--wrap --version 1"},
		{args: "--ctx-create"},
		{args: "--block 2048", code: 3, stderr: "CUDA_ERROR_INVALID_VALUE"},
		{args: "--names iket-names\\x201\\n", code: 3, stderr: "CUDA_ERROR_INVALID_IMAGE"},
		{args: "--names iket-names\\x201\\n --kernel k plain"},
		{args: "--exit 7", code: 7},
		{args: "--crash", code: -1, signal: syscall.SIGSEGV},
		{args: "--fork 3"},
		{args: "--fork 2 --exit 4", code: 4},
		{args: "--fork 2 --crash", code: 128 + int(syscall.SIGSEGV)},
		{args: "--print --fork 2", stdout: "fakeapp stdout line\n", stderr: "fakeapp stderr line\n"},
		{args: "--kernel k fault", code: 3, stderr: "CUDA_ERROR_ILLEGAL_ADDRESS"},
		{args: "--kernel k fault --graph", code: 3, stderr: "CUDA_ERROR_ILLEGAL_ADDRESS"},
		{args: "--kernel k hang", hangs: true},
		{args: "--kernel k hang --graph --nonblocking", hangs: true},
		{args: "--bogus", code: 2, stderr: "usage"},
		{args: "", env: "CUDA_INJECTION64_PATH=/nonexistent/libinject.so"},
		{args: "", env: "CUDA_INJECTION64_PATH=" + app}, // not a library
		{args: "", env: "FAKE_ALLOC_STRADDLE=1"},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.args+" "+c.env, "/", "_"), func(t *testing.T) {
			timeout := 20 * time.Second
			if c.hangs {
				timeout = time.Second
			}
			var env []string
			if c.env != "" {
				env = []string{c.env}
			}
			r := runFakeApp(t, timeout, fakeEnv(env...), app, strings.Fields(c.args)...)
			if c.hangs {
				if !r.timedOut {
					t.Fatalf("exited (code %d) instead of hanging; stderr:\n%s", r.code, r.stderr)
				}
				return
			}
			if r.timedOut {
				t.Fatalf("timed out; stderr:\n%s", r.stderr)
			}
			if r.code != c.code || r.signal != c.signal {
				t.Errorf("exit code %d signal %v, want %d %v; stderr:\n%s", r.code, r.signal, c.code, c.signal, r.stderr)
			}
			if r.stdout != c.stdout {
				t.Errorf("stdout %q, want %q", r.stdout, c.stdout)
			}
			if c.stderr != "" && !strings.Contains(r.stderr, c.stderr) {
				t.Errorf("stderr %q lacks %q", r.stderr, c.stderr)
			}
			if c.stderr == "" && r.stderr != "" {
				t.Errorf("stderr %q, want none", r.stderr)
			}
		})
	}
}

// buildTestInject compiles testdata/fake/testinject.c into a library.
func buildTestInject(t *testing.T) string {
	t.Helper()
	lib := filepath.Join(t.TempDir(), "libtestinject.so")
	if err := fakecuda.Compile("-shared", "-fPIC", "-o", lib, "testinject.c", "-ldl"); err != nil {
		t.Fatal(err)
	}
	return lib
}

// runInjected runs fakeapp with testinject.c injected and returns its
// report's lines.
func runInjected(t *testing.T, env []string, args ...string) (fakeAppRun, []string) {
	t.Helper()
	libDir, app := buildFake(t)
	inject := buildTestInject(t)
	out := filepath.Join(t.TempDir(), "report.txt")
	env = append([]string{"CUDA_INJECTION64_PATH=" + inject, "IKET_CUPTI_LIB=" + filepath.Join(libDir, "libcuda.so.1"),
		"FAKE_TEST_OUT=" + out}, env...)
	r := runFakeApp(t, 20*time.Second, fakeEnv(env...), app, args...)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no report: %v; stderr:\n%s", err, r.stderr)
	}
	return r, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func TestFakeDriverCallbacks(t *testing.T) {
	r, lines := runInjected(t, nil, "--launches", "3", "--grid", "5", "--block", "64")
	if r.code != 0 || r.stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	want := []string{
		"name 1 307 0 cuLaunchKernel",
		"name 1 652 0 cuLaunchKernelEx",
		"name 1 5 0 cuFake5",
		"name 2 211 0 cudaLaunchKernel_v7000",
		"name 2 430 0 cudaLaunchKernelExC_v11060",
		"name 1 701 1 -",
		"name 3 1 1 -",
		"subscribe 0 CUPTI_SUCCESS",
		"second 39",
		"enable-bad 1",
		"resource 1 ctx=1",
		"resource 6 ctx=1 FAKEMOD 1",
		"enter cuLaunchKernel _Z8pipelinePfS_i 1 grid=5 block=64 ctx=1",
		"exit cuLaunchKernel 1 rc=0 data=1001",
		"enter cuLaunchKernel _Z8pipelinePfS_i 2 grid=5 block=64 ctx=1",
		"exit cuLaunchKernel 2 rc=0 data=1002",
		"enter cuLaunchKernel _Z8pipelinePfS_i 3 grid=5 block=64 ctx=1",
		"exit cuLaunchKernel 3 rc=0 data=1003",
	}
	if got := strings.Join(lines, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("report:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}

	// cuLaunchKernelEx's callback is not enabled; a failed launch reports
	// its error at EXIT.
	_, lines = runInjected(t, nil, "--ex")
	for _, l := range lines {
		if strings.HasPrefix(l, "enter") || strings.HasPrefix(l, "exit") {
			t.Errorf("--ex: %q, want no launch callbacks", l)
		}
	}
	r, lines = runInjected(t, nil, "--block", "2048")
	if r.code != 3 || lines[len(lines)-1] != "exit cuLaunchKernel 1 rc=1 data=1001" {
		t.Errorf("--block 2048: exit %d, last line %q", r.code, lines[len(lines)-1])
	}

	// CUPTI taken by another tool; names hidden.
	r, lines = runInjected(t, []string{"FAKE_CUPTI_TAKEN=1", "FAKE_NO_CUPTI_NAMES=1"})
	if r.code != 0 {
		t.Errorf("FAKE_CUPTI_TAKEN: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	want = []string{"name 1 307 17 -", "name 1 652 17 -", "name 1 5 17 -", "name 2 211 17 -", "name 2 430 17 -",
		"name 1 701 17 -", "name 3 1 17 -", "subscribe 39 CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"}
	if got := strings.Join(lines, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("FAKE_CUPTI_TAKEN report:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}

	// testinject.c's synchronous copies in a capture's launch callback
	// invalidate a global or thread-local capture, unless it switches its
	// thread to the relaxed mode.
	for _, c := range []struct {
		args    string
		relaxed bool
		code    int
	}{
		{"--graph", false, 3}, {"--graph --capture-mode thread", false, 3},
		{"--graph --capture-mode relaxed", false, 0}, {"--graph", true, 0},
	} {
		env := []string{"FAKE_TEST_LAYOUT=" + t.TempDir()}
		if c.relaxed {
			env = append(env, "FAKE_TEST_RELAXED=1")
		}
		r, _ := runInjected(t, env, strings.Fields(c.args)...)
		if r.code != c.code || (c.code == 3 && !strings.Contains(r.stderr, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED")) {
			t.Errorf("%s relaxed %v: exit %d, want %d; stderr:\n%s", c.args, c.relaxed, r.code, c.code, r.stderr)
		}
	}

	// Each child of --fork loads the injection in its own cuInit.
	_, lines = runInjected(t, nil, "--fork", "3", "--launches", "1")
	n := 0
	for _, l := range lines {
		if l == "subscribe 0 CUPTI_SUCCESS" {
			n++
		}
	}
	if n != 3 {
		t.Errorf("--fork 3: %d subscriptions, want 3:\n%s", n, strings.Join(lines, "\n"))
	}
}

// TestFakeDriverLayout traces launches with testinject.c's small iket and
// decodes the buffers the fake "device" wrote with the trace package.
func TestFakeDriverLayout(t *testing.T) {
	cases := []struct {
		args  []string
		env   []string
		check func(t *testing.T, s trace.Summary, err error)
	}{
		{args: []string{"--launches", "2", "--grid", "3", "--block", "100"}, check: func(t *testing.T, s trace.Summary, err error) {
			// Two launches of 3 CTAs of 4 warps: 9 events a warp, 4 ranges.
			if err != nil || s.Warps != 24 || s.Finished != 24 || s.Stored != 216 || s.Ranges != 96 || s.Dropped != 0 {
				t.Errorf("summary %+v, err %v", s, err)
			}
		}},
		{args: []string{"--ex", "--grid", "2", "--block", "64"}, env: []string{"FAKE_TEST_CAP=4"}, check: func(t *testing.T, s trace.Summary, err error) {
			if s.Warps != 8 || s.Stored != 32 || s.Dropped != 40 || s.Attempted != 72 {
				t.Errorf("summary %+v, err %v", s, err)
			}
		}},
		{args: []string{"--wrap", "--grid", "1", "--block", "64"}, env: []string{"FAKE_TEST_CAP=4"}, check: func(t *testing.T, s trace.Summary, err error) {
			if s.Warps != 4 || s.Stored != 16 || s.Dropped != 20 || s.Finished != 4 {
				t.Errorf("summary %+v, err %v", s, err)
			}
		}},
		{args: []string{"--kernel", "_Z1kv", "unpaired", "--grid", "1", "--block", "64"}, check: func(t *testing.T, s trace.Summary, err error) {
			if s.Violations[trace.UnclosedRange] != 2 {
				t.Errorf("summary %+v, err %v", s, err)
			}
		}},
		{args: []string{"--kernel", "_Z1kv", "fault", "--launches", "1", "--grid", "2", "--block", "64"}, env: []string{"FAKE_TEST_HOST=1"}, check: func(t *testing.T, s trace.Summary, err error) {
			if s.Warps != 4 || s.Started != 4 || s.Finished != 0 || s.Stored != 8 {
				t.Errorf("summary %+v, err %v", s, err)
			}
		}},
		{args: []string{"--launches", "1"}, env: []string{"FAKE_ALLOC_STRADDLE=1", "FAKE_TEST_CAP=1000"}, check: func(t *testing.T, s trace.Summary, err error) {
			// testinject.c does not avoid the boundary: the kernel faults.
			if s.Warps != 0 {
				t.Errorf("summary %+v, err %v", s, err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			r, lines := runInjected(t, append([]string{"FAKE_TEST_LAYOUT=" + dir}, c.env...), c.args...)
			s, err := decodeFakeLaunches(t, dir)
			if testing.Verbose() {
				t.Logf("exit %d; report:\n%s\nstderr:\n%s", r.code, strings.Join(lines, "\n"), r.stderr)
			}
			c.check(t, s, err)
		})
	}
}

// decodeFakeLaunches reads the launches testinject.c wrote into dir and
// validates them, returning the summary of all of them.
func decodeFakeLaunches(t *testing.T, dir string) (trace.Summary, error) {
	t.Helper()
	meta := trace.Meta{Tool: "fake-test", Device: &trace.Device{Name: "Fake H200", MaxSMClockMHz: 1980}}
	var bufs []io.Reader
	for i := 0; ; i++ {
		desc, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("launch-%d.txt", i)))
		if err != nil {
			break
		}
		bin, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("launch-%d.bin", i)))
		if err != nil {
			t.Fatal(err)
		}
		names := "iket-names 1\nROLE producer\nROLE consumer\nRANGE load\nRANGE compute\n"
		if b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("launch-%d.names", i))); err == nil {
			names = string(b)
		}
		table, err := trace.ParseNameTable(names)
		if err != nil {
			t.Fatal(err)
		}
		var l trace.LaunchMeta
		var mode string
		if _, err := fmt.Sscanf(string(desc), "%s %d %d %d %d %d %d %d %d %s", &l.Kernel, &l.Grid[0], &l.Grid[1], &l.Grid[2],
			&l.Block[0], &l.Block[1], &l.Block[2], &l.WarpsPerCTA, &l.Capacity, &mode); err != nil {
			t.Fatalf("%s: %v", desc, err)
		}
		l.Mode, l.Names = trace.Mode(mode), table
		l.Warps = uint64(l.Grid[0]*l.Grid[1]*l.Grid[2]) * uint64(l.WarpsPerCTA)
		meta.Launches = append(meta.Launches, l)
		bufs = append(bufs, bytes.NewReader(bin))
	}
	var all trace.Summary
	if len(bufs) == 0 {
		return all, nil
	}
	var file bytes.Buffer
	if err := trace.WriteCapture(&file, &meta, bufs); err != nil {
		t.Fatal(err)
	}
	c, err := trace.Read(bytes.NewReader(file.Bytes()), int64(file.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	for i := range c.NumLaunches() {
		s, err := trace.Validate(c.Launch(i), trace.Options{})
		errs = append(errs, err)
		all.Warps += s.Warps
		all.Started += s.Started
		all.Finished += s.Finished
		all.Stored += s.Stored
		all.Attempted += s.Attempted
		all.Dropped += s.Dropped
		all.Ranges += s.Ranges
		for k, n := range s.Violations {
			if all.Violations == nil {
				all.Violations = map[trace.ViolationKind]int{}
			}
			all.Violations[k] += n
		}
	}
	return all, errors.Join(errs...)
}
