package attach

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/trace"
)

// The test binary doubles as a traced process: with IKET_TEST_PROC set it
// speaks the library's side of the protocol as its script says and exits.
func TestMain(m *testing.M) {
	if script := os.Getenv("IKET_TEST_PROC"); script != "" {
		os.Exit(fakeProcess(script))
	}
	os.Exit(m.Run())
}

func TestParseSelection(t *testing.T) {
	tests := []struct {
		in            string
		in0, in3, in9 bool
		env           string
		wantErr       string
	}{
		{in: "", in0: true, env: "0-0"},
		{in: "3", in3: true, env: "3-3"},
		{in: "0,3", in0: true, in3: true, env: "0-0,3-3"},
		{in: "2-7", in3: true, env: "2-7"},
		{in: "4-", in9: true, env: "4-"},
		{in: "all", in0: true, in3: true, in9: true, env: "0-"},
		{in: "3,1-2,2-5", in3: true, env: "1-5"},
		{in: "0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30,32,34,36,38,40,42,44,46,48,50,52,54,56,58,60,62,64,66,68,70,72,74,76,78,80,82,84,86,88,90,92,94,96,98,100,102,104,106,108,110,112,114,116,118,120,122,124,126,128", wantErr: "separate ranges, at most 64"},
		{in: "x", wantErr: `"x" is not an index`},
		{in: "5-2", wantErr: "A <= B"},
		{in: "-1", wantErr: "is not an index"},
	}
	for _, tt := range tests {
		s, err := ParseSelection(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseSelection(%q) error %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("ParseSelection(%q): %v", tt.in, err)
		}
		if got := [3]bool{s.Contains(0), s.Contains(3), s.Contains(9)}; got != [3]bool{tt.in0, tt.in3, tt.in9} {
			t.Errorf("ParseSelection(%q) contains 0,3,9 = %v", tt.in, got)
		}
		if got := s.env(); got != tt.env {
			t.Errorf("ParseSelection(%q).env() = %q, want %q", tt.in, got, tt.env)
		}
	}
}

func TestOccurrenceRanges(t *testing.T) {
	if got := occurrenceRanges([]uint64{0, 1, 2, 3, 4, 7, 9, 10, 11, 12}); got != "0-4 7 9-12" {
		t.Errorf("occurrenceRanges = %q", got)
	}
}

func TestDemangle(t *testing.T) {
	for in, want := range map[string]string{
		"_Z8pipelinePfS_i":                     "pipeline",
		"_ZN7cutlass6KernelINS_4GemmIiEEEEvT_": "cutlass::Kernel<cutlass::Gemm<int> >",
		"plain_c_kernel":                       "plain_c_kernel",
	} {
		if got := Demangle(in); got != want {
			t.Errorf("Demangle(%q) = %q, want %q", in, got, want)
		}
	}
}

func f64(v float64) *float64 { return &v }

