package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iket-trace/iket/iket"
	"github.com/iket-trace/iket/internal/bundled"
	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/perfetto"
	"github.com/iket-trace/iket/trace"
)

// runCLI runs the command line and returns its exit code and outputs.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// bundledCapture writes the bundled H200 capture to a temp file.
func bundledCapture(t *testing.T) string {
	t.Helper()
	b, err := bundled.WarpRolesH200()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "h200.iket")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDemoReplay(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI(t, "demo", "--replay", "-o", dir)
	if code != 0 {
		t.Fatalf("demo exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{"warp_roles: grid [1056 1 1] block [64 1 1], 2112 warps", "producer_load", "consumer_compute", "latency: uninstrumented", "clock fit: 132 SMs"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{captureFile, pftraceFile, latencyFile, reportFile} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v (size %v)", f, err, st)
		}
	}
	pf, err := os.Open(filepath.Join(dir, pftraceFile))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if err := perfetto.CheckValid(pf); err != nil {
		t.Errorf("demo's pftrace breaks the import rules: %v", err)
	}
	var lat latencyJSON
	b, err := os.ReadFile(filepath.Join(dir, latencyFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &lat); err != nil {
		t.Fatal(err)
	}
	if lat.Latency == nil || lat.Latency.Uninstrumented.MedianUS <= 0 || len(lat.Latency.Instrumented.RoundsUS) == 0 || lat.Device == nil || lat.Device.Name != "NVIDIA H200" {
		t.Errorf("latency.json = %s", b)
	}
	if got := lat.Latency.Instrumented.MedianUS / lat.Latency.Uninstrumented.MedianUS; got < 0.999*lat.Latency.Ratio || got > 1.001*lat.Latency.Ratio {
		t.Errorf("ratio %g does not match the medians (%g)", lat.Latency.Ratio, got)
	}
}

func TestDemoWithoutGPU(t *testing.T) {
	if d, err := iket.OpenDevice(0); err == nil {
		d.Close()
		t.Skip("a GPU is present: demo runs live (covered by scripts/gpu.sh)")
	}
	dir := t.TempDir()
	code, out, errs := runCLI(t, "demo", "-o", dir)
	if code != 0 {
		t.Fatalf("demo exit %d: %s %s", code, out, errs)
	}
	if !strings.Contains(errs, "no GPU here") || !strings.Contains(errs, "replaying the bundled H200 capture") {
		t.Errorf("demo did not say it replays: %q", errs)
	}
}

func TestRunWithoutGPU(t *testing.T) {
	if d, err := iket.OpenDevice(0); err == nil {
		d.Close()
		t.Skip("a GPU is present")
	}
	code, _, errs := runCLI(t, "run", "warp_roles", "-o", t.TempDir())
	if code != exitError || !strings.Contains(errs, "libcuda.so.1") {
		t.Errorf("run without a GPU: exit %d, stderr %q; want 2 and a message naming libcuda.so.1", code, errs)
	}
}

func TestValidateStatsExport(t *testing.T) {
	capPath := bundledCapture(t)
	if code, out, errs := runCLI(t, "validate", capPath); code != 0 || !strings.Contains(out, "2112 warps, 12672 events stored, 0 dropped, 0 violations") {
		t.Errorf("validate: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := runCLI(t, "stats", "--json", capPath)
	if code != 0 {
		t.Fatalf("stats: exit %d %s", code, errs)
	}
	var st statsJSON
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("stats --json: %v\n%s", err, out)
	}
	if st.Kernel != "warp_roles" || len(st.Clocks) != 132 || len(st.Names) != 5 {
		t.Errorf("stats --json: kernel %q, %d clocks, names %v", st.Kernel, len(st.Clocks), st.Names)
	}
	dir := t.TempDir()
	for _, f := range []string{"t.pftrace", "t.json", "t.html"} {
		p := filepath.Join(dir, f)
		if code, out, errs := runCLI(t, "export", capPath, "-o", p); code != 0 {
			t.Errorf("export %s: exit %d %s %s", f, code, out, errs)
		}
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			t.Errorf("export %s wrote nothing: %v", f, err)
		}
		switch filepath.Ext(f) {
		case ".json":
			var v map[string]any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Errorf("export json: %v", err)
			}
		case ".html":
			if !bytes.Contains(b, []byte("warp_roles")) {
				t.Errorf("report does not name the kernel")
			}
		}
	}
}

