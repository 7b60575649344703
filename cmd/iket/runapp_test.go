package main

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/iket-trace/iket/attach"
	"github.com/iket-trace/iket/iket"
	"github.com/iket-trace/iket/internal/fakecuda"
	"github.com/iket-trace/iket/trace"
)

var fakeApp struct {
	once     sync.Once
	dir, app string
	err      error
}

// withFake builds the fake CUDA driver and application once and points the
// injection library at the fake CUPTI; it returns fakeapp's path. The
// injection library is built into a temporary cache folder.
func withFake(t *testing.T) string {
	t.Helper()
	fakeApp.once.Do(func() {
		fakeApp.dir, fakeApp.err = os.MkdirTemp("", "iket-cmd-fake-")
		if fakeApp.err == nil {
			fakeApp.app, fakeApp.err = fakecuda.Build(fakeApp.dir)
		}
	})
	if errors.Is(fakeApp.err, fakecuda.ErrNoCompiler) {
		if os.Getenv("IKET_REQUIRE_CC") == "1" {
			t.Fatalf("%v (IKET_REQUIRE_CC=1)", fakeApp.err)
		}
		t.Skip(fakeApp.err)
	}
	if fakeApp.err != nil {
		t.Fatal(fakeApp.err)
	}
	for _, k := range []string{"CUDA_INJECTION64_PATH", "FAKE_CUPTI_TAKEN", "FAKE_NO_CUPTI_NAMES"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("IKET_CUPTI_LIB", filepath.Join(fakeApp.dir, "libcuda.so.1"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(fakeApp.dir, "cache"))
	return fakeApp.app
}

func TestRunApp(t *testing.T) {
	app := withFake(t)
	tests := []struct {
		name     string
		env      []string
		args     func(out string) []string
		code     int
		stderr   string   // a fragment of stderr
		files    []string // outputs that must exist, relative to out
		pairs    int      // latency.json: pairs of the first kernel (-1: no file)
		baseline bool     // latency.json has the baseline's times
		dormant  int      // latency.json: untraced pairs of the first kernel (--dormant)
		control  int      // latency.json: the baseline's second run's pairs (--control)
	}{
		{name: "first launch", code: 0, pairs: 1,
			args:  func(o string) []string { return []string{"run", "-o", o, "--", app, "--launches", "3"} },
			files: []string{"trace.iket", "trace.pftrace", "report.html", "latency.json"}, stderr: "1 traced launches"},
		{name: "baseline pairs", code: 0, pairs: 3, baseline: true,
			args: func(o string) []string {
				return []string{"run", "-o", o, "--launch", "0-2", "--baseline", app + " --uninstrumented --launches 3", "--", app, "--launches", "3"}
			}, files: []string{"trace.iket", "latency.json"}, stderr: "running the baseline"},
		{name: "untraced launches against the baseline", code: 0, pairs: 3, baseline: true, dormant: 3,
			args: func(o string) []string {
				return []string{"run", "-o", o, "--launch", "0-2", "--baseline", app + " --uninstrumented --launches 3", "--dormant", "--", app, "--launches", "3"}
			}, files: []string{"trace.iket", "latency.json"}, stderr: "untraced (the build with tracing, iket not tracing these launches) against the baseline"},
		{name: "--dormant without a baseline", code: 2, pairs: -1, stderr: "--dormant needs --baseline",
			args: func(o string) []string { return []string{"run", "-o", o, "--dormant", "--", app} }},
		{name: "the baseline again (the control)", code: 0, pairs: 3, baseline: true, control: 3,
			args: func(o string) []string {
				return []string{"run", "-o", o, "--launch", "0-2", "--baseline", app + " --uninstrumented --launches 3", "--control", "--", app, "--launches", "3"}
			}, files: []string{"trace.iket", "latency.json"}, stderr: "is no farther from 1 than the control's 1.0000: within this run's noise"},
		{name: "both untraced runs", code: 0, pairs: 2, baseline: true, dormant: 2, control: 2,
			args: func(o string) []string {
				return []string{"run", "-o", o, "--launch", "1-2", "--baseline", app + " --uninstrumented --launches 3", "--dormant", "--control", "--", app, "--launches", "3"}
			}, files: []string{"trace.iket", "latency.json"}, stderr: "running the baseline again (the control)"},
		{name: "--control without a baseline", code: 2, pairs: -1, stderr: "--control needs --baseline",
			args: func(o string) []string { return []string{"run", "-o", o, "--control", "--", app} }},
		{name: "a flag of run -- CMD given to run KERNEL", code: 2, pairs: -1, stderr: "--baseline is for run -- CMD",
			args: func(o string) []string { return []string{"run", "-o", o, "--baseline", app, "warp_roles"} }},
		{name: "records kept in the L2", code: 0, pairs: 1, stderr: "records kept in the L2 (a persisting window over the buffers, 0.3 MiB set aside)",
			args: func(o string) []string { return []string{"run", "-o", o, "--", app, "--launches", "1"} }},
		{name: "a device without persisting L2 lines", code: 0, pairs: 1, stderr: "records written through the L2 with the kernel's data", env: []string{"FAKE_NO_L2_PERSIST=1"},
			args: func(o string) []string { return []string{"run", "-o", o, "--", app, "--launches", "1"} }},
		{name: "the program's exit code", code: 7, pairs: 1,
			args:  func(o string) []string { return []string{"run", "-o", o, "--", app, "--exit", "7"} },
			files: []string{"trace.iket"}, stderr: "exited with status 7"},
		{name: "not instrumented", code: 2, pairs: -1, stderr: "-DIKET_ENABLE=1",
			args: func(o string) []string { return []string{"run", "-o", o, "--", app, "--uninstrumented"} }},
		{name: "a kernel beside the instrumented one that constructs no Warp", code: 0, pairs: 1, stderr: "launch 0: pipeline, occurrence 0",
			args: func(o string) []string {
				return []string{"run", "-o", o, "--", app, "--kernel", "_Z4fillv", "plain", "--kernel", "_Z8pipelinePfS_i", "pc"}
			}, files: []string{"trace.iket"}},
		{name: "only kernels that construct no Warp", code: 2, pairs: -1, stderr: "no instrumented kernel launched: fill, in a module built with -DIKET_ENABLE=1, constructed no iket::Warp",
			args: func(o string) []string { return []string{"run", "-o", o, "--", app, "--kernel", "_Z4fillv", "plain"} }},
		{name: "a dormant build traced through its PTX", code: 0, pairs: 1, stderr: "looked into 1 module images at their load for dormant builds, 1 compiled again with their events on",
			args: func(o string) []string { return []string{"run", "-o", o, "--", app, "--dormant", "ptx"} }, files: []string{"trace.iket"}},
		{name: "a dormant build without PTX", code: 2, pairs: -1, stderr: "no traced launch: iket could not compile the module of pipeline (a dormant build: built with -DIKET_ENABLE=1, its SASS runs no event) again with the events on",
			args: func(o string) []string { return []string{"run", "-o", o, "--", app, "--dormant", "sass"} }},
		{name: "a launch too large to trace", code: 2, pairs: -1, stderr: "--launch 0 selected none of their launches that iket could trace (not traced: too_large; the lines above say why)", env: []string{"IKET_BUFFER_LIMIT=1000"},
			args: func(o string) []string { return []string{"run", "-o", o, "--", app} }},
		{name: "a lowered capacity names its kernel", code: 0, pairs: 1, stderr: ": pipeline: 8 warps at --capacity 4096 would take more than 20000 bytes of buffers: traced with 256 records per warp", env: []string{"IKET_BUFFER_LIMIT=20000"},
			args: func(o string) []string { return []string{"run", "-o", o, "--", app, "--launches", "1"} }},
		{name: "no kernel matched", code: 2, pairs: -1, stderr: "matched no launch",
			args: func(o string) []string { return []string{"run", "-o", o, "--kernel", "^zzz", "--", app} }},
		{name: "program missing", code: 2, pairs: -1, stderr: "start /nonexistent/app",
			args: func(o string) []string { return []string{"run", "-o", o, "--", "/nonexistent/app"} }},
		{name: "CUPTI taken", code: 2, pairs: -1, stderr: "already in use", env: []string{"FAKE_CUPTI_TAKEN=1"},
			args: func(o string) []string { return []string{"run", "-o", o, "--", app} }},
		{name: "another injection", code: 2, pairs: -1, stderr: "another CUDA tool", env: []string{"CUDA_INJECTION64_PATH=/opt/tool.so"},
			args: func(o string) []string { return []string{"run", "-o", o, "--", app} }},
		{name: "a flag of run KERNEL", code: 2, pairs: -1, stderr: "--rounds is for run KERNEL",
			args: func(o string) []string { return []string{"run", "-o", o, "--rounds", "3", "--", app} }},
		{name: "a hang", code: 2, pairs: -1, stderr: "did not finish", files: []string{"trace.iket"},
			args: func(o string) []string {
				return []string{"run", "-o", o, "--timeout", "300ms", "--", app, "--kernel", "_Z1hv", "hang"}
			}},
		{name: "bad --launch", code: 2, pairs: -1, stderr: "--launch",
			args: func(o string) []string { return []string{"run", "-o", o, "--launch", "x", "--", app} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, kv := range tt.env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			out := filepath.Join(t.TempDir(), "out")
			code, _, stderr := runCLI(t, tt.args(out)...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Fatalf("exit %d, want %d; stderr:\n%s\nwant it to say %q", code, tt.code, stderr, tt.stderr)
			}
			for _, f := range tt.files {
				if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
					t.Errorf("output %s: %v", f, err)
				}
			}
			if tt.pairs < 0 {
				return
			}
			b, err := os.ReadFile(filepath.Join(out, latencyFile))
			if err != nil {
				t.Fatal(err)
			}
			var lj appLatencyJSON
			if err := json.Unmarshal(b, &lj); err != nil {
				t.Fatalf("latency.json: %v", err)
			}
			if len(lj.Kernels) != 1 || len(lj.Kernels[0].Pairs) != tt.pairs || !lj.Serialized || lj.Kernels[0].FlushedBytes != iket.DefaultFlushBytes {
				t.Fatalf("latency.json kernels %+v, want one with %d pairs", lj.Kernels, tt.pairs)
			}
			if k := lj.Kernels[0]; (k.Uninstrumented != nil) != tt.baseline || (tt.baseline && k.PairedRatio <= 0) {
				t.Errorf("latency.json baseline %+v, paired %v; want baseline %v", k.Uninstrumented, k.PairedRatio, tt.baseline)
			}
			checkTimedList(t, "dormant", lj.Dormant, tt.dormant, lj.Kernels[0].Kernel)
			checkTimedList(t, "control", lj.Control, tt.control, lj.Kernels[0].Kernel)
			if tt.dormant > 0 || tt.control > 0 {
				// The capture's launches carry them too, for the report.
				c, err := trace.Open(filepath.Join(out, captureFile))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				l := c.Meta.Launches[0].Latency
				if l == nil {
					t.Fatal("capture's launch 0 has no latency")
				}
				if tt.dormant > 0 && (l.Dormant == nil || len(l.Dormant.RoundsUS) != tt.dormant || l.DormantPairedRatio <= 0 ||
					!strings.Contains(l.Settings.Order, "the baseline program, then the program untraced")) {
					t.Errorf("capture's launch 0 latency %+v, want %d untraced rounds, their paired ratio and the runs' order", l, tt.dormant)
				}
				if tt.control > 0 && (l.Control == nil || len(l.Control.RoundsUS) != tt.control || l.ControlPairedRatio <= 0 ||
					!strings.HasSuffix(l.Settings.Order, ", then the baseline program again")) {
					t.Errorf("capture's launch 0 latency %+v, want %d control rounds, their paired ratio and the runs' order", l, tt.control)
				}
			}
			if tt.control > 0 {
				if code, stdout, se := runCLI(t, "stats", filepath.Join(out, captureFile)); code != 0 || !strings.Contains(stdout, "control (the uninstrumented binary again)") {
					t.Errorf("stats: exit %d, want the control's line: %s%s", code, stdout, se)
				}
				if code, stdout, se := runCLI(t, "check", filepath.Join(out, captureFile), "--launch", "0", "--expect", "control_ratio <= 1000"); code != 0 {
					t.Errorf("check control_ratio <= 1000: exit %d: %s%s", code, stdout, se)
				}
				if code, _, _ := runCLI(t, "check", filepath.Join(out, captureFile), "--launch", "0", "--expect", "control_ratio < 0"); code != 1 {
					t.Errorf("check control_ratio < 0: exit %d, want 1", code)
				}
			}
			if tt.dormant > 0 {
				// iket check reads it: a bound nothing can fail passes, one
				// nothing can meet fails.
				if code, stdout, se := runCLI(t, "check", filepath.Join(out, captureFile), "--launch", "0", "--expect", "dormant_ratio <= 1000"); code != 0 {
					t.Errorf("check dormant_ratio <= 1000: exit %d: %s%s", code, stdout, se)
				}
				if code, _, _ := runCLI(t, "check", filepath.Join(out, captureFile), "--launch", "0", "--expect", "dormant_ratio < 0"); code != 1 {
					t.Errorf("check dormant_ratio < 0: exit %d, want 1", code)
				}
			}
			if code == 0 {
				if c, _, se := runCLI(t, "validate", filepath.Join(out, captureFile)); c != 0 {
					t.Errorf("validate: exit %d: %s", c, se)
				}
			}
		})
	}
}

func TestRunAppProcesses(t *testing.T) {
	app := withFake(t)
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := runCLI(t, "run", "-o", out, "--", app, "--fork", "2", "--launches", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "pid*-gpu0", captureFile))
	if len(dirs) != 2 {
		t.Errorf("captures %v, want one per process", dirs)
	}
	// Run again into the same folder: the first run's folders go, named.
	code, stdout, stderr := runCLI(t, "run", "-o", out, "--", app, "--fork", "2", "--launches", "1")
	if code != 0 {
		t.Fatalf("second run: exit %d: %s", code, stderr)
	}
	again, _ := filepath.Glob(filepath.Join(out, "pid*-gpu0", captureFile))
	reused := slices.ContainsFunc(again, func(p string) bool { return slices.Contains(dirs, p) }) // a pid again
	if len(again) != 2 || !reused && !strings.Contains(stdout+stderr, "removed what an earlier run left") {
		t.Errorf("second run: captures %v, want only its own two, and the first run's named as removed: %s", again, stdout+stderr)
	}
	// One process into it: every folder goes, and out holds its capture.
	if code, _, stderr := runCLI(t, "run", "-o", out, "--", app, "--launches", "1"); code != 0 {
		t.Fatalf("third run: exit %d: %s", code, stderr)
	}
	if left, _ := filepath.Glob(filepath.Join(out, "pid*")); len(left) != 0 {
		t.Errorf("third run left %v from the runs before", left)
	}
	if _, err := os.Stat(filepath.Join(out, captureFile)); err != nil {
		t.Errorf("third run: %v", err)
	}
}