func TestCompare(t *testing.T) {
	launch := func(k string, occ uint64, us float64, regs int) *Launch {
		return &Launch{Kernel: Demangle(k), Info: LaunchInfo{Kernel: k, Traced: true, Status: "ok", Occurrence: occ, ElapsedMS: f64(us / 1000), Resources: trace.Resources{Registers: regs, MaxActiveCTAsPerSM: 2}}}
	}
	traced := &Process{Launches: []*Launch{launch("_Z1av", 0, 110, 40), launch("_Z1av", 1, 120, 40), launch("_Z1bv", 0, 50, 30)}}
	base := &Process{Launches: []*Launch{launch("_Z1av", 0, 100, 32), launch("_Z1av", 1, 100, 32)}}
	base.Launches[1].Info.Resources.MaxActiveCTAsPerSM = 3
	got := Compare(traced, base)
	if len(got) != 2 {
		t.Fatalf("Compare: %d kernels, want 2", len(got))
	}
	a := got[0]
	if a.Kernel != "a" || len(a.Pairs) != 2 || a.Uninstrumented == nil {
		t.Fatalf("kernel a: %+v", a)
	}
	if math.Abs(a.Ratio-1.15) > 1e-9 || math.Abs(a.PairedRatio-1.15) > 1e-9 {
		t.Errorf("kernel a: ratio %v paired %v, want 1.15", a.Ratio, a.PairedRatio)
	}
	if a.Resources.Uninstrumented == nil || a.Resources.Uninstrumented.Registers != 32 {
		t.Errorf("kernel a: baseline resources %+v", a.Resources.Uninstrumented)
	}
	b := got[1]
	if b.Uninstrumented != nil || len(b.Pairs) != 0 || !cmp.Equal(b.Unpaired, []uint64{0}) {
		t.Errorf("kernel b (no baseline launch): %+v", b)
	}
	if l := a.Latency(); l == nil || !l.Settings.Serialized || l.Settings.Rounds != 2 {
		t.Errorf("kernel a Latency() = %+v", l)
	}
	// The L2 flush counts only when every launch compared had it: here a
	// baseline launch ran without (its buffer could not be allocated).
	for _, l := range append(traced.Launches, base.Launches...) {
		l.Info.FlushedBytes = 1 << 20
	}
	base.Launches[1].Info.FlushedBytes = 0
	if f := Compare(traced, base)[0].FlushedBytes; f != 0 {
		t.Errorf("kernel a: flushed %d bytes with a baseline launch unflushed, want 0", f)
	}
	if f := Compare(traced, nil)[0].FlushedBytes; f != 1<<20 {
		t.Errorf("kernel a without a baseline: flushed %d bytes, want 1 MiB", f)
	}
	// Without a flush, each baseline launch follows a write of as many bytes
	// as its traced launch's zeroed buffers; a difference is named.
	for _, l := range append(traced.Launches, base.Launches...) {
		l.Info.FlushedBytes, l.Info.PreparedBytes = 0, 4096
	}
	// (Two pairs: the last warning is that the ratio rests on too few.)
	if k := Compare(traced, base)[0]; len(k.Warnings) != 1 || k.PreparedBytes != 4096 {
		t.Errorf("kernel a, equal writes: warnings %q, prepared %d bytes, want the few pairs' alone and 4096", k.Warnings, k.PreparedBytes)
	}
	base.Launches[1].Info.PreparedBytes = 0
	if k := Compare(traced, base)[0]; len(k.Warnings) != 2 || !strings.Contains(k.Warnings[0], "1 of the baseline's launches (occurrence 1 first)") || k.PreparedBytes != 0 {
		t.Errorf("kernel a, baseline launch 1 without the write: warnings %q, prepared %d bytes, want one naming occurrence 1 and 0", k.Warnings, k.PreparedBytes)
	}
	if p := Compare(traced, nil)[0].PreparedBytes; p != 4096 {
		t.Errorf("kernel a without a baseline: prepared %d bytes, want 4096", p)
	}
	if _, err := json.Marshal(Compare(traced, nil)); err != nil {
		t.Errorf("Compare without a baseline does not encode: %v", err)
	}
	if got := Times([]*Process{traced}); !cmp.Equal(got, map[string][]uint64{"_Z1av": {0, 1}, "_Z1bv": {0}}) {
		t.Errorf("Times = %v", got)
	}
}

// TestComparePairsWarning: a ratio on fewer than fewPairs pairs says so,
// one on as many does not, and one without a baseline has nothing to say.
func TestComparePairsWarning(t *testing.T) {
	run := func(n int, traced bool) *Process {
		p := &Process{}
		for i := 0; i < n; i++ {
			p.Launches = append(p.Launches, &Launch{Kernel: "a", Info: LaunchInfo{Kernel: "_Z1av", Traced: traced, Status: "ok", Occurrence: uint64(i), ElapsedMS: f64(0.1)}})
		}
		return p
	}
	for _, tt := range []struct {
		name string
		n    int
		base bool
		want bool
	}{
		{"one pair", 1, true, true},
		{"four pairs", fewPairs - 1, true, true},
		{"enough pairs", fewPairs, true, false},
		{"no baseline", 1, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var base *Process
			if tt.base {
				base = run(tt.n, false)
			}
			k := Compare(run(tt.n, true), base)[0]
			got := false
			for _, w := range k.Warnings {
				got = got || strings.Contains(w, fmt.Sprintf("rests on %d pair(s)", tt.n))
			}
			if got != tt.want {
				t.Errorf("warnings %q, want the few pairs' one: %v", k.Warnings, tt.want)
			}
		})
	}
}

