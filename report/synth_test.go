package report

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"testing"
	"time"

	"github.com/iket-trace/iket/internal/raw"
	"github.com/iket-trace/iket/trace"
)

// The synthetic kernel: per CTA, warp 0 is a producer that loads each stage
// (push/pop "load", payload = stage) and issues an async "copy" per stage
// that overlaps the next one (start/end, two lanes); the other warps are
// consumers that compute each stage ("compute") with a nested "mma". The
// last warp of CTA 1 leaves a "compute" open; the last warp of the last CTA
// never finishes. Times are exact: every SM clock runs at 1.5 cycles/ns.
const (
	synthStages  = 6
	synthStageNs = 1000 // one stage
	synthBaseNs  = int64(1_700_000_000_000_000_000)
)

// synthNames is the kernel's name table, ids from 1.
var synthNames = []trace.Name{
	{ID: 1, Kind: trace.NameRole, Text: "producer"},
	{ID: 2, Kind: trace.NameRole, Text: "consumer"},
	{ID: 3, Kind: trace.NameRange, Text: "load"},
	{ID: 4, Kind: trace.NameRange, Text: "copy"},
	{ID: 5, Kind: trace.NameRange, Text: "compute"},
	{ID: 6, Kind: trace.NameRange, Text: "mma"},
	{ID: 7, Kind: trace.NameMark, Text: "kernel_start"},
}

const (
	idProducer = 1 + iota
	idConsumer
	idLoad
	idCopy
	idCompute
	idMMA
	idStart
)

type synthEvent struct {
	kind          trace.Kind
	name, payload uint16
	ns            int64 // after the warp's start anchor
}

// synthWarp returns warp w's events and its lifetime in ns.
func synthWarp(cta, w, ctas, warpsPerCTA int) (evs []synthEvent, life int64, finished bool) {
	add := func(k trace.Kind, name, payload uint16, ns int64) {
		evs = append(evs, synthEvent{k, name, payload, ns})
	}
	add(trace.KindMark, idStart, uint16(cta), 10)
	if w == 0 {
		add(trace.KindRole, idProducer, 0, 20)
		for s := range synthStages {
			t := int64(100 + s*synthStageNs)
			add(trace.KindPush, idLoad, uint16(s), t)
			add(trace.KindStart, idCopy, uint16(s), t+200)
			add(trace.KindPop, 0, 0, t+600)
			if s > 0 {
				add(trace.KindEnd, idCopy, uint16(s-1), t+400)
			}
		}
		add(trace.KindEnd, idCopy, synthStages-1, int64(100+synthStages*synthStageNs))
		sortByTime(evs)
	} else {
		add(trace.KindRole, idConsumer, 0, 20)
		for s := range synthStages {
			t := int64(700 + s*synthStageNs + w*20)
			add(trace.KindPush, idCompute, uint16(s), t)
			add(trace.KindPush, idMMA, uint16(s), t+100)
			add(trace.KindPop, 0, 0, t+500)
			if !(cta == 1 && w == warpsPerCTA-1 && s == synthStages-1) {
				add(trace.KindPop, idCompute, 0, t+800)
			}
		}
	}
	life = int64(1000 + synthStages*synthStageNs)
	finished = !(cta == ctas-1 && w == warpsPerCTA-1)
	return evs, life, finished
}

func sortByTime(evs []synthEvent) {
	for i := 1; i < len(evs); i++ {
		for j := i; j > 0 && evs[j].ns < evs[j-1].ns; j-- {
			evs[j], evs[j-1] = evs[j-1], evs[j]
		}
	}
}