// checkTimedList checks latency.json's list of untraced launches (key
// "dormant" or "control"): none when want is 0, else the traced kernel with
// want pairs against the baseline.
func checkTimedList(t *testing.T, key string, got []attach.KernelLatency, want int, kernel string) {
	t.Helper()
	switch {
	case want == 0 && len(got) != 0:
		t.Errorf("latency.json %s %+v, want none without --%s", key, got, key)
	case want > 0 && (len(got) != 1 || len(got[0].Pairs) != want || got[0].Uninstrumented == nil || got[0].PairedRatio <= 0 || got[0].Kernel != kernel):
		t.Errorf("latency.json %s %+v, want the traced kernel with %d pairs against the baseline", key, got, want)
	}
}

// TestTimedAgainst: an untraced run's launches of the capture's kernels and
// occurrences alone, paired with the baseline's by occurrence.
func TestTimedAgainst(t *testing.T) {
	timed := func(kernel string, occ uint64, ms float64) *attach.Launch {
		return &attach.Launch{Kernel: kernel, Info: attach.LaunchInfo{Kernel: kernel, Occurrence: occ, Status: "ok", ElapsedMS: &ms}}
	}
	base := &attach.Process{Launches: []*attach.Launch{timed("k", 1, 0.010), timed("k", 2, 0.020), timed("j", 1, 0.040)}}
	again := &attach.Process{Launches: []*attach.Launch{
		timed("k", 1, 0.011), timed("k", 2, 0.022),
		timed("k", 3, 0.500), // an occurrence the capture did not trace
		timed("j", 1, 0.080), // a kernel it did not trace
	}}
	in := map[launchKey]string{{"k", 1}: "ok", {"k", 2}: "ok", {"k", 3}: "ok"}
	for _, tt := range []struct {
		name      string
		p, base   *attach.Process
		wantPairs int
		want      float64 // paired ratio
	}{
		{"the second run against the first", again, base, 2, 1.1},
		{"no untraced run", nil, base, 0, 0},
		{"no baseline", again, nil, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := timedAgainst(tt.p, tt.base, in)
			if tt.wantPairs == 0 {
				if got != nil {
					t.Fatalf("got %+v, want nil", got)
				}
				return
			}
			// k's occurrence 3 has no baseline launch: unpaired, not a pair.
			if len(got) != 1 || got[0].Mangled != "k" || len(got[0].Pairs) != tt.wantPairs || got[0].Uninstrumented == nil ||
				math.Abs(got[0].PairedRatio-tt.want) > 1e-6 {
				t.Fatalf("got %+v, want kernel k with %d pairs at %v", got, tt.wantPairs, tt.want)
			}
			if m := pairedByKernel(got); m["k"] != &got[0] || len(m) != 1 {
				t.Errorf("pairedByKernel: %v", m)
			}
		})
	}
}