// TestCompareTimed pairs the launches a process timed without tracing them
// (the build with tracing, dormant) with the baseline's, and leaves its
// traced ones out, as Compare leaves the untimed ones.
func TestCompareTimed(t *testing.T) {
	launch := func(occ uint64, us float64, traced bool) *Launch {
		return &Launch{Kernel: "a", Info: LaunchInfo{Kernel: "_Z1av", Traced: traced, Status: "ok", Occurrence: occ, ElapsedMS: f64(us / 1000)}}
	}
	p := &Process{Launches: []*Launch{launch(0, 104, false), launch(1, 108, false), launch(2, 150, true)}}
	base := &Process{Launches: []*Launch{launch(0, 100, false), launch(1, 100, false), launch(2, 100, false)}}
	got := CompareTimed(p, base)
	if len(got) != 1 || len(got[0].Pairs) != 2 || got[0].Uninstrumented == nil || math.Abs(got[0].PairedRatio-1.06) > 1e-9 {
		t.Fatalf("CompareTimed = %+v, want kernel a's occurrences 0 and 1, paired 1.06", got)
	}
	if tr := Compare(p, base); len(tr) != 1 || len(tr[0].Pairs) != 1 || tr[0].Pairs[0].Occurrence != 2 {
		t.Errorf("Compare = %+v, want the traced occurrence 2 alone", tr)
	}
}

func TestMatchProcesses(t *testing.T) {
	p := func(rank string, n int) *Process {
		pr := &Process{Hello: Hello{Env: map[string]string{}}}
		if rank != "" {
			pr.Hello.Env["RANK"] = rank
		}
		for i := 0; i < n; i++ {
			pr.Launches = append(pr.Launches, &Launch{})
		}
		return pr
	}
	t0, t1, tu := p("0", 1), p("1", 1), p("", 1)
	b1, b0, bu, bidle := p("1", 1), p("0", 1), p("", 1), p("", 0)
	m := MatchProcesses([]*Process{t0, t1, tu}, []*Process{b1, bidle, b0, bu})
	if m[t0] != b0 || m[t1] != b1 || m[tu] != bu {
		t.Errorf("MatchProcesses paired wrongly: %v", m)
	}
}

// emuBuffers returns the raw warp buffers of a small emulated launch: two
// CTAs of a producer warp (load) and a consumer warp (compute).
func emuBuffers() ([]byte, error) {
	l := &emu.Launch{Kernel: "k", Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{64, 1, 1}, Capacity: 16,
		Names: emu.MustNames("ROLE producer", "ROLE consumer", "RANGE load", "RANGE compute")}
	for cta := uint32(0); cta < 2; cta++ {
		l.Warp([3]uint32{cta, 0, 0}, 0).Role("producer", 1000).Push("load", 0, 1100).Pop(1500)
		l.Warp([3]uint32{cta, 0, 0}, 1).Role("consumer", 1000).Push("compute", 0, 1600).Pop(2000)
	}
	b, err := l.Capture()
	if err != nil {
		return nil, err
	}
	c, err := trace.Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(c.Launch(0).SectionReader())
}

