package perfetto

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"io"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/iket-trace/iket/perfetto/internal/pb"
	"github.com/iket-trace/iket/trace"
)

// Name ids of the test launch.
const (
	nProducer = iota + 1
	nConsumer
	nKernelStart
	nLoad
	nWait
	nCompute
	nTMA
	nInner
)

func testMeta() *trace.Meta {
	return &trace.Meta{
		Version: 1, Tool: "test",
		Device: &trace.Device{Name: "Test GPU", UUID: "GPU-1234", SMs: 4, MaxSMClockMHz: 1980},
		Launches: []trace.LaunchMeta{{
			Kernel: "warp_roles", Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{64, 1, 1},
			WarpsPerCTA: 2, Warps: 4, Capacity: 64, Mode: trace.ModeStop,
			Names: []trace.Name{
				{ID: nProducer, Kind: trace.NameRole, Text: "producer"},
				{ID: nConsumer, Kind: trace.NameRole, Text: "consumer"},
				{ID: nKernelStart, Kind: trace.NameMark, Text: "kernel_start"},
				{ID: nLoad, Kind: trace.NameRange, Text: "producer_load"},
				{ID: nWait, Kind: trace.NameRange, Text: "wait_for_data"},
				{ID: nCompute, Kind: trace.NameRange, Text: "consumer_compute"},
				{ID: nTMA, Kind: trace.NameRange, Text: "tma"},
				{ID: nInner, Kind: trace.NameRange, Text: "inner"},
			},
		}},
	}
}

const t0 = 1_700_000_000_000_000_000

// rng builds a push/pop range (times relative to t0).
func rng(name uint16, payload uint16, start, end int64, depth int32) trace.Range {
	return trace.Range{Name: name, Payload: payload, Start: t0 + start, End: t0 + end,
		StartCycles: uint64(start * 2), EndCycles: uint64(end * 2), Depth: depth}
}

func async(name uint16, payload uint16, start, end int64, lane int32) trace.Range {
	r := rng(name, payload, start, end, 0)
	r.Async, r.Lane = true, lane
	return r
}

// testWarps is a two-CTA launch: in each CTA warp 0 produces (load, then
// wait), warp 1 consumes (wait, then compute with a nested range and two
// overlapping async ranges).
func testWarps() []trace.Warp {
	var ws []trace.Warp
	for cta := uint64(0); cta < 2; cta++ {
		off := int64(cta) * 1000
		prod := trace.Warp{
			Slot: cta * 2, SM: uint32(cta), CTA: [3]uint32{uint32(cta), 0, 0}, Warp: 0, CTALinear: cta,
			Role: nProducer, Started: true, Finished: true, Count: 5, Stored: 5,
			First: t0 + off, Last: t0 + off + 500,
			Marks:  []trace.Mark{{Name: nKernelStart, Time: t0 + off + 10, Cycles: 20}},
			Ranges: []trace.Range{rng(nLoad, 0, off+20, off+200, 0), rng(nWait, 0, off+200, off+300, 0)},
		}
		cons := trace.Warp{
			Slot: cta*2 + 1, SM: uint32(cta), CTA: [3]uint32{uint32(cta), 0, 0}, Warp: 1, CTALinear: cta,
			Role: nConsumer, Started: true, Finished: true, Count: 11, Stored: 11,
			First: t0 + off, Last: t0 + off + 600,
			Marks: []trace.Mark{{Name: nKernelStart, Payload: 1, Time: t0 + off + 10, Cycles: 20}},
			Ranges: []trace.Range{
				rng(nWait, 0, off+15, off+300, 0),
				rng(nCompute, 0, off+300, off+500, 0),
				rng(nInner, 0, off+300, off+400, 1),
				async(nTMA, 1, off+310, off+450, 0),
				async(nTMA, 2, off+320, off+460, 1),
			},
		}
		ws = append(ws, prod, cons)
	}
	for i := range ws {
		ws[i].Events = []trace.Event{
			trace.NewEvent(trace.KindMark, 0, 0, 0, ws[i].First+10),
			trace.NewEvent(trace.KindPop, 0, 0, 0, ws[i].Last-100),
		}
	}
	return ws
}