// TestWriteWithinNoise: a note for a traced ratio no farther from 1 than
// its control's, none otherwise.
func TestWriteWithinNoise(t *testing.T) {
	base := trace.Samples{MedianUS: 10}
	k := func(paired float64) attach.KernelLatency {
		return attach.KernelLatency{Kernel: "k", Mangled: "k", Uninstrumented: &base, PairedRatio: paired}
	}
	for _, tt := range []struct {
		name            string
		traced, control float64 // paired ratios; control 0: none
		want            bool
	}{
		{"within", 1.02, 1.03, true},
		{"within, below 1", 0.98, 1.03, true},
		{"beyond", 1.05, 1.03, false},
		{"beyond, below 1", 0.96, 0.97, false},
		{"no control", 1.00, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ctl []attach.KernelLatency
			if tt.control != 0 {
				// Another kernel's control first: the note reads k's own.
				ctl = []attach.KernelLatency{{Kernel: "j", Mangled: "j", Uninstrumented: &base, PairedRatio: 1.5}, k(tt.control)}
			}
			var b strings.Builder
			writeWithinNoise(&b, []attach.KernelLatency{k(tt.traced)}, pairedByKernel(ctl))
			if got := strings.Contains(b.String(), "within this run's noise"); got != tt.want {
				t.Errorf("note %q, want one: %v", b.String(), tt.want)
			}
		})
	}
}