// fakeProcess speaks the library's side of the protocol: script "trace"
// announces a kernel, and if selected sends a launch of testLaunch's
// buffers; "hang" sends a hung launch and waits to be killed; "bad" sends
// an unknown message.
func fakeProcess(script string) int {
	c, err := net.Dial("unix", os.Getenv("IKET_SOCKET"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "dial:", err)
		return 3
	}
	send := func(typ byte, v any, payload []byte) {
		js, _ := json.Marshal(v)
		var h [9]byte
		binary.LittleEndian.PutUint32(h[0:], uint32(5+len(js)+len(payload)))
		h[4] = typ
		binary.LittleEndian.PutUint32(h[5:], uint32(len(js)))
		c.Write(h[:])
		c.Write(js)
		c.Write(payload)
	}
	send(msgHello, Hello{Protocol: Protocol, PID: os.Getpid(), Host: "h", Exe: "/bin/fake", Env: map[string]string{"RANK": "0"}}, nil)
	switch script {
	case "bad":
		send('Z', map[string]int{}, nil)
		time.Sleep(100 * time.Millisecond)
		return 0
	case "oversize": // a frame claiming 32 MiB of JSON
		var h [9]byte
		binary.LittleEndian.PutUint32(h[0:], 5+32<<20)
		h[4] = msgNote
		binary.LittleEndian.PutUint32(h[5:], 32<<20)
		c.Write(h[:])
		time.Sleep(100 * time.Millisecond)
		return 0
	case "short": // buffers shorter than the launch says
		send(msgLaunch, LaunchInfo{Kernel: "_Z1kv", Traced: true, Status: "ok", BufferBytes: 4096}, make([]byte, 16))
		time.Sleep(100 * time.Millisecond)
		return 0
	}
	table := "iket-names 1\nROLE producer\nROLE consumer\nRANGE load\nRANGE compute\n"
	send(msgKernel, KernelQuery{Name: "_Z8pipelinePfS_i", Instrumented: true, StateSize: 32, Version: 2, Names: &table}, nil)
	reply := make([]byte, 64)
	n, _ := c.Read(reply)
	fmt.Print(string(reply[:n])) // the test reads the reply from stdout
	send(msgKernel, KernelQuery{Name: "_Z7pipeoldv", Instrumented: true, StateSize: 24, Version: 1}, nil)
	n, _ = c.Read(reply)
	fmt.Print(string(reply[:n]))
	if !strings.HasPrefix(string(reply[:1]), "0") {
		return 4
	}
	raw, err := emuBuffers()
	if err != nil {
		fmt.Fprintln(os.Stderr, "emu:", err)
		return 3
	}
	status := "ok"
	if script == "hang" {
		status = "hang"
	}
	if script == "stuck" {
		// a launch that began and never ends (a drain that blocks)
		send(msgStart, Start{Kernel: "_Z8pipelinePfS_i", TimeoutMS: 10}, nil)
		time.Sleep(time.Minute)
		return 5
	}
	if script == "gone" {
		// a launch that began, then the process's connection closed (it
		// forked, or its library gave up on iket) and it ran on
		send(msgStart, Start{Kernel: "_Z8pipelinePfS_i", TimeoutMS: 10}, nil)
		c.Close()
		time.Sleep(600 * time.Millisecond)
		return 0
	}
	info := LaunchInfo{Kernel: "_Z8pipelinePfS_i", Traced: true, Family: "cuLaunchKernel", Status: status,
		Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{64, 1, 1}, Cluster: [3]uint32{1, 1, 1}, ElapsedMS: f64(0.01),
		WarpsPerCTA: 2, Warps: 4, Capacity: 16, Version: 2, BufferBytes: uint64(len(raw)),
		Device: Device{Name: "Fake", UUID: "GPU-x", SMs: 4, CC: "9.0", MaxClockKHz: 1980000, DriverVersion: 13000}}
	send(msgLaunch, info, raw)
	if script == "hang" {
		time.Sleep(time.Minute) // killed by Run
		return 5
	}
	send(msgSkip, Skip{Code: "graph", Why: "a CUDA graph launch"}, nil)
	send(msgBye, Bye{Launches: 3, Matching: 1, Traced: 1, Skipped: 1}, nil)
	return 7
}

