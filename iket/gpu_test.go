package iket_test

// GPU tests. Each opens device 0 and skips, stating why, when there is no
// driver or GPU; with IKET_REQUIRE_GPU=1 they fail instead, so a GPU run
// can never pass by skipping. They use the kernels embedded in package
// kernels, so a test binary (go test -c) runs from any directory.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/iket-trace/iket/builtin"
	"github.com/iket-trace/iket/iket"
	"github.com/iket-trace/iket/internal/raw"
	"github.com/iket-trace/iket/trace"
)

func openGPU(t *testing.T) *iket.Device {
	t.Helper()
	d, err := iket.OpenDevice(0)
	if err != nil {
		if errors.Is(err, iket.ErrNoDevice) && os.Getenv("IKET_REQUIRE_GPU") != "1" {
			t.Skipf("no GPU (set IKET_REQUIRE_GPU=1 to fail instead): %v", err)
		}
		t.Fatalf("open GPU: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("close device: %v", err)
		}
	})
	return d
}

// build compiles a built-in program in one build and closes it at cleanup.
func build(t *testing.T, d *iket.Device, prog string, instrumented bool, options ...string) (*iket.Program, *iket.Module) {
	t.Helper()
	p, err := builtin.Lookup(prog)
	if err != nil {
		t.Fatal(err)
	}
	src, err := p.Source()
	if err != nil {
		t.Fatal(err)
	}
	src.Options = append(src.Options, options...)
	m, err := d.Compile(src, instrumented, "")
	if err != nil {
		t.Fatalf("compile %s (instrumented %v): %v", prog, instrumented, err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("close module: %v", err)
		}
	})
	return p, m
}

func setup(t *testing.T, d *iket.Device, p *iket.Program, cfg iket.LaunchConfig) *iket.Workload {
	t.Helper()
	w, err := p.Setup(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("close workload: %v", err)
		}
	})
	return w
}

// rawEvent is a record's fields without its clock.
type rawEvent struct {
	Kind    trace.Kind
	Name    uint16
	Payload uint16
}

// slot decodes warp slot s of a result: header and its non-empty records, in
// slot order, each placed from the warp's start anchor on its own
// (raw.Unpack: slot order is not time order in a wrapped ring).
func slot(t *testing.T, r *iket.TraceResult, s uint64) (raw.WarpHeader, []rawEvent) {
	t.Helper()
	if r.Format < 1 || r.Format > raw.FormatVersion {
		t.Fatalf("result of record format %d", r.Format)
	}
	st := r.Meta.Stride()
	b := r.Buffers[int64(s)*st : int64(s+1)*st]
	var h raw.WarpHeader
	raw.DecodeWarpHeader(b, &h)
	var evs []rawEvent
	for i := uint32(0); i < r.Meta.Capacity; i++ {
		rec := raw.Record(binary.LittleEndian.Uint64(b[raw.WarpHeaderSize+8*int(i):]))
		if rec == 0 {
			continue
		}
		tag, _ := raw.Unpack(r.Format, rec, h.StartClock)
		evs = append(evs, rawEvent{trace.Kind(tag >> 29), uint16(tag>>16) & 0x1fff, uint16(tag)})
	}
	return h, evs
}

// bySlot decodes warp slot s's records slot by slot, as raw.Unpack reads
// each from the start anchor in h: kind, name and payload (zero where the
// slot is unwritten) and cycle; and the tail word after them, which no
// event writes (and exit writes only for side events).
func bySlot(r *iket.TraceResult, s uint64, h raw.WarpHeader) (evs []rawEvent, cycles []uint64, scratch raw.Record) {
	st := r.Meta.Stride()
	b := r.Buffers[int64(s)*st : int64(s+1)*st]
	rec := func(j int) raw.Record {
		return raw.Record(binary.LittleEndian.Uint64(b[raw.WarpHeaderSize+8*j:]))
	}
	n := int(r.Meta.Capacity)
	evs, cycles = make([]rawEvent, n), make([]uint64, n)
	for j := range n {
		if rec(j) == 0 {
			continue
		}
		tag, cyc := raw.Unpack(r.Format, rec(j), h.StartClock)
		evs[j], cycles[j] = rawEvent{trace.Kind(tag >> 29), uint16(tag>>16) & 0x1fff, uint16(tag)}, cyc
	}
	return evs, cycles, rec(n)
}