func TestSplitCommand(t *testing.T) {
	for in, want := range map[string][]string{
		`./app --n 4`:           {"./app", "--n", "4"},
		`python "my script.py"`: {"python", "my script.py"},
		`a 'b c' d\ e`:          {"a", "b c", "d e"},
		`  `:                    nil,
	} {
		got, err := splitCommand(in)
		if err != nil || strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("splitCommand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := splitCommand(`a "b`); err == nil {
		t.Error(`splitCommand("a \"b") succeeded`)
	}
}

func TestGPUReadingsFill(t *testing.T) {
	g := gpuReadings{
		before: map[string]iket.GPUReading{"GPU-1": {Driver: "580.159.04", MaxSMClockMHz: 1980, Conditions: &trace.Conditions{SMClockMHz: 1755}}},
		after:  map[string]iket.GPUReading{"GPU-1": {Conditions: &trace.Conditions{SMClockMHz: 1980}}},
	}
	d := &trace.Device{Name: "NVIDIA H200", UUID: "GPU-1", MaxSMClockMHz: 1980}
	g.fill(d)
	if d.Driver != "580.159.04" || d.Before == nil || d.Before.SMClockMHz != 1755 || d.After == nil || d.After.SMClockMHz != 1980 {
		t.Errorf("filled %+v", d)
	}
	other := &trace.Device{UUID: "GPU-2"}
	g.fill(other)
	g.fill(nil)
	if other.Driver != "" || other.Before != nil {
		t.Errorf("a GPU NVML did not read got %+v", other)
	}
}