func TestCheckExitCodes(t *testing.T) {
	capPath := bundledCapture(t)
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte("rules:\n  - expect: \"overlap(producer_load, wait_for_data) >= 0.9\"\n  - expect: no_drops\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	junit := filepath.Join(t.TempDir(), "junit.xml")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"pass", []string{"check", capPath, "--expect", "overlap(producer_load, wait_for_data) >= 0.9", "--expect", "strict"}, 0, "PASS"},
		{"rules file and junit", []string{"check", capPath, "--rules", rules, "--junit", junit}, 0, "2 of 2 rules passed"},
		{"fail", []string{"check", capPath, "--expect", "overlap(producer_load, consumer_compute) >= 0.5"}, 1, "FAIL"},
		{"latency ratio fails", []string{"check", capPath, "--expect", "latency_ratio <= 1.01"}, 1, "latency_ratio"},
		{"no untraced times", []string{"check", capPath, "--expect", "dormant_ratio <= 100"}, 1, "no untraced times of the instrumented build"},
		{"json", []string{"check", capPath, "--expect", "no_drops", "--format", "json"}, 0, `"pass": true`},
		{"json flag", []string{"check", capPath, "--expect", "no_drops", "--json"}, 0, `"pass": true`},
		{"series, lag and bubble", []string{"check", capPath, "--expect", "overlap(producer:producer_load, consumer:wait_for_data) >= 0.9",
			"--expect", "p99(lag(producer_load, consumer_compute)) <= 1ms", "--expect", "bubble(consumer_compute, producer:wait_for_data) <= 1"}, 0, "3 of 3 rules passed"},
		{"baseline", []string{"check", capPath, "--baseline", capPath, "--expect", "p50(consumer:consumer_compute) <= 1.0 * baseline"}, 0, "PASS"},
		{"no baseline", []string{"check", capPath, "--expect", "p50(consumer_compute) <= baseline"}, 1, "none was given"},
		{"bad expression", []string{"check", capPath, "--expect", "overlap(producer_load >= 2"}, 2, ""},
		{"no rules", []string{"check", capPath}, 2, ""},
		{"bad format", []string{"check", capPath, "--expect", "no_drops", "--format", "xml"}, 2, ""},
		{"missing capture", []string{"check", "/nonexistent.iket", "--expect", "no_drops"}, 2, ""},
		{"unknown flag", []string{"check", capPath, "--frobnicate"}, 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCLI(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errs)
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("stdout lacks %q:\n%s", tt.want, out)
			}
			if tt.code == 2 && errs == "" {
				t.Error("exit 2 with nothing on stderr")
			}
		})
	}
	if b, err := os.ReadFile(junit); err != nil || !bytes.Contains(b, []byte("<testsuite")) {
		t.Errorf("junit report: %v %q", err, b)
	}
}

func TestBadInputs(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, err := bundled.WarpRolesH200()
	if err != nil {
		t.Fatal(err)
	}
	corrupt := bytes.Clone(good)
	copy(corrupt[24:], "{not json")
	inputs := map[string]string{
		"empty":     write("empty.iket", nil),
		"text":      write("text.iket", []byte("hello, world")),
		"truncated": write("trunc.iket", good[:len(good)/2]),
		"corrupt":   write("corrupt.iket", corrupt),
		"missing":   filepath.Join(dir, "missing.iket"),
		"directory": dir,
	}
	for name, p := range inputs {
		for _, cmd := range []string{"validate", "stats", "export"} {
			args := []string{cmd, p}
			if cmd == "export" {
				args = append(args, "-o", filepath.Join(dir, name+".pftrace"))
			}
			code, _, errs := runCLI(t, args...)
			if code != exitError {
				t.Errorf("%s %s: exit %d, want 2 (stderr %q)", cmd, name, code, errs)
			}
			if !strings.Contains(errs, "iket: ") || len(errs) < 20 {
				t.Errorf("%s %s: unclear error %q", cmd, name, errs)
			}
		}
	}
	for _, args := range [][]string{
		{"export"}, {"run"}, {"frobnicate"}, {"export", inputs["missing"], "--format", "svg"},
		{"run", "no_such_kernel"}, {"stats", "--launch", "7", bundledCapture(t)},
	} {
		if code, _, errs := runCLI(t, args...); code != exitError || errs == "" {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message", args, code, errs)
		}
	}
}

