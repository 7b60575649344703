package attach

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iket-trace/iket/trace"
)

// The injection library (lib/iket_inject.c) inside fakeapp, a driver-API
// program linked against the fake CUDA driver and CUPTI of testdata/fake:
// the whole path of `iket run -- CMD` but the GPU.

var injectLib struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// library builds the injection library once per test binary.
func library(t *testing.T) string {
	t.Helper()
	injectLib.once.Do(func() {
		injectLib.path, injectLib.err = Library(context.Background(), filepath.Join(os.TempDir(), "iket-attach-test-lib"))
	})
	if injectLib.err != nil {
		t.Fatalf("build the injection library: %v", injectLib.err)
	}
	return injectLib.path
}

type injectCase struct {
	name  string
	args  []string // fakeapp's
	env   []string // FAKE_* and the like
	opt   Options
	check func(t *testing.T, r *Result)
}

func runInjectCase(t *testing.T, tc injectCase) *Result {
	t.Helper()
	libDir, app := buildFake(t)
	o := tc.opt
	o.Args = append([]string{app}, tc.args...)
	o.Env = fakeEnv(tc.env...)
	o.Library = library(t)
	if o.CUPTI == "" {
		o.CUPTI = filepath.Join(libDir, "libcuda.so.1")
	}
	var stdout, stderr bytes.Buffer
	o.Stdout, o.Stderr = &stdout, &stderr
	if o.LaunchTimeout == 0 {
		o.LaunchTimeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := Run(ctx, o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(func() { res.Close() })
	t.Logf("stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	return res
}

// decodeAll writes p's capture, reads it back and decodes every warp
// strictly; it returns the events per launch.
func decodeAll(t *testing.T, p *Process) (*trace.Capture, [][]int) {
	t.Helper()
	meta, bufs, left, err := p.Capture("iket test", nil, nil)
	if err != nil || len(left) > 0 {
		t.Fatalf("Capture: %v (left out %v)", err, left)
	}
	var b bytes.Buffer
	if err := trace.WriteCapture(&b, &meta, bufs); err != nil {
		t.Fatalf("WriteCapture: %v", err)
	}
	c, err := trace.Read(bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		t.Fatalf("read the capture: %v", err)
	}
	var events [][]int
	for i := 0; i < c.NumLaunches(); i++ {
		d, err := trace.NewDecoder(c.Launch(i), trace.Options{Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		var per []int
		err = d.Each(func(w *trace.Warp) error {
			per = append(per, len(w.Events))
			return nil
		}, func(e *trace.WarpError) error { return e })
		if err != nil {
			t.Fatalf("launch %d: decode: %v", i, err)
		}
		events = append(events, per)
	}
	return c, events
}

func one(t *testing.T, r *Result) *Process {
	t.Helper()
	if len(r.Processes) != 1 {
		t.Fatalf("%d processes, want 1", len(r.Processes))
	}
	p := r.Processes[0]
	if p.Err != nil {
		t.Fatalf("protocol error: %v", p.Err)
	}
	for _, n := range p.Notes {
		t.Logf("note: %+v", n)
	}
	return p
}

func TestInject(t *testing.T) {
	tests := []injectCase{
		{
			name: "first launch traced, the program's exit code kept",
			args: []string{"--launches", "3", "--exit", "5"},
			check: func(t *testing.T, r *Result) {
				if r.ExitCode != 5 {
					t.Errorf("exit code %d, want 5", r.ExitCode)
				}
				p := one(t, r)
				tr := p.Traced()
				if len(tr) != 1 || tr[0].Info.Occurrence != 0 || tr[0].Info.Status != "ok" {
					t.Fatalf("traced %+v, want launch 0", tr)
				}
				if tr[0].Kernel != "pipeline" || tr[0].Info.ElapsedMS == nil || tr[0].Info.Resources.Registers == 0 {
					t.Errorf("launch info %+v", tr[0].Info)
				}
				c, ev := decodeAll(t, p)
				lm := c.Launch(0).Meta
				if lm.Warps != 8 || lm.WarpsPerCTA != 4 {
					t.Errorf("warps %d per CTA %d, want 8 and 4 (grid 2, block 128)", lm.Warps, lm.WarpsPerCTA)
				}
				// Every warp's 9 records fit: the capture keeps 9 per warp.
				if lm.Capacity != 9 || lm.RanCapacity != 4096 {
					t.Errorf("capacity %d, ran with %d, want 9 kept of 4096", lm.Capacity, lm.RanCapacity)
				}
				for w, n := range ev[0] {
					if n != 9 { // ROLE and four push/pop pairs
						t.Errorf("warp %d: %d events, want 9", w, n)
					}
				}
				if p.Bye == nil || p.Bye.Launches != 3 || p.Bye.Traced != 1 {
					t.Errorf("bye %+v, want 3 launches seen, 1 traced", p.Bye)
				}
			},
		},
		{
			name: "the L2 flushed before each timed launch",
			args: []string{"--launches", "2"},
			opt:  Options{FlushL2: 1 << 20, Launches: mustSel(t, "all")},
			check: func(t *testing.T, r *Result) {
				tr := one(t, r).Traced()
				if len(tr) != 2 {
					t.Fatalf("traced %d launches, want 2", len(tr))
				}
				for _, l := range tr {
					if l.Info.FlushedBytes != 1<<20 {
						t.Errorf("launch %d: flushed %d bytes, want 1 MiB", l.Info.Occurrence, l.Info.FlushedBytes)
					}
				}
				// Each flush follows 20 ms of an idle GPU: the second launch
				// starts at least that long after the first ended.
				if gap := tr[1].Info.HostNS.MonotonicBefore - tr[0].Info.HostNS.MonotonicAfter; gap < 20e6 {
					t.Errorf("launch 1 started %d ns after launch 0 ended, want at least 20 ms", gap)
				}
				k := Compare(r.Processes[0], nil)
				if len(k) != 1 || k[0].FlushedBytes != 1<<20 {
					t.Errorf("latency %+v, want the flush recorded", k)
				}
			},
		},
		{
			name: "a range of launches through cuLaunchKernelEx",
			args: []string{"--launches", "4", "--ex"},
			opt:  Options{Launches: mustSel(t, "1-2")},
			check: func(t *testing.T, r *Result) {
				tr := one(t, r).Traced()
				if len(tr) != 2 || tr[0].Info.Occurrence != 1 || tr[1].Info.Occurrence != 2 || !strings.HasPrefix(tr[0].Info.Family, "cuLaunchKernelEx") {
					t.Fatalf("traced %+v, want occurrences 1 and 2 through cuLaunchKernelEx", tr)
				}
			},
		},
		{
			name: "fixed callback ids when CUPTI cannot name them",
			args: []string{"--launches", "1"},
			env:  []string{"FAKE_NO_CUPTI_NAMES=1"},
			check: func(t *testing.T, r *Result) {
				if n := len(one(t, r).Traced()); n != 1 {
					t.Errorf("%d traced, want 1", n)
				}
			},
		},
		{
			name: "--kernel selects by demangled name",
			args: []string{"--kernel", "_Z5otherv", "pc", "--kernel", "_Z8pipelinePfS_i", "pc", "--launches", "2"},
			opt:  Options{Kernel: regexp.MustCompile(`^pipeline$`)},
			check: func(t *testing.T, r *Result) {
				p := one(t, r)
				tr := p.Traced()
				if len(tr) != 1 || tr[0].Kernel != "pipeline" {
					t.Fatalf("traced %+v, want pipeline's first launch", tr)
				}
				if len(p.Instrumented) != 2 {
					t.Errorf("instrumented kernels %v, want both", p.Instrumented)
				}
			},
		},
		{
			name: "a kernel that constructs no Warp in an instrumented module is not counted",
			args: []string{"--kernel", "_Z4fillv", "plain", "--kernel", "_Z8pipelinePfS_i", "pc", "--launches", "2"},
			check: func(t *testing.T, r *Result) {
				p := one(t, r)
				tr := p.Traced()
				if len(tr) != 1 || tr[0].Kernel != "pipeline" || tr[0].Info.Index != 0 {
					t.Fatalf("traced %+v, want pipeline's launch as launch 0", tr)
				}
				if len(p.Skipped) != 1 || p.Skipped[0].Code != "no_warp" || p.Skipped[0].Kernel == nil || *p.Skipped[0].Kernel != "_Z4fillv" {
					t.Errorf("skipped %+v, want fill's first launch named once", p.Skipped)
				}
				if p.Bye == nil || p.Bye.Launches != 3 || p.Bye.Matching != 1 || p.Bye.Traced != 1 {
					t.Errorf("bye %+v, want 3 launches seen, 1 matching, 1 traced", p.Bye)
				}
			},
		},
		{
			name: "a dormant build is traced through its PTX, compiled again with its events on",
			args: []string{"--dormant", "ptx", "--launches", "2"},
			check: func(t *testing.T, r *Result) {
				p := one(t, r)
				if n := len(p.Traced()); n != 1 {
					t.Fatalf("traced %d launches, want 1", n)
				}
				for w, n := range func() []int { _, ev := decodeAll(t, p); return ev[0] }() {
					if n != 9 {
						t.Errorf("warp %d: %d events, want 9 (the module loaded with its gates set)", w, n)
					}
				}
				if len(p.Skipped) != 0 || len(p.Notes) != 0 {
					t.Errorf("skipped %+v, notes %+v, want none", p.Skipped, p.Notes)
				}
				if p.Bye == nil || p.Bye.JITLoads != 1 || p.Bye.JITReplaced != 1 || p.Bye.JITNs == 0 {
					t.Errorf("bye %+v, want the one load looked into and given PTX, and its time", p.Bye)
				}
			},
		},
		{
			name: "a dormant build with no PTX is named, not traced",
			args: []string{"--dormant", "sass", "--launches", "2"},
			check: func(t *testing.T, r *Result) {
				p := one(t, r)
				if n := len(p.Traced()); n != 0 {
					t.Fatalf("traced %d launches, want none", n)
				}
				if len(p.Skipped) != 1 || p.Skipped[0].Code != "dormant" || !strings.Contains(p.Skipped[0].Why, "-DIKET_LIVE=1") {
					t.Errorf("skipped %+v, want the kernel named once as a dormant build, with the ways out", p.Skipped)
				}
				if p.Bye == nil || p.Bye.Launches != 2 || p.Bye.Matching != 0 || p.Bye.JITLoads != 1 || p.Bye.JITReplaced != 0 {
					t.Errorf("bye %+v, want 2 launches seen, none matching, the load looked into and not replaced", p.Bye)
				}
			},
		},
		{
			name: "a dormant build whose PTX is for another GPU is named with that reason",
			args: []string{"--dormant", "other", "--launches", "1"},
			check: func(t *testing.T, r *Result) {
				p := one(t, r)
				if len(p.Skipped) != 1 || p.Skipped[0].Code != "dormant" || !strings.Contains(p.Skipped[0].Why, "targets another GPU") {
					t.Errorf("skipped %+v, want the kernel named with its module's reason", p.Skipped)
				}
			},
		},
		{
			name: "a module unloaded takes its reason along: the next one at its handle has its own",
			args: []string{"--dormant", "other", "--reload", "sass", "--launches", "1"},
			check: func(t *testing.T, r *Result) {
				p := one(t, r)
				if len(p.Skipped) != 1 || p.Skipped[0].Code != "dormant" || strings.Contains(p.Skipped[0].Why, "another GPU") ||
					!strings.Contains(p.Skipped[0].Why, "-DIKET_LIVE=1") {
					t.Errorf("skipped %+v, want the kernel named with the reason of the module loaded last", p.Skipped)
				}
			},
		},
		{
			name: "a dormant build whose PTX does not compile runs as built",
			args: []string{"--dormant", "ptx", "--launches", "2"},
			env:  []string{"FAKE_JIT_FAIL=1"},
			check: func(t *testing.T, r *Result) {
				p := one(t, r)
				if n := len(p.Traced()); n != 0 {
					t.Fatalf("traced %d launches, want none", n)
				}
				if !hasNote(p, "jit") || len(p.Skipped) != 1 || p.Skipped[0].Code != "dormant" || !strings.Contains(p.Skipped[0].Why, "did not compile its PTX") {
					t.Errorf("notes %+v, skipped %+v, want the failed compile noted and the kernel named", p.Notes, p.Skipped)
				}
				if p.Bye == nil || p.Bye.Launches != 2 {
					t.Errorf("bye %+v, want the program's 2 launches", p.Bye)
				}
			},
		},
		{
			name: "timing runs a dormant build as built",
			args: []string{"--dormant", "ptx", "--launches", "2"},
			// a patched image would fail to load and be noted
			env: []string{"FAKE_JIT_FAIL=1"},
			opt: Options{Mode: ModeTime, Times: map[string][]uint64{"_Z8pipelinePfS_i": {0, 1}}},
			check: func(t *testing.T, r *Result) {
				p := one(t, r)
				if len(p.Launches) != 2 {
					t.Fatalf("timed %d launches, want 2", len(p.Launches))
				}
				if len(p.Skipped) != 0 || len(p.Notes) != 0 {
					t.Errorf("skipped %+v, notes %+v, want none", p.Skipped, p.Notes)
				}
				if p.Bye == nil || p.Bye.JITLoads != 0 {
					t.Errorf("bye %+v, want no load looked into", p.Bye)
				}
			},
		},
		{
			name: "a launch too large for its buffers at --capacity runs with fewer records per warp",
			args: []string{"--launches", "1"},
			env:  []string{"IKET_BUFFER_LIMIT=20000"}, // 8 warps: 256 records each fit, 4096 do not
			check: func(t *testing.T, r *Result) {
				p := one(t, r)
				tr := p.Traced()
				if len(tr) != 1 || tr[0].Info.Capacity != 256 || tr[0].Info.BufferBytes != 8*(64+8*257) {
					t.Fatalf("traced %+v, want one launch at 256 records per warp", tr)
				}
				if !hasNote(p, "capacity") {
					t.Errorf("notes %+v, want the lowered capacity named", p.Notes)
				}
				for w, n := range func() []int { _, ev := decodeAll(t, p); return ev[0] }() {
					if n != 9 {
						t.Errorf("warp %d: %d events, want 9", w, n)
					}
				}
			},
		},
		{
			name: "a wrap build's lowered capacity stays a power of two",
			args: []string{"--launches", "1", "--wrap"},
			env:  []string{"IKET_BUFFER_LIMIT=30000"}, // 8 warps: at most 459 records each
			opt:  Options{Capacity: 1024},
			check: func(t *testing.T, r *Result) {
				p := one(t, r)
				tr := p.Traced()
				if len(tr) != 1 || tr[0].Info.Capacity != 256 || tr[0].Info.Build != 1 {
					t.Fatalf("traced %+v, want one wrap launch at 256 records per warp", tr)
				}
				for w, n := range func() []int { _, ev := decodeAll(t, p); return ev[0] }() {
					if n != 9 {
						t.Errorf("warp %d: %d events, want 9", w, n)
					}
				}
			},
		},
		{
			name: "a launch too large for buffers of 16 records is named",
			args: []string{"--launches", "1"},
			env:  []string{"IKET_BUFFER_LIMIT=1000"},
			check: func(t *testing.T, r *Result) {
				p := one(t, r)
				if len(p.Traced()) != 0 || len(p.Skipped) != 1 || p.Skipped[0].Code != "too_large" {
					t.Errorf("traced %d, skipped %+v; want the launch named too large", len(p.Traced()), p.Skipped)
				}
			},
		},
		{
			name: "an uninstrumented program",
			args: []string{"--uninstrumented"},
			check: func(t *testing.T, r *Result) {
				p := one(t, r)
				if len(p.Traced()) != 0 || len(p.Instrumented) != 0 || p.Bye == nil || p.Bye.Launches == 0 {
					t.Errorf("traced %d, instrumented %v, bye %+v", len(p.Traced()), p.Instrumented, p.Bye)
				}
			},
		},
		{
			name: "graphs and stream capture are named, not traced",
			args: []string{"--graph", "--launches", "1"},
			opt:  Options{Launches: mustSel(t, "all")},
			check: func(t *testing.T, r *Result) {
				p := one(t, r)
				codes := map[string]bool{}
				for _, s := range p.Skipped {
					codes[s.Code] = true
				}
				if !codes["graph"] || !codes["stream_capture"] {
					t.Errorf("skipped %+v, want a graph launch and a captured launch", p.Skipped)
				}
			},
		},
		{
			name: "CUPTI taken by another tool",
			env:  []string{"FAKE_CUPTI_TAKEN=1"},
			check: func(t *testing.T, r *Result) {
				if !hasNote(one(t, r), "cupti_taken") {
					t.Errorf("no cupti_taken note")
				}
			},
		},
		{
			name: "CUPTI missing",
			opt:  Options{CUPTI: "/nonexistent/libcupti.so"},
			check: func(t *testing.T, r *Result) {
				if !hasNote(one(t, r), "cupti_missing") {
					t.Errorf("no cupti_missing note")
				}
			},
		},
		{
			name: "another header version is refused",
			args: []string{"--version", "9"},
			check: func(t *testing.T, r *Result) {
				p := one(t, r)
				if len(p.Traced()) != 0 || len(p.Refused) != 1 {
					t.Errorf("traced %d, refused %v", len(p.Traced()), p.Refused)
				}
			},
		},
		{
			name: "several processes, each its own",
			args: []string{"--fork", "2", "--launches", "1"},
			check: func(t *testing.T, r *Result) {
				n := 0
				for _, p := range r.Processes {
					if len(p.Traced()) == 1 {
						n++
					}
				}
				if n != 2 {
					t.Errorf("%d processes traced a launch, want 2 (of %d)", n, len(r.Processes))
				}
			},
		},
		{
			name: "unpaired ranges decode with violations",
			args: []string{"--kernel", "_Z1uv", "unpaired"},
			check: func(t *testing.T, r *Result) {
				p := one(t, r)
				if len(p.Traced()) != 1 || p.Traced()[0].Payload == nil {
					t.Fatalf("traced %+v", p.Traced())
				}
			},
		},
		{
			name: "a hung launch: its buffers, the process killed",
			args: []string{"--kernel", "_Z1hv", "hang"},
			opt:  Options{LaunchTimeout: 300 * time.Millisecond},
			check: func(t *testing.T, r *Result) {
				if r.Hung == nil || r.Hung.Info.Status != "hang" {
					t.Fatalf("Hung = %+v", r.Hung)
				}
				if r.Signal == "" {
					t.Errorf("the hung program was not killed (exit %d)", r.ExitCode)
				}
			},
		},
		{
			name: "a fault with watch-mode buffers",
			args: []string{"--kernel", "_Z1fv", "fault"},
			opt:  Options{Watch: true},
			check: func(t *testing.T, r *Result) {
				p := one(t, r)
				if len(p.Launches) != 1 || p.Launches[0].Info.Status != "fault" || !strings.Contains(p.Launches[0].Info.Error, "ILLEGAL_ADDRESS") {
					t.Fatalf("launches %+v, want one fault", p.Launches)
				}
				if p.Launches[0].Payload == nil {
					t.Errorf("a watch-mode fault kept no buffers")
				}
			},
		},
		{
			name: "a kernel first launched beside another stream's capture leaves the capture whole",
			args: []string{"--capture-other", "--kernel", "_Z8pipelinePfS_i", "pc", "--kernel", "_Z5otherv", "pc"},
			opt:  Options{Kernel: regexp.MustCompile(`^nothing$`)},
			check: func(t *testing.T, r *Result) {
				if r.ExitCode != 0 {
					t.Errorf("the program exited %d: its capture broke", r.ExitCode)
				}
			},
		},
		{
			name: "a _ptsz launch on the per-thread stream being captured is named, not traced",
			args: []string{"--capture-ptsz"},
			check: func(t *testing.T, r *Result) {
				p := one(t, r)
				if r.ExitCode != 0 || len(p.Skipped) != 1 || p.Skipped[0].Code != "stream_capture" {
					t.Errorf("exit %d, skipped %+v; want 0 and the captured launch named", r.ExitCode, p.Skipped)
				}
			},
		},
		{
			name: "a wrap build with a capacity not a power of two is named, not traced",
			args: []string{"--wrap"},
			opt:  Options{Capacity: 100},
			check: func(t *testing.T, r *Result) {
				p := one(t, r)
				if len(p.Traced()) != 0 || len(p.Skipped) != 1 || p.Skipped[0].Code != "capacity" {
					t.Errorf("traced %d, skipped %+v", len(p.Traced()), p.Skipped)
				}
			},
		},
		{
			name: "timing thousands of occurrences",
			args: []string{"--uninstrumented", "--launches", "30000"},
			env:  []string{"IKET_IDLE_MS=0"}, // 20 ms before each of 10000 timed launches otherwise
			opt:  Options{Mode: ModeTime, Times: map[string][]uint64{"_Z8pipelinePfS_i": evens(20000)}},
			check: func(t *testing.T, r *Result) {
				p := one(t, r)
				if p.Err != nil || len(p.Launches) != 10000 {
					t.Errorf("%d launches timed (error %v), want the 10000 even occurrences below 20000", len(p.Launches), p.Err)
				}
				for _, l := range p.Launches {
					if o := l.Info.Occurrence; o%2 != 0 || o >= 20000 {
						t.Errorf("occurrence %d timed, want only even ones below 20000", o)
						break
					}
				}
			},
		},
		{
			name:  "the SASS instruction count from the loaded module's cubin",
			args:  []string{"--kernel", "warp_roles", "pc", "--cubin", absPath(t, "../iket/testdata/warp_roles_sm90.cubin")},
			check: sassIs(280),
		},
		{
			// testdata/warp_roles_plain_sm90.cubin: nvcc -cubin -arch=sm_90 -O3
			// -std=c++17 -Ikernels/include kernels/examples/warp_roles.cu
			// (CUDA 11.8, without IKET_ENABLE).
			name: "a kernel name two loaded cubins count differently has no SASS count",
			args: []string{"--kernel", "warp_roles", "pc", "--cubin", absPath(t, "../iket/testdata/warp_roles_sm90.cubin"),
				"--decoy-cubin", absPath(t, "testdata/warp_roles_plain_sm90.cubin")},
			check: sassIs(0), // the decoy module's warp_roles differs
		},
		{
			name: "the same cubin loaded twice keeps its SASS count",
			args: []string{"--kernel", "warp_roles", "pc", "--cubin", absPath(t, "../iket/testdata/warp_roles_sm90.cubin"),
				"--decoy-cubin", absPath(t, "../iket/testdata/warp_roles_sm90.cubin")},
			check: sassIs(280),
		},
		{
			name: "a program that crashes after its traced launch keeps it",
			args: []string{"--launches", "2", "--crash"},
			check: func(t *testing.T, r *Result) {
				if r.ExitCode != 128+11 || r.Signal == "" {
					t.Errorf("exit %d (%q), want 139 by SIGSEGV", r.ExitCode, r.Signal)
				}
				if n := len(one(t, r).Traced()); n != 1 {
					t.Errorf("%d traced launches, want the one before the crash", n)
				}
			},
		},
		{
			name: "without a flush a traced launch's zeroed buffers are reported",
			args: []string{"--launches", "1"},
			check: func(t *testing.T, r *Result) {
				tr := one(t, r).Traced()
				// 8 warps (grid 2, block 128) of 64 + 8 * 4097 bytes, and 32.
				if len(tr) != 1 || tr[0].Info.FlushedBytes != 0 || tr[0].Info.PreparedBytes != 8*(64+8*4097)+32 {
					t.Errorf("traced %+v, want no flush and 262752 bytes zeroed", tr)
				}
			},
		},
		{
			name: "without a flush the baseline writes as many bytes before its timed launch",
			args: []string{"--uninstrumented", "--launches", "2"},
			opt:  Options{Mode: ModeTime, Times: map[string][]uint64{"_Z8pipelinePfS_i": {0, 1}}},
			check: func(t *testing.T, r *Result) {
				p := one(t, r)
				if len(p.Launches) != 2 {
					t.Fatalf("timed %d launches, want 2", len(p.Launches))
				}
				for _, l := range p.Launches {
					if l.Info.FlushedBytes != 0 || l.Info.PreparedBytes != 8*(64+8*4097)+32 {
						t.Errorf("timed launch %d: flushed %d, prepared %d bytes, want 0 and 262752", l.Info.Occurrence, l.Info.FlushedBytes, l.Info.PreparedBytes)
					}
				}
				// The same 20 ms of an idle GPU as with a flush.
				if gap := p.Launches[1].Info.HostNS.MonotonicBefore - p.Launches[0].Info.HostNS.MonotonicAfter; gap < 20e6 {
					t.Errorf("launch 1 started %d ns after launch 0 ended, want at least 20 ms", gap)
				}
			},
		},
		{
			name: "with a flush the baseline writes only the flush",
			args: []string{"--uninstrumented", "--launches", "1"},
			opt:  Options{Mode: ModeTime, FlushL2: 1 << 20, Times: map[string][]uint64{"_Z8pipelinePfS_i": {0}}},
			check: func(t *testing.T, r *Result) {
				p := one(t, r)
				if len(p.Launches) != 1 || p.Launches[0].Info.FlushedBytes != 1<<20 || p.Launches[0].Info.PreparedBytes != 0 {
					t.Errorf("timed %+v, want the flush alone", p.Launches)
				}
			},
		},
		{
			name: "time mode times the listed occurrences of any kernel",
			args: []string{"--uninstrumented", "--launches", "4"},
			opt:  Options{Mode: ModeTime, Times: map[string][]uint64{"_Z8pipelinePfS_i": {1, 3}}},
			check: func(t *testing.T, r *Result) {
				p := one(t, r)
				var occ []uint64
				for _, l := range p.Launches {
					if l.Info.Traced || l.Info.ElapsedMS == nil {
						t.Errorf("timed launch %+v", l.Info)
					}
					occ = append(occ, l.Info.Occurrence)
				}
				if len(occ) != 2 || occ[0] != 1 || occ[1] != 3 {
					t.Errorf("timed occurrences %v, want [1 3]", occ)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, runInjectCase(t, tc))
		})
	}
}

func absPath(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func evens(n uint64) []uint64 {
	var v []uint64
	for i := uint64(0); i < n; i += 2 {
		v = append(v, i)
	}
	return v
}

func mustSel(t *testing.T, s string) Selection {
	t.Helper()
	sel, err := ParseSelection(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func hasNote(p *Process, code string) bool {
	for _, n := range p.Notes {
		if n.Code == code {
			return true
		}
	}
	return false
}

// sassIs checks that one launch was traced and reported n SASS
// instructions (0: no count).
func sassIs(n int) func(*testing.T, *Result) {
	return func(t *testing.T, r *Result) {
		tr := one(t, r).Traced()
		if len(tr) != 1 || tr[0].Info.Resources.SASSInstructions != n {
			t.Errorf("traced %d launches, resources %+v; want one with %d SASS instructions", len(tr), tr, n)
		}
	}
}

// TestInjectRecordsL2 runs traced launches with FAKE_L2_LOG: the fake
// driver logs every set-aside, window, reset and kernel run, so the test
// sees what each launch ran with and what was restored after. In the
// wanted logs, B stands for the buffers' address and N for their size.
func TestInjectRecordsL2(t *testing.T) {
	const run = "run _Z8pipelinePfS_i window "
	untraced := run + "0 0 limit "
	tests := []struct {
		name string
		args []string
		env  []string
		opt  Options
		kept int64 // the set-aside the traced launch reports: -1 its buffers (below an eighth of the fake's L2)
		note bool  // a l2_window warning
		want []string
	}{
		{
			name: "kept in the L2 for the traced launch, restored after", args: []string{"--launches", "2"}, kept: -1,
			want: []string{"limit N", "window 0 B N 1.000 2", run + "B N limit N", "window 0 0 0 0.000 0", "reset", "limit 0", untraced + "0"},
		},
		{
			name: "the program's set-aside raised for the traced launch, then its own again",
			args: []string{"--launches", "2", "--l2-limit", "4096"}, kept: -1,
			want: []string{"limit 4096", "limit N", "window 0 B N 1.000 2", run + "B N limit N", "window 0 0 0 0.000 0", "reset", "limit 4096", untraced + "4096"},
		},
		{
			name: "the program's set-aside kept as it is when larger",
			args: []string{"--launches", "2", "--l2-limit", "1048576"}, kept: 1048576,
			want: []string{"limit 1048576", "window 0 B N 1.000 2", run + "B N limit 1048576", "window 0 0 0 0.000 0", "reset", untraced + "1048576"},
		},
		{
			name: "the driver refuses the set-aside", args: []string{"--launches", "1"},
			env: []string{"FAKE_L2_REFUSE=limit"}, note: true,
			want: []string{untraced + "0"},
		},
		{
			name: "the driver refuses the window: the set-aside put back", args: []string{"--launches", "1"},
			env: []string{"FAKE_L2_REFUSE=window"}, note: true,
			want: []string{"limit N", "limit 0", untraced + "0"},
		},
		{
			name: "a window in the program's launch attributes left alone", args: []string{"--launches", "1", "--ex-window"}, note: true,
			want: []string{untraced + "0"},
		},
		{
			name: "IKET_RECORDS_L2=0", args: []string{"--launches", "1"}, env: []string{"IKET_RECORDS_L2=0"},
			want: []string{untraced + "0"},
		},
		{
			name: "a device without persisting lines", args: []string{"--launches", "1"},
			env: []string{"FAKE_NO_L2_PERSIST=1"}, note: true,
			want: []string{untraced + "0"},
		},
		{
			// the program's limit and window, its launch with them: iket sets, resets and restores nothing
			name: "the program's own window left alone", args: []string{"--launches", "1", "--l2-window"}, note: true,
			want: []string{"limit 4096", "window 0 W 4096 1.000 2", run + "W 4096 limit 4096"},
		},
		{
			name: "watch mode (host memory)", args: []string{"--launches", "1"}, opt: Options{Watch: true},
			want: []string{untraced + "0"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), "l2.log")
			r := runInjectCase(t, injectCase{args: tc.args, env: append([]string{"FAKE_L2_LOG=" + logPath}, tc.env...), opt: tc.opt})
			p := one(t, r)
			tr := p.Traced()
			if len(tr) != 1 || tr[0].Info.Status != "ok" {
				t.Fatalf("traced %+v, want one launch", tr)
			}
			if got := hasNote(p, "l2_window"); got != tc.note {
				t.Errorf("l2_window warning %v, want %v", got, tc.note)
			}
			raw, err := os.ReadFile(logPath)
			if err != nil {
				t.Fatal(err)
			}
			log := strings.Split(strings.TrimSpace(string(raw)), "\n")
			n, wantKept := tr[0].Info.BufferBytes, uint64(tc.kept)
			if tc.kept < 0 {
				wantKept = n
			}
			if n == 0 || tr[0].Info.RecordsL2Bytes != wantKept {
				t.Errorf("records_l2_bytes %d, want %d (buffers %d)", tr[0].Info.RecordsL2Bytes, wantKept, n)
			}
			if k := Compare(p, nil); len(k) != 1 || k[0].RecordsL2Bytes != wantKept {
				t.Errorf("latency %+v, want records_l2_bytes %d", k, wantKept)
			}
			if meta, _, _, err := p.Capture("iket test", nil, nil); err != nil || len(meta.Launches) != 1 ||
				meta.Launches[0].RecordsL2Bytes == nil || *meta.Launches[0].RecordsL2Bytes != wantKept {
				t.Errorf("capture metadata %+v (%v), want records_l2_bytes %d", meta.Launches, err, wantKept)
			}
			// The window's address, from the first window line: the
			// buffers' (B) or the program's (W), never 0.
			addr := ""
			for _, l := range log {
				if f := strings.Fields(l); len(f) == 6 && f[0] == "window" && f[2] != "0" {
					addr = f[2]
					break
				}
			}
			want := make([]string, len(tc.want))
			for i, w := range tc.want {
				w = strings.ReplaceAll(w, " N", fmt.Sprintf(" %d", n))
				w = strings.ReplaceAll(strings.ReplaceAll(w, " B ", " "+addr+" "), " W ", " "+addr+" ")
				want[i] = w
			}
			if !slices.Equal(log, want) {
				t.Errorf("log\n%s\nwant\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