// runFake runs the test binary as a fake traced process; it returns the
// result and what the process printed (the replies it got).
func runFake(t *testing.T, script string, o Options) (*Result, string) {
	t.Helper()
	lib := filepath.Join(t.TempDir(), "lib.so")
	if err := os.WriteFile(lib, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	o.Args = []string{os.Args[0], "-test.run=^$"}
	o.Env = append(os.Environ(), "IKET_TEST_PROC="+script)
	o.Library = lib
	o.Stdout = &stdout
	o.Stderr = os.Stderr
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(func() { res.Close() })
	return res, stdout.String()
}

func TestRunServesProcess(t *testing.T) {
	res, replies := runFake(t, "trace", Options{Kernel: regexp.MustCompile("^pipe")})
	if replies != "1\n0\n" {
		t.Errorf("replies to the kernel queries = %q, want \"1\\n0\\n\"", replies)
	}
	if res.ExitCode != 7 {
		t.Errorf("exit code %d, want the program's 7", res.ExitCode)
	}
	if len(res.Processes) != 1 {
		t.Fatalf("%d processes, want 1", len(res.Processes))
	}
	p := res.Processes[0]
	if p.Err != nil {
		t.Fatalf("protocol error: %v", p.Err)
	}
	if len(p.Refused) != 1 || !strings.Contains(p.Refused[0], "another iket header") {
		t.Errorf("Refused = %q", p.Refused)
	}
	if len(p.Launches) != 1 || p.Launches[0].Kernel != "pipeline" || p.Launches[0].Payload == nil {
		t.Fatalf("launches = %+v", p.Launches)
	}
	if len(p.Skipped) != 1 || p.Bye == nil || p.Bye.Traced != 1 || p.Rank() != 0 {
		t.Errorf("skipped %v, bye %+v, rank %d", p.Skipped, p.Bye, p.Rank())
	}
	meta, bufs, left, err := p.Capture("iket test", []string{"fake"}, nil)
	if err != nil || len(left) != 0 {
		t.Fatalf("Capture: %v, left %v", err, left)
	}
	var out bytes.Buffer
	if err := trace.WriteCapture(&out, &meta, bufs); err != nil {
		t.Fatalf("WriteCapture: %v", err)
	}
	c, err := trace.Read(bytes.NewReader(out.Bytes()), int64(out.Len()))
	if err != nil {
		t.Fatalf("read the capture back: %v", err)
	}
	lm := c.Launch(0).Meta
	if lm.Kernel != "pipeline" || lm.Mangled != "_Z8pipelinePfS_i" || lm.Warps != 4 || c.Meta.Process == nil || c.Meta.Process.Rank != 0 {
		t.Errorf("capture launch %+v, process %+v", lm, c.Meta.Process)
	}
	d, err := trace.NewDecoder(c.Launch(0), trace.Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	warps := 0
	err = d.Each(func(w *trace.Warp) error {
		warps++
		if len(w.Events) != 3 {
			t.Errorf("warp %d: %d events, want 3", w.Slot, len(w.Events))
		}
		return nil
	}, func(e *trace.WarpError) error { return e })
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if warps != 4 {
		t.Errorf("%d warps decoded, want 4", warps)
	}
}

func TestRunKillsHungProcess(t *testing.T) {
	start := time.Now()
	res, _ := runFake(t, "hang", Options{})
	if res.Hung == nil || res.Hung.Payload == nil {
		t.Fatalf("Hung = %+v, want the hung launch with its buffers", res.Hung)
	}
	if res.Signal != "killed" || res.ExitCode != 128+9 {
		t.Errorf("exit %d (%s), want killed", res.ExitCode, res.Signal)
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
}

func TestRunWatchdog(t *testing.T) {
	defer func(g time.Duration) { watchGrace = g }(watchGrace)
	watchGrace = 100 * time.Millisecond
	start := time.Now()
	res, _ := runFake(t, "stuck", Options{})
	if res.Hung == nil || res.Hung.Info.Status != "hang" || !strings.Contains(res.Hung.Info.Error, "did not end within") {
		t.Fatalf("Hung = %+v, want the launch that never ended", res.Hung)
	}
	if res.Signal != "killed" || time.Since(start) > 20*time.Second {
		t.Errorf("exit %d (%s) after %v", res.ExitCode, res.Signal, time.Since(start))
	}
}

// TestRunWatchdogEndsWithConnection: a process that disconnects after a
// launch began is not taken for hung once the watchdog's time is up.
func TestRunWatchdogEndsWithConnection(t *testing.T) {
	defer func(g time.Duration) { watchGrace = g }(watchGrace)
	watchGrace = 100 * time.Millisecond
	res, _ := runFake(t, "gone", Options{})
	if res.Hung != nil || res.Signal != "" || res.ExitCode != 0 {
		t.Errorf("Hung = %+v, exit %d (%s); want no hang and the program's own exit 0", res.Hung, res.ExitCode, res.Signal)
	}
}

func TestRunProtocolError(t *testing.T) {
	for script, want := range map[string]string{
		"bad":      "unknown message type",
		"oversize": "message JSON of 33554432 bytes",
		"short":    "bytes of buffers, its description says 4096",
	} {
		res, _ := runFake(t, script, Options{})
		if len(res.Processes) != 1 {
			t.Fatalf("%s: %d processes", script, len(res.Processes))
		}
		if p := res.Processes[0]; p.Err == nil || !strings.Contains(p.Err.Error(), want) {
			t.Errorf("%s: Err = %v, want %q", script, p.Err, want)
		}
	}
}

func TestRunRefuses(t *testing.T) {
	lib := filepath.Join(t.TempDir(), "lib.so")
	_, err := Run(context.Background(), Options{Args: []string{"/no/such/program"}, Library: lib})
	if pe, ok := err.(*ProgramError); !ok || !os.IsNotExist(pe.Err) && !strings.Contains(pe.Error(), "no such file") {
		t.Errorf("missing program: %v, want a ProgramError", err)
	}
	_, err = Run(context.Background(), Options{Args: []string{"true"}, Library: lib, Env: []string{"CUDA_INJECTION64_PATH=/opt/nsys/lib.so"}})
	if err == nil || !strings.Contains(err.Error(), "another CUDA tool") {
		t.Errorf("injection taken: %v", err)
	}
}