// TestHangDiagnosis decodes an emulated launch whose consumers never left
// their wait: the report groups them by role and open range.
func TestHangDiagnosis(t *testing.T) {
	l := &emu.Launch{
		Kernel: "hang", Grid: [3]uint32{3, 1, 1}, Block: [3]uint32{64, 1, 1}, Capacity: 16,
		Names: emu.MustNames("ROLE producer", "ROLE consumer", "RANGE load", "RANGE wait_data"),
	}
	for cta := uint32(0); cta < 3; cta++ {
		p := l.Warp([3]uint32{cta, 0, 0}, 0)
		p.Role("producer", 1000).Push("load", 0, 1200).Pop(3000)
		c := l.Warp([3]uint32{cta, 0, 0}, 1)
		c.Role("consumer", 1000).Push("wait_data", 1, 1200)
		c.Unfinished = true
	}
	b, err := l.Capture()
	if err != nil {
		t.Fatal(err)
	}
	c, err := trace.Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := diagnoseHang(c.Launch(0))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.write(&out)
	for _, want := range []string{"6 warps: 3 finished, 3 still running, 0 never started", "3  consumer       inside wait_data[1]", "last event #1 push wait_data payload 1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("diagnosis lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRunSpec(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("kernel: k.cu\nentry: k\ngrid: [2, 0]\nblock: 64\nargs:\n  - name: x\n    buffer: {dtype: f33, shape: [4], output: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI(t, "run", "--spec", bad)
	if code != exitError {
		t.Fatalf("bad spec: exit %d, want 2", code)
	}
	for _, want := range []string{"grid: dimension 1 is 0", `args[0].buffer.dtype: "f33"`} {
		if !strings.Contains(errs, want) {
			t.Errorf("bad spec error lacks %q: %s", want, errs)
		}
	}
	if code, _, errs := runCLI(t, "run", "warp_roles", "--spec", bad); code != exitError || !strings.Contains(errs, "not both") {
		t.Errorf("kernel and spec: exit %d %q", code, errs)
	}
	// The example spec loads; without a GPU the run stops at the device.
	if d, err := iket.OpenDevice(0); err == nil {
		d.Close()
		t.Skip("a GPU is present: scripts/gpu.sh runs the spec")
	}
	code, _, errs = runCLI(t, "run", "--spec", "../../kernels/examples/warp_roles.yaml", "-o", t.TempDir())
	if code != exitError || !strings.Contains(errs, "libcuda.so.1") {
		t.Errorf("spec run without a GPU: exit %d, stderr %q", code, errs)
	}
}

// TestCheckGEMM runs the example rules on the bundled GEMM capture, and the
// same rules with bounds just past the measured values fail.
func TestCheckGEMM(t *testing.T) {
	b, err := bundled.Capture(bundled.GEMMName)
	if err != nil {
		t.Fatal(err)
	}
	capPath := filepath.Join(t.TempDir(), "gemm.iket")
	if err := os.WriteFile(capPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI(t, "check", capPath, "--rules", "../../examples/checks/gemm.yaml"); code != 0 {
		t.Fatalf("example rules: exit %d\n%s%s", code, out, errs)
	}
	for _, rule := range []string{
		"overlap(compute, wait_free) >= 0.60",         // measured 0.5927
		"overlap_min_cta(compute, wait_free) >= 0.60", // measured 0.5904
		"count(compute, role=consumer) == 15",
		"p99(wait_data) <= 1.6us", // measured 1.68 us
	} {
		if code, out, _ := runCLI(t, "check", capPath, "--expect", rule); code != exitCheckFail {
			t.Errorf("%s: exit %d, want 1\n%s", rule, code, out)
		}
	}
}

func TestValidateJSON(t *testing.T) {
	code, out, errs := runCLI(t, "validate", "--json", bundledCapture(t))
	if code != 0 {
		t.Fatalf("exit %d %s", code, errs)
	}
	var v []validateJSON
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(v) != 1 || !v[0].OK || v[0].Summary.Stored != 12672 || v[0].Kernel != "warp_roles" {
		t.Errorf("validate --json = %+v", v)
	}
}

// TestExportOntoItself: writing the export over the capture would destroy it.
func TestExportOntoItself(t *testing.T) {
	p := bundledCapture(t)
	before, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI(t, "export", p, "-o", p, "--format", "pftrace")
	if code != exitError || !strings.Contains(errs, "is the capture itself") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	after, err := os.ReadFile(p)
	if err != nil || !bytes.Equal(before, after) {
		t.Errorf("the capture changed (err %v)", err)
	}
}

// TestFlaggedWarps: a warp whose lanes disagreed and one whose count
// saturated fail strict validation with their own messages, and lenient
// validate and stats say "at least" and name the diverged warps.
func TestFlaggedWarps(t *testing.T) {
	l := &emu.Launch{
		Kernel: "flags", Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{32, 1, 1}, Capacity: 5,
		Names: emu.MustNames("ROLE worker", "RANGE step"),
	}
	a := l.Warp([3]uint32{0, 0, 0}, 0)
	a.Role("worker", 1000).Push("step", 0, 1100).Push("step", 0, 1100).Pop(1200).Pop(1200) // written twice
	a.LanesDiverged = true
	b := l.Warp([3]uint32{1, 0, 0}, 0)
	b.Role("worker", 1000)
	for i := uint64(0); i < 4; i++ {
		b.Push("step", uint16(i), 1100+200*i).Pop(1200 + 200*i)
	}
	b.SaturateAt = 7
	raw, err := l.Capture()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "flags.iket")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "validate", path)
	if code != exitCheckFail {
		t.Fatalf("strict validate: exit %d, want %d:\n%s", code, exitCheckFail, out)
	}
	for _, want := range []string{"lanes recorded different numbers of events", "rebuild with the current iket.cuh", "at least"} {
		if !strings.Contains(out, want) {
			t.Errorf("strict validate lacks %q:\n%s", want, out)
		}
	}
	for _, args := range [][]string{{"validate", "--lenient", path}, {"stats", path}} {
		code, out, errs := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
		for _, want := range []string{"at least 2 dropped (1 warps' counts saturated)", "1 warps whose records may be overwritten"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v lacks %q:\n%s", args, want, out)
			}
		}
	}
}