// synthMeta returns the metadata of a synthetic launch.
func synthMeta(ctas, warpsPerCTA int, capacity uint32) *trace.Meta {
	return &trace.Meta{
		Version: 1, Tool: "iket test", Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Device: &trace.Device{Name: "NVIDIA H200", UUID: "GPU-0123", Driver: "580.159.04", CUDA: "13.0",
			ComputeCap: "9.0", SMs: 132, MaxSMClockMHz: 1980,
			Before: &trace.Conditions{SMClockMHz: 1980, MemClockMHz: 3201, TemperatureC: 31, PowerW: 118.5, PowerLimitW: 700},
			After:  &trace.Conditions{SMClockMHz: 1755, MemClockMHz: 3201, TemperatureC: 44, PowerW: 402.25, PowerLimitW: 700, ThrottleReasons: []string{"sw_power_cap"}}},
		Launches: []trace.LaunchMeta{{
			Kernel: "warp_roles", Source: "kernels/examples/warp_roles.cu",
			Grid: [3]uint32{uint32(ctas), 1, 1}, Block: [3]uint32{uint32(32 * warpsPerCTA), 1, 1},
			WarpsPerCTA: uint32(warpsPerCTA), Warps: uint64(ctas * warpsPerCTA),
			Capacity: capacity, Mode: trace.ModeStop, Names: synthNames,
			Latency: &trace.Latency{
				Uninstrumented: trace.Samples{MedianUS: 10.5, MinUS: 10.25, MaxUS: 11, RoundsUS: []float64{10.25, 10.5, 11}},
				Instrumented:   trace.Samples{MedianUS: 10.875, MinUS: 10.5, MaxUS: 11.5, RoundsUS: []float64{10.5, 10.875, 11.5}},
				Ratio:          10.875 / 10.5,
				Settings:       trace.TimingSettings{Warmup: 20, Rounds: 3, CallsPerRound: 50, FlushL2: true, FlushBytes: 256 << 20, Interleaved: true, Boundary: "cuda events"},
			},
		}},
	}
}

// synthCapture encodes a launch of ctas CTAs with warpsPerCTA warps each
// (capacity records per warp, stop mode) and opens it.
func synthCapture(t testing.TB, ctas, warpsPerCTA int, capacity uint32) *trace.Capture {
	t.Helper()
	meta := synthMeta(ctas, warpsPerCTA, capacity)
	stride := raw.Stride(capacity)
	buf := make([]byte, int64(ctas*warpsPerCTA)*stride)
	for cta := range ctas {
		sm := uint32(cta % 4)
		clk0 := uint64(1_000_000_000)*uint64(sm+1) + 12345 // per-SM clock origin at synthBaseNs
		cyc := func(ns int64) uint64 { return clk0 + uint64(ns-synthBaseNs)*3/2 }
		for w := range warpsPerCTA {
			slot := cta*warpsPerCTA + w
			b := buf[int64(slot)*stride:]
			evs, life, finished := synthWarp(cta, w, ctas, warpsPerCTA)
			start := synthBaseNs + int64(cta)*250 + int64(w)*8
			h := raw.WarpHeader{Magic: raw.WarpMagic, SM: sm, CTA: [3]uint32{uint32(cta), 0, 0}, Warp: uint32(w),
				StartGlobaltimer: uint64(start), StartClock: cyc(start), Flags: raw.FlagStarted}
			if finished {
				h.EndGlobaltimer, h.EndClock = uint64(start+life), cyc(start+life)
				h.Count, h.Flags = uint32(len(evs)), raw.FlagStarted|raw.FlagFinished
			}
			raw.EncodeWarpHeader(b, &h)
			for i, e := range evs {
				idx := min(uint32(i), capacity)
				r := raw.MakeRecord(uint8(e.kind), e.name, e.payload, uint32(cyc(start+e.ns)))
				binary.LittleEndian.PutUint64(b[raw.WarpHeaderSize+8*int64(idx):], uint64(r))
			}
		}
	}
	var file bytes.Buffer
	if err := trace.WriteCapture(&file, meta, []io.Reader{bytes.NewReader(buf)}); err != nil {
		t.Fatalf("write synthetic capture: %v", err)
	}
	c, err := trace.Read(bytes.NewReader(file.Bytes()), int64(file.Len()))
	if err != nil {
		t.Fatalf("read synthetic capture: %v", err)
	}
	return c
}

// synthInput analyses launch 0 of c through a Collector into a full Input
// with tables, as the command line builds it.
func synthInput(t testing.TB, c *trace.Capture, lim Limits) *Input {
	t.Helper()
	l := c.Launch(0)
	col := NewCollector(l.Meta, lim)
	a, err := trace.Analyze(context.Background(), l, trace.Options{}, col.Add)
	if err != nil {
		t.Fatalf("analyze: %v", err)
	}
	in := &Input{Meta: &c.Meta, Launch: 0, Analysis: a} // Limits come from the collector
	col.Fill(in)
	return in
}