// captureOf writes a traced launch to a capture file and opens it.
func captureOf(t *testing.T, r *iket.TraceResult) *trace.Capture {
	t.Helper()
	path := filepath.Join(t.TempDir(), "launch.iket")
	if err := iket.WriteCapture(path, trace.Meta{Version: raw.FormatVersion, Tool: "iket-test"}, r); err != nil {
		t.Fatal(err)
	}
	c, err := trace.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestGPUInfo(t *testing.T) {
	d := openGPU(t)
	info := d.Info()
	t.Logf("device: %+v", info)
	if info.Before != nil {
		t.Logf("conditions: %+v", *info.Before)
	} else {
		t.Logf("no NVML conditions: %v", d.NVMLError())
	}
	if info.Name == "" || info.SMs <= 0 || !regexp.MustCompile(`^\d+\.\d+$`).MatchString(info.ComputeCap) ||
		!regexp.MustCompile(`^GPU-[0-9a-f]{8}-`).MatchString(info.UUID) || info.CUDA == "" {
		t.Errorf("incomplete device info: %+v", info)
	}
	if d.NVMLError() == nil && (info.Before == nil || info.Before.SMClockMHz == 0 || info.Driver == "") {
		t.Errorf("NVML opened but conditions are missing: %+v", info)
	}
	if l := d.Limits(); l.MaxThreadsPerBlock == 0 || l.MaxGrid[0] == 0 || l.MaxSharedOptin == 0 {
		t.Errorf("limits not read: %+v", l)
	}
}

var warpRolesNames = []trace.Name{
	{ID: 1, Kind: trace.NameRole, Text: "producer"},
	{ID: 2, Kind: trace.NameRole, Text: "consumer"},
	{ID: 3, Kind: trace.NameMark, Text: "kernel_start"},
	{ID: 4, Kind: trace.NameRange, Text: "producer_load"},
	{ID: 5, Kind: trace.NameRange, Text: "wait_for_data"},
	{ID: 6, Kind: trace.NameRange, Text: "consumer_compute"},
}

func TestGPUCompileAndNames(t *testing.T) {
	d := openGPU(t)
	_, base := build(t, d, "warp_roles", false)
	_, inst := build(t, d, "warp_roles", true)
	if base.Instrumented() || !inst.Instrumented() {
		t.Fatalf("Instrumented: base %v inst %v", base.Instrumented(), inst.Instrumented())
	}
	names, err := inst.Names()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(warpRolesNames, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if _, err := base.Names(); err == nil {
		t.Error("the baseline build has a name table")
	}
	// A prebuilt image is one build: an instrumented cubin is refused as a
	// baseline and accepted as the instrumented build.
	p, _ := builtin.Lookup("warp_roles")
	src, _ := p.Source()
	cubin, _, err := iket.BuildImage("warp_roles.cu", src, true, iket.DefaultArch)
	if err != nil {
		t.Fatal(err)
	}
	pre := iket.Source{Path: "warp_roles.cubin", Data: cubin}
	if m, err := d.Compile(pre, false, ""); err == nil {
		m.Close()
		t.Error("an instrumented cubin loaded as a baseline")
	}
	m, err := d.Compile(pre, true, "")
	if err != nil {
		t.Fatalf("load instrumented cubin: %v", err)
	}
	defer m.Close()
	if m.Source().Kind != iket.KindCUBIN {
		t.Errorf("prebuilt kind = %v", m.Source().Kind)
	}
}

// wantWarpRoles is the event sequence of warp 0 (producer) and warp 1
// (consumer) of every warp_roles CTA.
var wantWarpRoles = [2][]rawEvent{
	{{trace.KindMark, 3, 0}, {trace.KindRole, 1, 0}, {trace.KindPush, 4, 0}, {trace.KindPop, 4, 0}, {trace.KindPush, 5, 0}, {trace.KindPop, 5, 0}},
	{{trace.KindMark, 3, 1}, {trace.KindRole, 2, 0}, {trace.KindPush, 5, 0}, {trace.KindPop, 5, 0}, {trace.KindPush, 6, 0}, {trace.KindPop, 6, 0}},
}

func TestGPUTraceWarpRoles(t *testing.T) {
	d := openGPU(t)
	p, stop := build(t, d, "warp_roles", true)
	_, wrap := build(t, d, "warp_roles", true, "-DIKET_WRAP=1")
	if stop.Mode() != trace.ModeStop || wrap.Mode() != trace.ModeWrap {
		t.Fatalf("modes %v and %v, want stop and wrap", stop.Mode(), wrap.Mode())
	}
	cfg := p.Config(d)
	w := setup(t, d, p, cfg)
	// A build records in one mode: the other is refused before launching.
	var ce *iket.ConfigError
	if _, err := stop.Trace(cfg, w.Args, iket.TraceOptions{Capacity: 4, Mode: trace.ModeWrap}); !errors.As(err, &ce) || ce.Field != "mode" {
		t.Errorf("wrap trace of a stop build: %v, want a mode ConfigError", err)
	}
	if _, err := wrap.Trace(cfg, w.Args, iket.TraceOptions{Capacity: 4}); !errors.As(err, &ce) || ce.Field != "mode" {
		t.Errorf("stop trace of a wrap build: %v, want a mode ConfigError", err)
	}
	tests := []struct {
		name     string
		opt      iket.TraceOptions
		recorded func(events []rawEvent) []rawEvent // what the buffer keeps, in slot order
	}{
		{"device stop", iket.TraceOptions{Capacity: 64}, func(e []rawEvent) []rawEvent { return e }},
		{"watch stop", iket.TraceOptions{Capacity: 64, Watch: true}, func(e []rawEvent) []rawEvent { return e }},
		{"stop drops", iket.TraceOptions{Capacity: 4}, func(e []rawEvent) []rawEvent { return e[:4] }},
		{"wrap keeps newest", iket.TraceOptions{Capacity: 4, Mode: trace.ModeWrap}, func(e []rawEvent) []rawEvent { return []rawEvent{e[4], e[5], e[2], e[3]} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := w.Poison(); err != nil {
				t.Fatal(err)
			}
			inst := stop
			if tt.opt.Mode == trace.ModeWrap {
				inst = wrap
			}
			res, err := inst.Trace(cfg, w.Args, tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Verify(); err != nil {
				t.Errorf("traced launch output: %v", err)
			}
			m := res.Meta
			if m.Warps != 2*cfg.CTAs() || m.WarpsPerCTA != 2 || int64(len(res.Buffers)) != m.Size() || res.Partial || res.KernelTime <= 0 {
				t.Fatalf("meta %+v, %d bytes, partial %v, time %v", m, len(res.Buffers), res.Partial, res.KernelTime)
			}
			if diff := cmp.Diff(warpRolesNames, m.Names); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
			// The records kept in the L2 (persisting lines: compute
			// capability 8.0 on), never host memory.
			cc := d.Info().ComputeCap
			major, _ := strconv.Atoi(strings.Split(cc, ".")[0])
			if kept, persist := m.RecordsL2Bytes, major >= 8 && !tt.opt.Watch; kept == nil || persist != (*kept != 0) {
				t.Errorf("records_l2_bytes %v with watch %v on compute capability %s", kept, tt.opt.Watch, cc)
			}
			sms := uint32(d.Info().SMs)
			for s := uint64(0); s < m.Warps; s++ {
				h, evs := slot(t, res, s)
				cta, warp := uint32(s/2), uint32(s%2)
				if h.Magic != raw.WarpMagic || h.Flags&0xf != 3 || h.CTA != [3]uint32{cta, 0, 0} || h.Warp != warp ||
					h.Count != 6 || h.SM >= sms || h.EndGlobaltimer < h.StartGlobaltimer || h.EndClock <= h.StartClock {
					t.Fatalf("slot %d header %+v", s, h)
				}
				if diff := cmp.Diff(tt.recorded(wantWarpRoles[warp]), evs); diff != "" {
					t.Fatalf("slot %d events (-want +got):\n%s", s, diff)
				}
			}
		})
	}
}

func TestGPUTiming(t *testing.T) {
	d := openGPU(t)
	p, base := build(t, d, "warp_roles", false)
	_, inst := build(t, d, "warp_roles", true)
	cfg := p.Config(d)
	w := setup(t, d, p, cfg)
	ctl, err := base.Reload()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctl.Close() })
	tests := []struct {
		name string
		opt  iket.TimingOptions
	}{
		{"until stable, flushed", iket.TimingOptions{Rounds: 3, CallsPerRound: 10}},
		{"fixed warm-up, no flush", iket.TimingOptions{Warmup: 5, Rounds: 4, CallsPerRound: 5, SkipL2Flush: true}},
		{"with a control", iket.TimingOptions{Rounds: 4, CallsPerRound: 5, Control: ctl}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := w.Poison(); err != nil {
				t.Fatal(err)
			}
			lat, err := iket.Time(base, inst, cfg, w.Args, tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("uninstrumented %+v", lat.Uninstrumented)
			t.Logf("instrumented %+v", lat.Instrumented)
			t.Logf("ratio %.3f settings %+v", lat.Ratio, lat.Settings)
			if err := w.Verify(); err != nil {
				t.Errorf("output after timing: %v", err)
			}
			for _, s := range []trace.Samples{lat.Uninstrumented, lat.Instrumented} {
				if len(s.RoundsUS) != tt.opt.Rounds || s.MinUS <= 0 || s.MinUS > s.MedianUS || s.MedianUS > s.MaxUS || s.MaxUS > 1e6 {
					t.Errorf("implausible samples %+v", s)
				}
			}
			if lat.Ratio < 0.3 || lat.Ratio > 10 {
				t.Errorf("ratio %v is implausible", lat.Ratio)
			}
			st := lat.Settings
			if st.Rounds != tt.opt.Rounds || st.CallsPerRound != tt.opt.CallsPerRound || !st.Interleaved ||
				st.FlushL2 == tt.opt.SkipL2Flush || st.Warmup <= 0 || st.Boundary == "" {
				t.Errorf("settings %+v do not match options %+v", st, tt.opt)
			}
			if tt.opt.Warmup > 0 && (st.Warmup != tt.opt.Warmup || st.WarmupStableAt != 0) {
				t.Errorf("fixed warm-up recorded as %d calls, stable at %d", st.Warmup, st.WarmupStableAt)
			}
			if lat.PairedRatio < 0.3 || lat.PairedRatio > 10 {
				t.Errorf("paired ratio %v is implausible", lat.PairedRatio)
			}
			if tt.opt.Control == nil {
				if lat.Control != nil || lat.ControlRatio != 0 || st.Order != iket.OrderAlternating {
					t.Errorf("no control asked: control %+v ratio %v, order %q", lat.Control, lat.ControlRatio, st.Order)
				}
				return
			}
			// The same code twice: the medians of a few rounds of an
			// 8 us kernel agree within 25% on any quiet machine.
			if c := lat.Control; c == nil || len(c.RoundsUS) != tt.opt.Rounds || c.MinUS <= 0 || st.Order != iket.OrderRotating ||
				lat.ControlRatio < 0.8 || lat.ControlRatio > 1.25 || lat.ControlPairedRatio < 0.8 || lat.ControlPairedRatio > 1.25 {
				t.Errorf("control %+v, ratio %v, paired %v, order %q", lat.Control, lat.ControlRatio, lat.ControlPairedRatio, st.Order)
			}
		})
	}
	if _, err := iket.Time(inst, inst, cfg, w.Args, iket.TimingOptions{}); err == nil {
		t.Error("Time accepted an instrumented baseline")
	}
	if _, err := iket.Time(base, inst, cfg, w.Args, iket.TimingOptions{Control: base}); err == nil || !strings.Contains(err.Error(), "Reload") {
		t.Errorf("Time with the baseline as its own control: %v, want an error pointing to Reload", err)
	}
	if _, err := iket.Time(base, inst, cfg, w.Args, iket.TimingOptions{Control: inst}); err == nil || !strings.Contains(err.Error(), "control module") {
		t.Errorf("Time with an instrumented control: %v, want an error naming the control", err)
	}
	other, err := d.Compile(iket.Source{Path: "other.cu", Kind: iket.KindCU, Data: []byte("extern \"C\" __global__ void other(int* p) { *p = 1; }\n")}, false, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	if _, err := iket.Time(base, inst, cfg, w.Args, iket.TimingOptions{Control: other}); err == nil || !strings.Contains(err.Error(), "not the baseline's image") {
		t.Errorf("Time with another kernel as the control: %v, want an error saying it is not the baseline's image", err)
	}
	again, err := inst.Reload()
	if err != nil {
		t.Fatal(err)
	}
	if !again.Instrumented() || again.Mode() != inst.Mode() {
		t.Errorf("reloaded instrumented module: instrumented %v mode %v", again.Instrumented(), again.Mode())
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := again.Reload(); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Reload of a closed module: %v, want an error saying it is closed", err)
	}
}

func TestGPURunAndCapture(t *testing.T) {
	d := openGPU(t)
	p, _ := builtin.Lookup("warp_roles")
	res, err := iket.Run(context.Background(), d, p, iket.RunOptions{Trace: iket.TraceOptions{Capacity: 16}, Timing: iket.TimingOptions{Rounds: 3, CallsPerRound: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Latency == nil || res.Launch == nil || res.Launch.Meta.Latency != res.Latency || res.Device.Name == "" {
		t.Fatalf("incomplete result: %+v", res)
	}
	// By default Run times a control: the uninstrumented build again.
	if l := res.Latency; l.Control == nil || len(l.Control.RoundsUS) != 3 || l.ControlRatio <= 0 || l.Settings.Order != iket.OrderRotating {
		t.Errorf("default run: control %+v, ratio %v, order %q; want a control timed in every round", l.Control, l.ControlRatio, l.Settings.Order)
	}
	without, err := iket.Run(context.Background(), d, p, iket.RunOptions{Trace: iket.TraceOptions{Capacity: 16}, Timing: iket.TimingOptions{Rounds: 2, CallsPerRound: 5}, SkipControl: true})
	if err != nil {
		t.Fatal(err)
	}
	if l := without.Latency; l == nil || l.Control != nil || l.Settings.Order != iket.OrderAlternating {
		t.Errorf("SkipControl: latency %+v, want two builds alternating and no control", l)
	}
	path := filepath.Join(t.TempDir(), "trace.iket")
	if err := iket.WriteCapture(path, res.Meta("iket-test"), res.Launch); err != nil {
		t.Fatal(err)
	}
	c, err := trace.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	dec, err := trace.NewDecoder(c.Launch(0), trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wp trace.Warp
	for {
		err := dec.Next(&wp)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
	}
	sum := dec.Summary()
	warps := 2 * res.Config.CTAs()
	want := trace.Summary{Warps: warps, Started: warps, Finished: warps, Stored: 6 * warps, Attempted: 6 * warps, Ranges: 2 * warps, Marks: warps}
	if diff := cmp.Diff(want, sum); diff != "" {
		t.Errorf("decoded summary (-want +got):\n%s", diff)
	}
	if err := dec.Err(); err != nil {
		t.Errorf("decoder: %v", err)
	}
}

func TestGPUConfigErrors(t *testing.T) {
	d := openGPU(t)
	p, inst := build(t, d, "warp_roles", true)
	_, base := build(t, d, "warp_roles", false)
	cfg := p.Config(d)
	w := setup(t, d, p, cfg)
	tests := []struct {
		name  string
		cfg   iket.LaunchConfig
		field string
	}{
		{"unknown kernel", iket.LaunchConfig{Kernel: "nope", Grid: cfg.Grid, Block: cfg.Block}, "kernel"},
		{"over launch bounds", iket.LaunchConfig{Kernel: cfg.Kernel, Grid: cfg.Grid, Block: [3]uint32{128, 1, 1}}, "block"},
		{"zero grid", iket.LaunchConfig{Kernel: cfg.Kernel, Block: cfg.Block}, "grid"},
		{"too many threads", iket.LaunchConfig{Kernel: cfg.Kernel, Grid: cfg.Grid, Block: [3]uint32{2048, 1, 1}}, "block"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := inst.Trace(tt.cfg, w.Args, iket.TraceOptions{})
			var ce *iket.ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.field {
				t.Fatalf("Trace error = %v, want a ConfigError on %s", err, tt.field)
			}
		})
	}
	if _, err := base.Trace(cfg, w.Args, iket.TraceOptions{}); err == nil {
		t.Error("traced an uninstrumented module")
	}
	if err := p.Check(inst, cfg, &iket.Workload{Args: w.Args[:1], Poison: w.Poison, Verify: w.Verify}, 0); err == nil {
		t.Error("Check accepted one argument for two parameters")
	}
	// The device is still fine after refused launches.
	if err := p.Check(inst, cfg, w, 0); err != nil {
		t.Errorf("check after config errors: %v", err)
	}
}

// faultCodes are the CUDA errors each fault mode may produce.
var faultCodes = map[uint32][]string{
	0: {"CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_INVALID_ADDRESS_SPACE"},
	1: {"CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_ILLEGAL_INSTRUCTION", "CUDA_ERROR_ASSERT"},
}

// faultReport is what a fault child saw.
type faultReport struct {
	Err         string // the Trace error
	KernelError bool   // it is a *KernelError
	Code        string
	Kernel      string
	ConfigOK    bool // KernelError.Config is the launch's
	Result      bool // KernelError.Result is set
	Partial     bool
	Header      raw.WarpHeader // slot 1, the faulting warp (when Result)
	Events      []rawEvent
	// After the fault: an Alloc on the same Device and a new OpenDevice.
	AllocErr       string
	AllocUnusable  bool
	ReopenErr      string
	ReopenUnusable bool
}

// faultChild traces the fault program in mode (0 illegal address, 1 trap)
// and reports what the runtime said. It runs in a child process: the fault
// ends this process's use of CUDA.
func faultChild(mode uint32, watch bool) func(t *testing.T) any {
	return func(t *testing.T) any {
		d := openGPU(t)
		p, inst := build(t, d, "fault", true)
		cfg := p.Config(d)
		w := setup(t, d, p, cfg)
		w.Args[1] = iket.U32(mode)
		var rep faultReport
		_, err := inst.Trace(cfg, w.Args, iket.TraceOptions{Capacity: 16, Watch: watch})
		if err == nil {
			t.Fatal("the fault program's launch succeeded")
		}
		rep.Err = err.Error()
		var ke *iket.KernelError
		if errors.As(err, &ke) {
			rep.KernelError, rep.Code, rep.Kernel, rep.ConfigOK = true, ke.Code, ke.Kernel, ke.Config == cfg
			if r := ke.Result; r != nil {
				rep.Result, rep.Partial = true, r.Partial
				// Slot 1 is CTA 0's consumer warp, the one that faults.
				rep.Header, rep.Events = slot(t, r, 1)
			}
		}
		if b, err := d.Alloc(16); err != nil {
			rep.AllocErr, rep.AllocUnusable = err.Error(), errors.Is(err, iket.ErrDeviceUnusable)
		} else {
			b.Close()
		}
		if d2, err := iket.OpenDevice(0); err != nil {
			rep.ReopenErr, rep.ReopenUnusable = err.Error(), errors.Is(err, iket.ErrDeviceUnusable)
		} else {
			d2.Close()
		}
		return rep
	}
}

func TestGPUFault(t *testing.T) {
	tests := []struct {
		name  string
		mode  uint32
		watch bool
	}{
		{"illegal_address/watch", 0, true},
		{"illegal_address/device", 0, false},
		{"trap/watch", 1, true},
		{"trap/device", 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rep faultReport
			child(t, "fault/"+tt.name, &rep)
			t.Logf("fault: %s", rep.Err)
			if !rep.KernelError {
				t.Fatalf("Trace error = %s, want a *KernelError", rep.Err)
			}
			if !slices.Contains(faultCodes[tt.mode], rep.Code) || rep.Kernel != "fault" || !rep.ConfigOK {
				t.Errorf("KernelError code %q kernel %q config matches %v, want one of %v, fault, true", rep.Code, rep.Kernel, rep.ConfigOK, faultCodes[tt.mode])
			}
			checkFaultBuffers(t, tt.mode, tt.watch, &rep)
			// The fault ends the process's use of CUDA; both refusals say
			// so and name the fault.
			for _, r := range []struct {
				what     string
				msg      string
				unusable bool
			}{{"Alloc on the faulted device", rep.AllocErr, rep.AllocUnusable}, {"OpenDevice after the fault", rep.ReopenErr, rep.ReopenUnusable}} {
				if !r.unusable || !strings.Contains(r.msg, iket.FaultMsg) || rep.Code == "" || !strings.Contains(r.msg, rep.Code) {
					t.Errorf("%s: %q (ErrDeviceUnusable %v), want ErrDeviceUnusable saying %q and naming %s", r.what, r.msg, r.unusable, iket.FaultMsg, rep.Code)
				}
			}
		})
	}
	// This process never faulted: its GPU works.
	d := openGPU(t)
	p, inst := build(t, d, "warp_roles", true)
	cfg := p.Config(d)
	if err := p.Check(inst, cfg, setup(t, d, p, cfg), 0); err != nil {
		t.Errorf("check in the parent process after the faulting children: %v", err)
	}
}

// checkFaultBuffers checks what the faulting warp's buffer held, against
// what fault.cu guarantees: in watch mode the header is started and the
// events before the fault (role, push, mark) are in host memory (a system
// fence precedes the faulting instruction). A trap stops the warp there;
// after an illegal-address store the warp may run on to its pop and its end.
// Device buffers cannot be read after a fault.
func checkFaultBuffers(t *testing.T, mode uint32, watch bool, rep *faultReport) {
	t.Helper()
	if !watch {
		if rep.Result {
			t.Errorf("device buffers read after a fault: %+v", rep.Header)
		}
		return
	}
	if !rep.Result || !rep.Partial {
		t.Fatalf("watch mode kept no partial buffers after the fault (result %v, partial %v)", rep.Result, rep.Partial)
	}
	h, evs := rep.Header, rep.Events
	t.Logf("faulting warp: header %+v events %v", h, evs)
	if !h.Started() || h.CTA != [3]uint32{} || h.Warp != 1 || h.Role() != 2 {
		t.Errorf("faulting warp header %+v, want started, CTA 0, warp 1, role 2", h)
	}
	before := []rawEvent{{trace.KindRole, 2, 0}, {trace.KindPush, 4, 0}, {trace.KindMark, 5, uint16(mode)}}
	if len(evs) < len(before) || !cmp.Equal(before, evs[:len(before)]) {
		t.Fatalf("faulting warp events %v, want them to start with the events before the fault %v", evs, before)
	}
	after := evs[len(before):]
	switch mode {
	case 1: // a trap stops the warp
		if len(after) != 0 || h.Finished() || h.Count != 0 {
			t.Errorf("the trapping warp ran past its trap: events after it %v, header %+v", after, h)
		}
	default: // the warp may run on to its end
		if len(after) > 1 || (len(after) == 1 && after[0] != rawEvent{trace.KindPop, 4, 0}) {
			t.Errorf("events after the faulting store %v, want none or the pop of consume", after)
		}
		if h.Count != 0 && h.Count != 4 {
			t.Errorf("faulting warp count %d, want 0 (end not recorded) or 4", h.Count)
		}
	}
}

// hangSlot is one warp's header and events.
type hangSlot struct {
	Header raw.WarpHeader
	Events []rawEvent
}

// hangReport is what a hang child saw.
type hangReport struct {
	Err           string
	HangError     bool
	Timeout       time.Duration
	Took          time.Duration
	CTAs          uint64
	Result        bool
	Slots         []hangSlot // every warp, when Result
	AllocErr      string     // an Alloc while the kernel hangs
	AllocUnusable bool
	WaitIdleErr   string // after releasing the kernel
	CheckErr      string // a warp_roles check afterwards, in the same process
}

const hangTimeout = 300 * time.Millisecond

// hangChild traces the hang program with a short timeout, then releases the
// kernel and checks that the device works again. It runs in a child process
// so that nothing it leaves (a kernel still running after a failed
// assertion) outlives it: process exit ends the kernel. A cleanup releases
// the kernel and waits for it in any case.
func hangChild(watch bool) func(t *testing.T) any {
	return func(t *testing.T) any {
		d := openGPU(t)
		p, inst := build(t, d, "hang", true)
		cfg := p.Config(d)
		w := setup(t, d, p, cfg)
		if err := w.Poison(); err != nil {
			t.Fatal(err)
		}
		rel := w.Buffers["release"].Bytes()
		if len(rel) < 4 {
			t.Fatalf("release word not mapped: %d bytes", len(rel))
		}
		release := func() { atomic.StoreUint32((*uint32)(unsafe.Pointer(&rel[0])), 1) }
		t.Cleanup(func() {
			release()
			if err := d.WaitIdle(builtin.HangLimit + 5*time.Second); err != nil {
				t.Errorf("device after releasing the hung kernel: %v", err)
			}
		})
		rep := hangReport{CTAs: cfg.CTAs()}
		start := time.Now()
		_, err := inst.Trace(cfg, w.Args, iket.TraceOptions{Capacity: 16, Watch: watch, Timeout: hangTimeout})
		rep.Took = time.Since(start)
		if err == nil {
			t.Fatal("the hang program's launch finished")
		}
		rep.Err = err.Error()
		var he *iket.HangError
		if errors.As(err, &he) {
			rep.HangError, rep.Timeout = true, he.Timeout
			if r := he.Result; r != nil {
				rep.Result = true
				for s := uint64(0); s < r.Meta.Warps; s++ {
					h, evs := slot(t, r, s)
					rep.Slots = append(rep.Slots, hangSlot{h, evs})
				}
			}
		}
		if b, err := d.Alloc(16); err != nil {
			rep.AllocErr, rep.AllocUnusable = err.Error(), errors.Is(err, iket.ErrDeviceUnusable)
		} else {
			b.Close()
		}
		release()
		if err := d.WaitIdle(20 * time.Second); err != nil {
			rep.WaitIdleErr = err.Error()
			return rep
		}
		wp, winst := build(t, d, "warp_roles", true)
		wcfg := wp.Config(d)
		if err := wp.Check(winst, wcfg, setup(t, d, wp, wcfg), 0); err != nil {
			rep.CheckErr = err.Error()
		}
		return rep
	}
}

func TestGPUHang(t *testing.T) {
	for _, watch := range []bool{true, false} {
		name := map[bool]string{true: "watch", false: "device"}[watch]
		t.Run(name, func(t *testing.T) {
			var rep hangReport
			child(t, "hang/"+name, &rep)
			t.Logf("hang after %v: %s", rep.Took, rep.Err)
			if !rep.HangError {
				t.Fatalf("Trace error = %s, want a *HangError", rep.Err)
			}
			if rep.Took < hangTimeout || rep.Took > 5*time.Second || rep.Timeout != hangTimeout {
				t.Errorf("hang reported after %v (timeout %v), want after %v", rep.Took, rep.Timeout, hangTimeout)
			}
			if watch && !rep.Result {
				t.Fatal("watch mode kept no buffers")
			}
			if rep.Result {
				if uint64(len(rep.Slots)) != 2*rep.CTAs {
					t.Fatalf("%d warp slots for %d CTAs", len(rep.Slots), rep.CTAs)
				}
				for c := uint64(0); c < rep.CTAs; c++ {
					s := rep.Slots[2*c]
					want := []rawEvent{{trace.KindRole, 1, 0}, {trace.KindPush, 3, 0}, {trace.KindPop, 3, 0}, {trace.KindMark, 5, 0}}
					if !s.Header.Finished() || s.Header.Count != 4 || !cmp.Equal(want, s.Events) {
						t.Errorf("CTA %d producer: header %+v events %v, want finished with %v", c, s.Header, s.Events, want)
					}
					s = rep.Slots[2*c+1]
					want = []rawEvent{{trace.KindRole, 2, 0}, {trace.KindPush, 4, 0}}
					if !s.Header.Started() || s.Header.Finished() || !cmp.Equal(want, s.Events) {
						t.Errorf("CTA %d consumer: header %+v events %v, want started, unfinished, last event push wait_ready", c, s.Header, s.Events)
					}
				}
			}
			if !rep.AllocUnusable {
				t.Errorf("Alloc during a hang: %q, want ErrDeviceUnusable", rep.AllocErr)
			}
			if rep.WaitIdleErr != "" || rep.CheckErr != "" {
				t.Errorf("after releasing the hung kernel: wait %q, check %q", rep.WaitIdleErr, rep.CheckErr)
			}
		})
	}
}

func TestGPUNoLeaks(t *testing.T) {
	d := openGPU(t)
	func() {
		p, base := build(t, d, "warp_roles", false)
		_, inst := build(t, d, "warp_roles", true)
		cfg := p.Config(d)
		w, err := p.Setup(d, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if _, err := inst.Trace(cfg, w.Args, iket.TraceOptions{Watch: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := iket.Time(base, inst, cfg, w.Args, iket.TimingOptions{Warmup: 1, Rounds: 1, CallsPerRound: 2}); err != nil {
			t.Fatal(err)
		}
		// Modules and workload are open here: 2 modules + 2 buffers.
		if n := iket.LiveCount(d); n != 4 {
			t.Errorf("%d live resources while in use, want 4", n)
		}
		w.Close()
		base.Close()
		inst.Close()
	}()
	if n := iket.LiveCount(d); n != 0 {
		t.Errorf("%d resources left after closing everything", n)
	}
	d2, err := iket.OpenDevice(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := d2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d2.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := d2.Alloc(1); !errors.Is(err, iket.ErrDeviceUnusable) {
		t.Errorf("Alloc after Close: %v", err)
	}
}

// lanesSource records with the lanes a kernel uses, one pattern per mode:
// 0, lane 0 alone, then the whole warp, then a range_next; 1, lanes 16-31
// without lane 0, then the whole warp; 2, lane 31 alone inside a range of
// the whole warp; 3, lane 0 alone all along; 4, the two branches of an
// if/else each mark.
const lanesSource = `#include "iket.cuh"
#define LANES_NAMES(X) X(MARK, solo) X(MARK, all) X(RANGE, first) X(RANGE, second)
IKET_NAMES(LANES_NAMES)
extern "C" __global__ void lanes(int mode) {
  iket::Warp tr;
  const unsigned lane = threadIdx.x % 32;
  switch (mode) {
  case 0:
    if (lane == 0) tr.mark(iket_id::solo, 7);
    tr.mark(iket_id::all);
    tr.range_push(iket_id::first, 1);
    tr.range_next(iket_id::second, 2);
    tr.range_pop();
    break;
  case 1:
    if (lane >= 16) {
      tr.range_push(iket_id::first, 3);
      tr.range_pop();
    }
    tr.mark(iket_id::all, 4);
    break;
  case 2:
    tr.range_push(iket_id::first, 5);
    if (lane == 31) tr.mark(iket_id::solo, 6);
    tr.range_pop();
    break;
  case 3:
    if (lane == 0) {
      tr.mark(iket_id::solo, 7);
      tr.range_push(iket_id::first, 1);
      tr.range_next(iket_id::second, 2);
      tr.range_pop();
      tr.mark(iket_id::all);
    }
    break;
  default:
    if (lane < 16) tr.mark(iket_id::solo, 8);
    else tr.mark(iket_id::all, 9);
  }
}
`

// exitsSource ends warps in several ways, so each way of writing the exit
// record is checked: mode 0, the whole warp sets two roles (the second wins)
// and records two marks; mode 1, lane 7 alone sets the role (a side event),
// then the warp leaves together; mode 2, lanes 1-31 return at once
// (recording nothing) and lane 0 sets the role and records a mark alone;
// modes 3 and 4, lanes leave in two groups, each after recording (lane 0
// two marks, the others one side event; then the others two side events
// and lane 0 one mark), so the count must be lane 0's group's whichever
// leaves first. A block of 48 threads makes warp 1 a partial warp (16
// lanes).
const exitsSource = `#include "iket.cuh"
#define EXITS_NAMES(X) X(ROLE, ra) X(ROLE, rb) X(MARK, m)
IKET_NAMES(EXITS_NAMES)
extern "C" __global__ void exits(int mode) {
  iket::Warp tr;
  const unsigned lane = threadIdx.x % 32;
  if (mode == 0) {
    tr.set_role(iket_id::ra);
    tr.mark(iket_id::m, 1);
    tr.set_role(iket_id::rb);
    tr.mark(iket_id::m, 2);
  } else if (mode == 1) {
    if (lane == 7) tr.set_role(iket_id::ra);
  } else if (mode == 2) {
    if (lane != 0) return;
    tr.set_role(iket_id::rb);
    tr.mark(iket_id::m, 3);
  } else if (mode == 3) {
    if (lane == 0) {
      tr.mark(iket_id::m, 4);
      tr.mark(iket_id::m, 5);
      return;
    }
    tr.mark(iket_id::m, 6);
  } else {
    if (lane != 0) {
      tr.mark(iket_id::m, 7);
      tr.mark(iket_id::m, 8);
      return;
    }
    tr.mark(iket_id::m, 9);
  }
}
`

// pairsSource records a push, two stamped pairs (range_next_pair) and a
// stamped range_next_pop: seven records per warp. Between each stamp and
// its pair the warp spins for 1000 cycles, so a pair's first record is at
// least that much older than its second.
const pairsSource = `#include "iket.cuh"
#define PAIRS_NAMES(X) X(RANGE, a) X(RANGE, b) X(RANGE, c)
IKET_NAMES(PAIRS_NAMES)
__device__ void spin_since(unsigned long long t) {
  while ((unsigned long long)clock64() - t < 1000ull) {
  }
}
extern "C" __global__ void pairs() {
  iket::Warp tr;
  tr.range_push(iket_id::a);
  for (int i = 0; i < 2; ++i) {
    const iket::Stamp t = tr.stamp();
    spin_since(t.clock);
    tr.range_next_pair(t, iket_id::b, 2 * i + 1, iket_id::c, 2 * i + 2);
  }
  const iket::Stamp t = tr.stamp();
  spin_since(t.clock);
  tr.range_next_pop(t, iket_id::b, 5);
}
`

// TestGPUPairs: range_next_pair and range_next_pop store two records each,
// in stop mode (at capacities 16 and 4, whose slot stride is an odd number
// of records, warp slots start 16-byte aligned and not; at 5 and 3 every
// pair starts unaligned) and in wrap mode. The
// records, their order and the count must be right; a pair's first record
// carries its stamp (1000 cycles before the second); at capacities that end
// inside a pair, after it, or just before it, the records that fit are kept
// and the tail word after them stays unwritten.
func TestGPUPairs(t *testing.T) {
	d := openGPU(t)
	const a, b, c = 1, 2, 3
	all := []rawEvent{{trace.KindPush, a, 0}, {trace.KindNext, b, 1}, {trace.KindNext, c, 2},
		{trace.KindNext, b, 3}, {trace.KindNext, c, 4}, {trace.KindNext, b, 5}, {trace.KindPop, 0, 0}}
	cfg := iket.LaunchConfig{Kernel: "pairs", Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{64, 1, 1}}
	for _, tc := range []struct {
		build      string
		options    []string
		mode       trace.Mode
		capacities []uint32
	}{
		{"stop", nil, trace.ModeStop, []uint32{16, 5, 4, 3}},
		{"wrap", []string{"-DIKET_WRAP=1"}, trace.ModeWrap, []uint32{16, 4}},
	} {
		m, err := d.Compile(iket.Source{Path: "pairs.cu", Kind: iket.KindCU, Data: []byte(pairsSource), Options: tc.options}, true, "")
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		for _, capacity := range tc.capacities {
			t.Run(fmt.Sprintf("%s capacity %d", tc.build, capacity), func(t *testing.T) {
				res, err := m.Trace(cfg, nil, iket.TraceOptions{Capacity: capacity, Mode: tc.mode})
				if err != nil {
					t.Fatal(err)
				}
				// kept: the events stored, by event index, and where.
				first := 0
				if tc.mode == trace.ModeWrap {
					first = max(0, len(all)-int(capacity))
				}
				last := min(len(all), int(capacity))
				if tc.mode == trace.ModeWrap {
					last = len(all)
				}
				slotOf := func(i int) int { return i % int(capacity) }
				want := make([]rawEvent, capacity)
				for i := first; i < last; i++ {
					want[slotOf(i)] = all[i]
				}
				for s := uint64(0); s < res.Meta.Warps; s++ {
					h, _ := slot(t, res, s)
					if h.Count != 7 || h.Flags&3 != 3 || h.Flags&raw.FlagLanesDiverged != 0 {
						t.Fatalf("slot %d header %+v: want count 7, finished, lanes together", s, h)
					}
					got, slotCycles, scratch := bySlot(res, s, h)
					cycles := make([]uint64, len(all)) // by event
					for i := first; i < last; i++ {
						cycles[i] = slotCycles[slotOf(i)]
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Fatalf("slot %d records by slot (-want +got):\n%s", s, diff)
					}
					if scratch != 0 {
						t.Errorf("slot %d: the tail word after the records holds %#x", s, uint64(scratch))
					}
					for i := first + 1; i < last; i++ {
						gap := int64(cycles[i] - cycles[i-1])
						pairSecond := i == 2 || i == 4 || i == 6
						if gap < 0 || (pairSecond && i-1 >= first && gap < 1000) {
							t.Errorf("slot %d: event %d is %d cycles after event %d (a pair's second: at least 1000)", s, i, gap, i-1)
						}
					}
				}
			})
		}
	}
}

// TestGPUExitRecord checks the exit record of warps that leave together
// (one lane stores the fields plainly) and of warps whose lanes leave apart
// or that are partial (each group's leader merges with reductions): count,
// role, the started and finished flags and the end anchor, in device
// memory and in watch mode's mapped host memory.
// TestGPUDormantRefused: iket's own loader refuses a dormant build (its
// events compiled out of the SASS), naming the way out.
func TestGPUDormantRefused(t *testing.T) {
	d := openGPU(t)
	m, err := d.Compile(iket.Source{Path: "pairs.cu", Kind: iket.KindCU, Data: []byte(pairsSource), Options: []string{"-DIKET_LIVE=0"}}, true, "")
	if err == nil {
		m.Close()
		t.Fatal("a dormant build loaded")
	}
	if !strings.Contains(err.Error(), "a dormant build") || !strings.Contains(err.Error(), "-DIKET_LIVE=1") {
		t.Errorf("error %q, want it to name a dormant build and -DIKET_LIVE=1", err)
	}
}

func TestGPUExitRecord(t *testing.T) {
	d := openGPU(t)
	m, err := d.Compile(iket.Source{Path: "exits.cu", Kind: iket.KindCU, Data: []byte(exitsSource)}, true, "")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cfg := iket.LaunchConfig{Kernel: "exits", Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{48, 1, 1}}
	const ra, rb = 1, 2
	type exitCase struct {
		mode        int32
		count, side uint32 // lane 0's events, side events
		role        uint16
		watch       bool
	}
	var cases []exitCase
	for _, watch := range []bool{false, true} {
		cases = append(cases, exitCase{0, 4, 0, rb, watch}, exitCase{1, 0, 1, ra, watch}, exitCase{2, 2, 0, rb, watch},
			exitCase{3, 2, 1, 0, watch}, exitCase{4, 1, 2, 0, watch})
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("mode %d watch %v", tc.mode, tc.watch), func(t *testing.T) {
			res, err := m.Trace(cfg, []iket.Arg{iket.I32(tc.mode)}, iket.TraceOptions{Capacity: 16, Watch: tc.watch})
			if err != nil {
				t.Fatal(err)
			}
			if res.Meta.Warps != 4 {
				t.Fatalf("%d warps, want 4", res.Meta.Warps)
			}
			for s := uint64(0); s < res.Meta.Warps; s++ {
				h, _ := slot(t, res, s)
				want := uint32(raw.FlagStarted|raw.FlagFinished) | uint32(tc.role)<<raw.FlagRoleShift
				st := res.Meta.Stride()
				side := binary.LittleEndian.Uint32(res.Buffers[int64(s)*st+st-raw.RecordSize:])
				if h.Count != tc.count || side != tc.side || h.Flags != want || h.Role() != tc.role {
					t.Errorf("slot %d (warp %d): count %d side %d flags %#x role %d, want count %d side %d flags %#x role %d",
						s, h.Warp, h.Count, side, h.Flags, h.Role(), tc.count, tc.side, want, tc.role)
				}
				if h.EndGlobaltimer < h.StartGlobaltimer || h.EndGlobaltimer == 0 || h.EndClock <= h.StartClock {
					t.Errorf("slot %d: end anchor (%d ns, %d cycles) not after the start (%d ns, %d cycles)",
						s, h.EndGlobaltimer, h.EndClock, h.StartGlobaltimer, h.StartClock)
				}
			}
		})
	}
}

// barrierSource: warp 0 spins for spin cycles inside a range; then every
// warp waits at __syncthreads inside a range. Mode 1 waits at a
// cuda::barrier-like named barrier written in asm instead (bar.sync 1),
// which orders with events through volatile asm alone.
const barrierSource = `#include "iket.cuh"
#define BARRIER_NAMES(X) X(RANGE, busy) X(RANGE, wait)
IKET_NAMES(BARRIER_NAMES)
extern "C" __global__ void barrier_order(long long spin, int mode) {
  iket::Warp tr;
  if (threadIdx.x / 32 == 0) {
    tr.range_push(iket_id::busy);
    const long long t0 = clock64();
    while (clock64() - t0 < spin) {
    }
    tr.range_pop();
  }
  tr.range_push(iket_id::wait);
  if (mode == 0) __syncthreads();
  else asm volatile("bar.sync 1, %0;" ::"r"(blockDim.x) : "memory");
  tr.range_pop();
}
`

// TestGPUBarrierOrder: an event after a barrier is recorded after the
// barrier completes: warp 1's wait lasts about as long as warp 0's spin,
// which the barrier makes it wait for. Without a store (iket.cuh's never
// runs) before each event's clock read, a CUDA 13.0 build on the H200 read
// the pop's clock before __syncthreads completed (54-83 cycles instead of
// 200,000).
func TestGPUBarrierOrder(t *testing.T) {
	d := openGPU(t)
	m, err := d.Compile(iket.Source{Path: "barrier.cu", Kind: iket.KindCU, Data: []byte(barrierSource)}, true, "")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cfg := iket.LaunchConfig{Kernel: "barrier_order", Grid: [3]uint32{4, 1, 1}, Block: [3]uint32{64, 1, 1}}
	const spin, busy, wait = 200_000, 1, 2
	for _, mode := range []int32{0, 1} {
		t.Run(map[int32]string{0: "__syncthreads", 1: "bar.sync in asm"}[mode], func(t *testing.T) {
			res, err := m.Trace(cfg, []iket.Arg{iket.I64(spin), iket.I32(mode)}, iket.TraceOptions{Capacity: 8})
			if err != nil {
				t.Fatal(err)
			}
			dec, err := trace.NewDecoder(captureOf(t, res).Launch(0), trace.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var w trace.Warp
			checked := 0
			for dec.Next(&w) == nil {
				if w.Warp != 1 {
					continue
				}
				checked++
				if len(w.Events) != 2 || w.Events[0].Name() != wait || w.Events[1].Kind() != trace.KindPop {
					t.Fatalf("slot %d: events %v, want wait's push and pop", w.Slot, w.Events)
				}
				if got := w.Events[1].Cycles() - w.Events[0].Cycles(); got < spin*9/10 {
					t.Errorf("slot %d: wait recorded as %d cycles, want at least %d (warp 0 spun %d before the barrier)", w.Slot, got, spin*9/10, spin)
				}
			}
			if checked != int(cfg.Grid[0]) {
				t.Errorf("checked %d warps, want %d", checked, cfg.Grid[0])
			}
		})
	}
}

// TestGPULanes checks that every lane pattern records exactly on the device:
// each warp's decoded events are the kernel's, in program order (both
// branches of an if/else in either order), strict validation passes, and
// range_next writes one NEXT record, which decodes to ranges that meet.
func TestGPULanes(t *testing.T) {
	d := openGPU(t)
	m, err := d.Compile(iket.Source{Path: "lanes.cu", Kind: iket.KindCU, Data: []byte(lanesSource)}, true, "")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cfg := iket.LaunchConfig{Kernel: "lanes", Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{64, 1, 1}}
	const solo, all, first, second = 1, 2, 3, 4
	wants := [][]rawEvent{
		{{trace.KindMark, solo, 7}, {trace.KindMark, all, 0}, {trace.KindPush, first, 1}, {trace.KindNext, second, 2}, {trace.KindPop, 0, 0}},
		{{trace.KindPush, first, 3}, {trace.KindPop, 0, 0}, {trace.KindMark, all, 4}},
		{{trace.KindPush, first, 5}, {trace.KindMark, solo, 6}, {trace.KindPop, 0, 0}},
		{{trace.KindMark, solo, 7}, {trace.KindPush, first, 1}, {trace.KindNext, second, 2}, {trace.KindPop, 0, 0}, {trace.KindMark, all, 0}},
		{{trace.KindMark, solo, 8}, {trace.KindMark, all, 9}},
	}
	for mode, want := range wants {
		t.Run(fmt.Sprintf("mode %d", mode), func(t *testing.T) {
			res, err := m.Trace(cfg, []iket.Arg{iket.I32(int32(mode))}, iket.TraceOptions{Capacity: 16})
			if err != nil {
				t.Fatal(err)
			}
			c := captureOf(t, res)
			if _, err := trace.Validate(c.Launch(0), trace.Options{Strict: true}); err != nil {
				t.Errorf("strict validation: %v", err)
			}
			dec, err := trace.NewDecoder(c.Launch(0), trace.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var w trace.Warp
			for dec.Next(&w) == nil {
				var got []rawEvent
				for _, e := range w.Events {
					got = append(got, rawEvent{e.Kind(), e.Name(), e.Payload()})
				}
				if mode == 4 && len(got) == 2 && got[0] == want[1] && got[1] == want[0] {
					got[0], got[1] = got[1], got[0] // the else branch ran first
				}
				if diff := cmp.Diff(want, got); diff != "" || w.Dropped != 0 {
					t.Fatalf("slot %d: %d dropped, events (-want +got):\n%s", w.Slot, w.Dropped, diff)
				}
				if mode == 0 && (len(w.Ranges) != 2 || w.Ranges[0].End != w.Ranges[1].Start) {
					t.Errorf("slot %d ranges %+v: want first, then second from the instant first ends", w.Slot, w.Ranges)
				}
			}
		})
	}
}

// batchSource records through iket::Batch: a push, n stamped pairs with a
// mark before every 40th, a stamped range_next_pop, so that pairs wait in
// lanes while other events are stored and the warp flushes when 32 are
// pending. Mode 1: lanes 16-31 return before pair 20 (each flushes its own
// pending pair; lanes 0-15 go on with 16 lanes, so their pairs are stored
// at once). Mode 2: an explicit flush() after pair 5. Mode 3: a flush()
// by lanes 0-15 alone after pair 5 (they store theirs, and the batch goes
// on until the whole warp flushes). Mode 4: a second Batch on the same
// Warp takes pairs 50-59, and ends there, with the first still holding
// pairs. With a block of 48 threads the second warp has 16 lanes and
// stores every pair at once.
const batchSource = `#include "iket.cuh"
#define BATCH_NAMES(X) X(RANGE, a) X(RANGE, b) X(RANGE, c) X(MARK, m)
IKET_NAMES(BATCH_NAMES)
extern "C" __global__ void batch(int n, int mode) {
  iket::Warp tr;
  tr.range_push(iket_id::a);
  iket::Batch bt(tr);
  const unsigned lane = threadIdx.x % 32;
  for (int i = 0; i < n; ++i) {
    if (mode == 1 && i == 20 && lane >= 16) return;
    if (i % 40 == 39) tr.mark(iket_id::m, i);
    if (mode == 4 && i == 50) {
      iket::Batch other(tr);
      for (; i < 60; ++i) {
        const iket::Stamp t = tr.stamp();
        other.range_next_pair(t, iket_id::b, i, iket_id::c, i);
      }
    }
    const iket::Stamp t = tr.stamp();
    bt.range_next_pair(t, iket_id::b, i, iket_id::c, i);
    if (mode == 2 && i == 5) bt.flush();
    if (mode == 3 && i == 5 && lane < 16) bt.flush();
  }
  const iket::Stamp t = tr.stamp();
  bt.range_next_pop(t, iket_id::b, n);
}
`

// TestGPUBatch: pairs recorded through iket::Batch land at the slots, in
// the order and with the count that Warp's own calls give, in stop mode
// (capacities that end inside a batch and inside a pair) and in wrap mode; pending pairs are stored when 32 wait, at flush(), when
// lanes return early and at the end; a partial warp stores each pair at
// once. The strict decoder accepts the whole capture.
func TestGPUBatch(t *testing.T) {
	d := openGPU(t)
	const a, b, c, mk = 1, 2, 3, 4
	const n = 90
	var all []rawEvent
	all = append(all, rawEvent{trace.KindPush, a, 0})
	for i := 0; i < n; i++ {
		if i%40 == 39 {
			all = append(all, rawEvent{trace.KindMark, mk, uint16(i)})
		}
		all = append(all, rawEvent{trace.KindNext, b, uint16(i)}, rawEvent{trace.KindNext, c, uint16(i)})
	}
	all = append(all, rawEvent{trace.KindNext, b, n}, rawEvent{trace.KindPop, 0, 0})
	cfg := iket.LaunchConfig{Kernel: "batch", Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{48, 1, 1}}
	for _, tc := range []struct {
		build      string
		options    []string
		mode       trace.Mode
		capacities []uint32
	}{
		{"stop", nil, trace.ModeStop, []uint32{256, 37, 50}},
		{"wrap", []string{"-DIKET_WRAP=1"}, trace.ModeWrap, []uint32{64}},
	} {
		m, err := d.Compile(iket.Source{Path: "batch.cu", Kind: iket.KindCU, Data: []byte(batchSource), Options: tc.options}, true, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		for _, capacity := range tc.capacities {
			for _, kmode := range []int32{0, 1, 2, 3, 4} {
				t.Run(fmt.Sprintf("%s capacity %d mode %d", tc.build, capacity, kmode), func(t *testing.T) {
					res, err := m.Trace(cfg, []iket.Arg{iket.I32(n), iket.I32(kmode)}, iket.TraceOptions{Capacity: capacity, Mode: tc.mode})
					if err != nil {
						t.Fatal(err)
					}
					if res.Meta.Warps != 4 {
						t.Fatalf("%d warps, want 4", res.Meta.Warps)
					}
					first, last := 0, min(len(all), int(capacity))
					if tc.mode == trace.ModeWrap {
						first, last = max(0, len(all)-int(capacity)), len(all)
					}
					want := make([]rawEvent, capacity)
					for i := first; i < last; i++ {
						want[i%int(capacity)] = all[i]
					}
					for s := uint64(0); s < res.Meta.Warps; s++ {
						h, _ := slot(t, res, s)
						if h.Count != uint32(len(all)) || h.Flags&0xf != 3 {
							t.Fatalf("slot %d header %+v: want count %d, finished, lanes together", s, h, len(all))
						}
						got, _, scratch := bySlot(res, s, h)
						if diff := cmp.Diff(want, got); diff != "" {
							t.Fatalf("slot %d records by slot (-want +got):\n%s", s, diff)
						}
						if scratch != 0 {
							t.Errorf("slot %d: the tail word after the records holds %#x", s, uint64(scratch))
						}
					}
					if tc.mode == trace.ModeStop && int(capacity) >= len(all) {
						c := captureOf(t, res)
						if _, err := trace.Validate(c.Launch(0), trace.Options{Strict: true}); err != nil {
							t.Errorf("strict validation: %v", err)
						}
					}
				})
			}
		}
	}
}