// writeLaunch writes one launch of warps and returns the trace bytes.
func writeLaunch(t testing.TB, opt Options, meta *trace.Meta, warps []trace.Warp) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, opt)
	if err := w.BeginLaunch(meta, 0, &meta.Launches[0], LaunchInfo{}); err != nil {
		t.Fatalf("BeginLaunch: %v", err)
	}
	for i := range warps {
		if err := w.AddWarp(&warps[i]); err != nil {
			t.Fatalf("AddWarp(%d): %v", i, err)
		}
	}
	if err := w.EndLaunch(); err != nil {
		t.Fatalf("EndLaunch: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return buf.Bytes()
}

// readPackets parses a trace into its packets, inflating compressed ones.
func readPackets(t testing.TB, data []byte) []*pb.TracePacket {
	t.Helper()
	var tr pb.Trace
	if err := proto.Unmarshal(data, &tr); err != nil {
		t.Fatalf("unmarshal trace: %v", err)
	}
	var out []*pb.TracePacket
	for _, p := range tr.GetPacket() {
		if z := p.GetCompressedPackets(); z != nil {
			zr, err := zlib.NewReader(bytes.NewReader(z))
			if err != nil {
				t.Fatalf("inflate: %v", err)
			}
			raw, err := io.ReadAll(zr)
			if err != nil {
				t.Fatalf("inflate: %v", err)
			}
			out = append(out, readPackets(t, raw)...)
			continue
		}
		out = append(out, p)
	}
	return out
}

// model is a parsed trace resolved into tracks and named events.
type model struct {
	tracks   map[uint64]*pb.TrackDescriptor
	children map[uint64][]uint64 // in file order
	events   map[uint64][]resolved
}

type resolved struct {
	ts     uint64
	typ    pb.TrackEvent_Type
	name   string
	args   map[string]any
	flows  []uint64
	term   []uint64
	value  float64
	packet int
}

func resolve(t testing.TB, pkts []*pb.TracePacket) *model {
	t.Helper()
	m := &model{tracks: map[uint64]*pb.TrackDescriptor{}, children: map[uint64][]uint64{}, events: map[uint64][]resolved{}}
	names := map[uint32]map[uint64]string{}
	annots := map[uint32]map[uint64]string{}
	// Per sequence: the default clock and track, and the incremental
	// clocks' running values (their snapshots pair them with BOOTTIME at
	// the same value, as the writer's do).
	defClock := map[uint32]uint32{}
	defTrack := map[uint32]uint64{}
	clocks := map[[2]uint32]*int64{}
	for i, p := range pkts {
		seq := p.GetTrustedPacketSequenceId()
		if p.GetSequenceFlags()&seqIncrementalClear != 0 {
			names[seq], annots[seq] = map[uint64]string{}, map[uint64]string{}
			defClock[seq], defTrack[seq] = 0, 0
		}
		if d := p.GetTracePacketDefaults(); d != nil {
			defClock[seq], defTrack[seq] = d.GetTimestampClockId(), d.GetTrackEventDefaults().GetTrackUuid()
		}
		for _, c := range p.GetClockSnapshot().GetClocks() {
			if c.GetIsIncremental() {
				v := int64(c.GetTimestamp())
				clocks[[2]uint32{seq, c.GetClockId()}] = &v
			}
		}
		ts := p.GetTimestamp()
		if p.Timestamp != nil {
			id := p.GetTimestampClockId()
			if id == 0 {
				id = defClock[seq]
			}
			if c := clocks[[2]uint32{seq, id}]; c != nil {
				*c += int64(ts)
				ts = uint64(*c)
			}
		}
		for _, n := range p.GetInternedData().GetEventNames() {
			names[seq][n.GetIid()] = n.GetName()
		}
		for _, n := range p.GetInternedData().GetDebugAnnotationNames() {
			annots[seq][n.GetIid()] = n.GetName()
		}
		if td := p.GetTrackDescriptor(); td != nil {
			m.tracks[td.GetUuid()] = td
			m.children[td.GetParentUuid()] = append(m.children[td.GetParentUuid()], td.GetUuid())
		}
		te := p.GetTrackEvent()
		if te == nil {
			continue
		}
		r := resolved{ts: ts, typ: te.GetType(), flows: te.GetFlowIds(), term: te.GetTerminatingFlowIds(), packet: i}
		if te.NameIid != nil {
			r.name = names[seq][te.GetNameIid()]
		}
		if te.CounterValue != nil {
			r.value = float64(te.GetCounterValue())
		} else {
			r.value = te.GetDoubleCounterValue()
		}
		for _, da := range te.GetDebugAnnotations() {
			if r.args == nil {
				r.args = map[string]any{}
			}
			k := annots[seq][da.GetNameIid()]
			if da.UintValue != nil {
				r.args[k] = da.GetUintValue()
			} else {
				r.args[k] = da.GetStringValue()
			}
		}
		track := te.GetTrackUuid()
		if te.TrackUuid == nil {
			track = defTrack[seq]
		}
		m.events[track] = append(m.events[track], r)
	}
	return m
}

// childNames returns the names of a track's children sorted by rank.
func (m *model) childNames(parent uint64) []string {
	ids := append([]uint64(nil), m.children[parent]...)
	sortByRank(ids, m.tracks)
	var out []string
	for _, id := range ids {
		out = append(out, m.tracks[id].GetName())
	}
	return out
}

func sortByRank(ids []uint64, tracks map[uint64]*pb.TrackDescriptor) {
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && tracks[ids[j]].GetSiblingOrderRank() < tracks[ids[j-1]].GetSiblingOrderRank(); j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
		}
	}
}

// find returns the uuid of the track with name under parent, or 0.
func (m *model) find(parent uint64, name string) uint64 {
	for _, id := range m.children[parent] {
		if m.tracks[id].GetName() == name {
			return id
		}
	}
	return 0
}

// path finds a track by its names from the root.
func (m *model) path(t testing.TB, names ...string) uint64 {
	t.Helper()
	id := uint64(0)
	for _, n := range names {
		next := m.find(id, n)
		if next == 0 {
			t.Fatalf("no track %q under %q; children: %q", n, m.tracks[id].GetName(), m.childNames(id))
		}
		id = next
	}
	return id
}

// rawFields lists the (number, wire type) of a message's top-level fields.
func rawFields(t testing.TB, b []byte) [][2]int {
	t.Helper()
	var out [][2]int
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("bad tag: %v", protowire.ParseError(n))
		}
		b = b[n:]
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			t.Fatalf("bad field %d: %v", num, protowire.ParseError(m))
		}
		b = b[m:]
		out = append(out, [2]int{int(num), int(typ)})
	}
	return out
}

var _ = bufio.NewReader
