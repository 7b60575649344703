package perfetto

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/iket-trace/iket/perfetto/internal/pb"
	"github.com/iket-trace/iket/trace"
)

func TestTrackTree(t *testing.T) {
	m := resolve(t, readPackets(t, writeLaunch(t, Options{Counters: true}, testMeta(), testWarps())))
	tests := []struct {
		path []string
		want []string
	}{
		{nil, []string{"GPU · Test GPU"}},
		{[]string{"GPU · Test GPU"}, []string{"launch 0 · warp_roles"}},
		{[]string{"GPU · Test GPU", "launch 0 · warp_roles"}, []string{
			"avg warps running", "avg producer in producer_load", "avg producer in wait_for_data",
			"avg consumer in wait_for_data", "avg consumer in consumer_compute", "avg consumer in tma", "avg consumer in inner",
			"SM 0", "SM 1"}},
		{[]string{"GPU · Test GPU", "launch 0 · warp_roles", "SM 1"}, []string{"CTA 1"}},
		{[]string{"GPU · Test GPU", "launch 0 · warp_roles", "SM 1", "CTA 1"}, []string{
			"producer in producer_load", "producer in wait_for_data", "consumer in wait_for_data",
			"consumer in consumer_compute", "consumer in tma", "consumer in inner",
			"warp 0 · producer", "warp 1 · consumer"}},
		{[]string{"GPU · Test GPU", "launch 0 · warp_roles", "SM 1", "CTA 1", "warp 1 · consumer"}, []string{"async lane 0", "async lane 1"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.path, "/"), func(t *testing.T) {
			id := m.path(t, tt.path...)
			if diff := cmp.Diff(tt.want, m.childNames(id)); diff != "" {
				t.Errorf("children (-want +got):\n%s", diff)
			}
			names := map[string]int{}
			for _, c := range m.children[id] {
				names[m.tracks[c].GetName()]++
			}
			for _, c := range m.children[id] {
				td := m.tracks[c]
				// Merging by name merges nothing when names are unique;
				// root tracks (GPUs of one model) turn it off.
				if (id == 0 || names[td.GetName()] > 1) && td.GetSiblingMergeBehavior() != pb.TrackDescriptor_SIBLING_MERGE_BEHAVIOR_NONE {
					t.Errorf("track %q merges with siblings", td.GetName())
				}
				if td.SiblingOrderRank == nil {
					t.Errorf("track %q has no sibling rank", td.GetName())
				}
			}
			if id != 0 && m.tracks[id].GetChildOrdering() != pb.TrackDescriptor_EXPLICIT && len(m.children[id]) > 1 {
				t.Errorf("track %q orders children %v, want EXPLICIT", m.tracks[id].GetName(), m.tracks[id].GetChildOrdering())
			}
		})
	}
}

// sliceEvent is a compact form of a warp track event for comparisons.
type sliceEvent struct {
	Ts   int64 // relative to t0
	Type string
	Name string
}

func compact(evs []resolved) []sliceEvent {
	var out []sliceEvent
	for _, e := range evs {
		out = append(out, sliceEvent{Ts: int64(e.ts) - t0, Type: strings.TrimPrefix(e.typ.String(), "TYPE_"), Name: e.name})
	}
	return out
}

func TestWarpEvents(t *testing.T) {
	m := resolve(t, readPackets(t, writeLaunch(t, Options{}, testMeta(), testWarps())))
	base := []string{"GPU · Test GPU", "launch 0 · warp_roles", "SM 1", "CTA 1", "warp 1 · consumer"}
	tests := []struct {
		name string
		path []string
		want []sliceEvent
	}{
		{"warp track", base, []sliceEvent{
			{Ts: 1010, Type: "INSTANT", Name: "kernel_start"},
			{Ts: 1015, Type: "SLICE_BEGIN", Name: "wait_for_data"},
			{Ts: 1300, Type: "SLICE_END"},
			{Ts: 1300, Type: "SLICE_BEGIN", Name: "consumer_compute"},
			{Ts: 1300, Type: "SLICE_BEGIN", Name: "inner"},
			{Ts: 1400, Type: "SLICE_END"},
			{Ts: 1500, Type: "SLICE_END"},
		}},
		{"lane 0", append(base, "async lane 0"), []sliceEvent{
			{Ts: 1310, Type: "SLICE_BEGIN", Name: "tma/1"}, {Ts: 1450, Type: "SLICE_END"},
		}},
		{"lane 1", append(base, "async lane 1"), []sliceEvent{
			{Ts: 1320, Type: "SLICE_BEGIN", Name: "tma/2"}, {Ts: 1460, Type: "SLICE_END"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := compact(m.events[m.path(t, tt.path...)])
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
	// No annotation repeats what the track says, and cycles need RawCycles.
	if args := m.events[m.path(t, base...)][3].args; args != nil {
		t.Errorf("consumer_compute annotations %v, want none", args)
	}
	m = resolve(t, readPackets(t, writeLaunch(t, Options{RawCycles: true}, testMeta(), testWarps())))
	want := map[string]any{"start_cycles": uint64(2 * 1300), "end_cycles": uint64(2 * 1500)}
	if diff := cmp.Diff(want, m.events[m.path(t, base...)][3].args); diff != "" {
		t.Errorf("consumer_compute annotations with RawCycles (-want +got):\n%s", diff)
	}
}

// TestAnnotationValues writes values on both sides of the encoder's fast
// paths (one-byte payloads and lanes, cycle counts below 2^56) and reads
// them back: range payloads in the name, mark payloads and (RawCycles)
// cycle counts as annotations.
func TestAnnotationValues(t *testing.T) {
	type args = map[string]any
	for _, v := range []struct {
		payload uint16
		cycles  uint64
		lane    int32
	}{{0, 0, 0}, {127, 1<<56 - 1, 127}, {128, 1 << 56, 128}, {65535, math.MaxUint64, 255}} {
		ws := testWarps()[:1]
		ws[0].Ranges = nil
		for l := int32(0); l <= v.lane; l++ {
			ws[0].Ranges = append(ws[0].Ranges, async(nTMA, v.payload, 100, 200, l))
		}
		r := rng(nLoad, v.payload, 50, 300, 0)
		r.StartCycles, r.EndCycles = v.cycles, v.cycles/3
		ws[0].Ranges = append(ws[0].Ranges, r)
		ws[0].Marks = []trace.Mark{{Name: nKernelStart, Payload: v.payload, Time: t0 + 40, Cycles: v.cycles}}
		m := resolve(t, readPackets(t, writeLaunch(t, Options{RawCycles: true}, testMeta(), ws)))
		warp := []string{"GPU · Test GPU", "launch 0 · warp_roles", "SM 0", "CTA 0", "warp 0 · producer"}
		ev := m.events[m.path(t, warp...)]
		mark, load := args{"cycles": v.cycles}, args{"start_cycles": v.cycles, "end_cycles": v.cycles / 3}
		if v.payload != 0 {
			mark["payload"] = uint64(v.payload)
		}
		if diff := cmp.Diff(mark, ev[0].args); diff != "" {
			t.Errorf("%+v: mark annotations (-want +got):\n%s", v, diff)
		}
		if diff := cmp.Diff(load, ev[1].args); diff != "" {
			t.Errorf("%+v: range annotations (-want +got):\n%s", v, diff)
		}
		name := "producer_load"
		if v.payload != 0 {
			name = fmt.Sprintf("producer_load/%d", v.payload)
		}
		if ev[1].name != name {
			t.Errorf("%+v: range name %q, want %q", v, ev[1].name, name)
		}
		lane := m.events[m.path(t, append(warp, fmt.Sprintf("async lane %d", v.lane))...)]
		if _, ok := lane[0].args["lane"]; len(lane) != 2 || ok {
			t.Errorf("%+v: lane events %+v, want a slice without a lane annotation (the track says it)", v, lane)
		}
	}
}

func TestFlows(t *testing.T) {
	tests := []struct {
		name  string
		flows bool
		want  int
	}{
		{"on", true, 2}, // one per CTA: producer_load -> consumer_compute
		{"off", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := writeLaunch(t, Options{Flows: tt.flows}, testMeta(), testWarps())
			if err := CheckValid(bytes.NewReader(data)); err != nil {
				t.Fatalf("CheckValid: %v", err)
			}
			m := resolve(t, readPackets(t, data))
			src := map[uint64]string{}
			dst := map[uint64]string{}
			for _, evs := range m.events {
				for _, e := range evs {
					for _, f := range e.flows {
						src[f] = e.name
					}
					for _, f := range e.term {
						dst[f] = e.name
					}
				}
			}
			if len(src) != tt.want || len(dst) != tt.want {
				t.Fatalf("%d flow sources, %d ends, want %d", len(src), len(dst), tt.want)
			}
			for id, s := range src {
				if s != "producer_load" || dst[id] != "consumer_compute" {
					t.Errorf("flow %d: %q -> %q, want producer_load -> consumer_compute", id, s, dst[id])
				}
			}
		})
	}
}

func TestCounters(t *testing.T) {
	m := resolve(t, readPackets(t, writeLaunch(t, Options{Counters: true}, testMeta(), testWarps())))
	cta := []string{"GPU · Test GPU", "launch 0 · warp_roles", "SM 0", "CTA 0"}
	type sample struct {
		Ts    int64
		Value float64
	}
	samples := func(id uint64) []sample {
		var out []sample
		for _, e := range m.events[id] {
			out = append(out, sample{int64(e.ts) - t0, e.value})
		}
		return out
	}
	tests := []struct {
		track []string
		want  []sample
	}{
		{append(cta, "consumer in consumer_compute"), []sample{{300, 1}, {500, 0}}},
		// Two overlapping async tma ranges in one warp count one warp.
		{append(cta, "consumer in tma"), []sample{{310, 1}, {460, 0}}},
		{append(cta, "producer in wait_for_data"), []sample{{200, 1}, {300, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.track[len(tt.track)-1], func(t *testing.T) {
			if diff := cmp.Diff(tt.want, samples(m.path(t, tt.track...))); diff != "" {
				t.Errorf("samples (-want +got):\n%s", diff)
			}
		})
	}
	// The launch summary integrates: the running-warps average over the
	// launch's bins sums to the warps' total lifetime.
	run := m.events[m.path(t, "GPU · Test GPU", "launch 0 · warp_roles", "avg warps running")]
	if len(run) < 2 {
		t.Fatalf("summary has %d samples", len(run))
	}
	var integral float64
	for i := 0; i+1 < len(run); i++ {
		integral += run[i].value * float64(run[i+1].ts-run[i].ts)
	}
	if want := float64(500 + 600 + 500 + 600); integral < want-1e-6 || integral > want+1e-6 {
		t.Errorf("summary integral %v warp-ns, want %v", integral, want)
	}
}

// TestSummaryNearZero: timestamps close to 0, with a later CTA starting
// before the first one, make the summary bins widen to the left past 0; the
// summary samples must still be at times >= 0.
func TestSummaryNearZero(t *testing.T) {
	ws := testWarps()
	shift := func(w *trace.Warp, d int64) {
		w.First, w.Last = w.First+d, w.Last+d
		for i := range w.Ranges {
			w.Ranges[i].Start += d
			w.Ranges[i].End += d
		}
		for i := range w.Marks {
			w.Marks[i].Time += d
		}
		for i := range w.Events {
			w.Events[i] = trace.NewEvent(w.Events[i].Kind(), 0, 0, 0, w.Events[i].Time()+d)
		}
	}
	for i := range ws {
		d := int64(-t0 + 700) // CTA 0 from 700 ns
		if ws[i].CTALinear == 1 {
			d = -t0 - 995 // CTA 1 from 5 ns
		}
		shift(&ws[i], d)
	}
	data := writeLaunch(t, Options{Counters: true, SummaryBins: 4}, testMeta(), ws)
	if err := CheckValid(bytes.NewReader(data)); err != nil {
		t.Fatalf("CheckValid: %v", err)
	}
	m := resolve(t, readPackets(t, data))
	run := m.events[m.path(t, "GPU · Test GPU", "launch 0 · warp_roles", "avg warps running")]
	if len(run) == 0 || run[0].ts > 5 {
		t.Errorf("avg warps running starts at %v, want at most 5 ns", run)
	}
}

func TestIncompleteAndProblems(t *testing.T) {
	meta := testMeta()
	ws := testWarps()[:2]
	// Consumer: an unclosed push; producer: a truncated one, drops and a
	// violation.
	ws[1].Ranges = []trace.Range{rng(nCompute, 3, 300, 500, 0)}
	ws[1].Ranges[0].Flags = trace.RangeUnclosed
	ws[0].Ranges = []trace.Range{rng(nLoad, 0, 20, 200, 0)}
	ws[0].Ranges[0].Flags = trace.RangeTruncated
	ws[0].Dropped, ws[0].Count = 7, 12
	ws[0].Violations = []trace.Violation{{Kind: trace.PopMismatch, Index: 1, Detail: "pop of \"a\" closes \"b\""}}
	data := writeLaunch(t, Options{Counters: true}, meta, ws)
	if err := CheckValid(bytes.NewReader(data)); err != nil {
		t.Fatalf("CheckValid: %v", err)
	}
	m := resolve(t, readPackets(t, data))
	cta := []string{"GPU · Test GPU", "launch 0 · warp_roles", "SM 0", "CTA 0"}
	cons := m.events[m.path(t, append(cta, "warp 1 · consumer")...)]
	var names []string
	for _, e := range cons {
		if e.name != "" {
			names = append(names, e.name)
		}
	}
	if diff := cmp.Diff([]string{"kernel_start", "consumer_compute/3 (unclosed)"}, names); diff != "" {
		t.Errorf("consumer names (-want +got):\n%s", diff)
	}
	if s, _ := cons[1].args["incomplete"].(string); !strings.HasPrefix(s, "unclosed") {
		t.Errorf("unclosed range's incomplete annotation = %q", s)
	}
	prod := compact(m.events[m.path(t, append(cta, "warp 0 · producer (dropped 7)")...)])
	want := []sliceEvent{
		{Ts: 10, Type: "INSTANT", Name: "kernel_start"},
		{Ts: 20, Type: "SLICE_BEGIN", Name: "producer_load (truncated)"},
		{Ts: 200, Type: "SLICE_END"},
		{Ts: 400, Type: "INSTANT", Name: "violation: pop-mismatch"}, // event 1's time
		{Ts: 400, Type: "SLICE_BEGIN", Name: "dropped events"},      // stop mode: after the last event
		{Ts: 500, Type: "SLICE_END"},
	}
	if diff := cmp.Diff(want, prod); diff != "" {
		t.Errorf("producer events (-want +got):\n%s", diff)
	}
	drops := m.events[m.path(t, append(cta, "dropped events")...)]
	if len(drops) != 1 || drops[0].value != 7 {
		t.Errorf("drops counter = %+v, want one sample of 7", drops)
	}
}

func TestOptionsAgree(t *testing.T) {
	// Compression changes the framing only: the packets are the same.
	plain := readPackets(t, writeLaunch(t, Options{Flows: true, Counters: true}, testMeta(), testWarps()))
	for _, opt := range []Options{{Flows: true, Counters: true, Compress: true}} {
		data := writeLaunch(t, opt, testMeta(), testWarps())
		if err := CheckValid(bytes.NewReader(data)); err != nil {
			t.Errorf("%+v: CheckValid: %v", opt, err)
		}
		if diff := cmp.Diff(plain, readPackets(t, data), protocmp.Transform()); diff != "" {
			t.Errorf("%+v: packets differ (-plain +got):\n%s", opt, diff)
		}
	}
}

func TestDeterministic(t *testing.T) {
	a := writeLaunch(t, Options{Flows: true, Counters: true}, testMeta(), testWarps())
	b := writeLaunch(t, Options{Flows: true, Counters: true}, testMeta(), testWarps())
	if !bytes.Equal(a, b) {
		t.Error("two writes of the same launch differ")
	}
}

// TestRobustInput feeds ranges a buggy decoder or a hostile capture could
// produce; the writer must stay valid and never panic.
func TestRobustInput(t *testing.T) {
	deep := make([]trace.Range, 600)
	for i := range deep {
		deep[i] = rng(nInner, 0, int64(i), 2000-int64(i), int32(i))
	}
	manyAsync := make([]trace.Range, 300)
	for i := range manyAsync {
		manyAsync[i] = async(nTMA, uint16(i), int64(i), 5000, 0)
	}
	tests := []struct {
		name    string
		ranges  []trace.Range
		marks   []trace.Mark
		skipped int64
	}{
		{"end before start", []trace.Range{rng(nLoad, 0, 100, 50, 0)}, nil, 0},
		{"child outlives parent", []trace.Range{rng(nLoad, 0, 100, 200, 0), rng(nInner, 0, 150, 300, 1)}, nil, 0},
		{"siblings overlap", []trace.Range{rng(nLoad, 0, 100, 200, 0), rng(nWait, 0, 150, 300, 0)}, nil, 0},
		{"depth beyond parents", []trace.Range{rng(nLoad, 0, 100, 200, 5)}, nil, 0},
		{"unsorted", []trace.Range{rng(nWait, 0, 300, 400, 0), rng(nLoad, 0, 100, 200, 0)}, nil, 0},
		{"async on a busy lane", []trace.Range{async(nTMA, 0, 100, 300, 0), async(nTMA, 1, 150, 250, 0)}, nil, 0},
		{"negative lane", []trace.Range{async(nTMA, 0, 100, 300, -3)}, nil, 0},
		{"marks unsorted and inside", []trace.Range{rng(nLoad, 0, 100, 200, 0)},
			[]trace.Mark{{Name: nKernelStart, Time: t0 + 300}, {Name: nKernelStart, Time: t0 + 150}, {Name: nKernelStart, Time: t0 + 200}}, 0},
		{"unknown and zero names", []trace.Range{rng(0, 0, 100, 200, 0), rng(4000, 0, 300, 400, 0)}, nil, 0},
		{"600 deep", deep, nil, 600 - maxSliceDepth},
		{"300 concurrent async", manyAsync, nil, 300 - maxLanes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := testWarps()[:1]
			ws[0].Ranges, ws[0].Marks = tt.ranges, tt.marks
			var buf bytes.Buffer
			w := NewWriter(&buf, Options{Counters: true, Flows: true})
			meta := testMeta()
			if err := w.BeginLaunch(meta, 0, &meta.Launches[0], LaunchInfo{}); err != nil {
				t.Fatal(err)
			}
			if err := w.AddWarp(&ws[0]); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if err := CheckValid(bytes.NewReader(buf.Bytes())); err != nil {
				t.Errorf("CheckValid: %v", err)
			}
			if got := w.Stats().SkippedRanges; got != tt.skipped {
				t.Errorf("SkippedRanges = %d, want %d", got, tt.skipped)
			}
		})
	}
}

func TestCallOrder(t *testing.T) {
	meta := testMeta()
	l := &meta.Launches[0]
	ws := testWarps()
	tests := []struct {
		name string
		run  func(w *Writer) error
	}{
		{"warp before launch", func(w *Writer) error { return w.AddWarp(&ws[0]) }},
		{"end before begin", func(w *Writer) error { return w.EndLaunch() }},
		{"begin twice", func(w *Writer) error {
			w.BeginLaunch(meta, 0, l, LaunchInfo{})
			return w.BeginLaunch(meta, 1, l, LaunchInfo{})
		}},
		{"launch index reused", func(w *Writer) error {
			w.BeginLaunch(meta, 0, l, LaunchInfo{})
			w.EndLaunch()
			return w.BeginLaunch(meta, 0, l, LaunchInfo{})
		}},
		{"warp of another launch", func(w *Writer) error {
			w.BeginLaunch(meta, 0, l, LaunchInfo{})
			wp := ws[0]
			wp.Launch = 3
			return w.AddWarp(&wp)
		}},
		{"slots out of order", func(w *Writer) error {
			w.BeginLaunch(meta, 0, l, LaunchInfo{})
			w.AddWarp(&ws[1])
			return w.AddWarp(&ws[0])
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run(NewWriter(io.Discard, Options{}))
			if !errors.Is(err, ErrOrder) {
				t.Errorf("error %v, want ErrOrder", err)
			}
		})
	}
	w := NewWriter(io.Discard, Options{})
	w.Close()
	if err := w.BeginLaunch(meta, 0, l, LaunchInfo{}); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) { return 0, fmt.Errorf("disk full after %d", f.n) }

func TestWriteErrorSticks(t *testing.T) {
	meta := testMeta()
	w := NewWriter(&failWriter{}, Options{})
	w.BeginLaunch(meta, 0, &meta.Launches[0], LaunchInfo{})
	err := w.Close()
	if err == nil || !strings.Contains(err.Error(), "write pftrace: disk full") {
		t.Fatalf("Close = %v, want the write error", err)
	}
	if err2 := w.AddWarp(&testWarps()[0]); err2 == nil {
		t.Error("AddWarp after a failed write succeeded")
	}
}

func TestAddWarpAllocs(t *testing.T) {
	meta := testMeta()
	meta.Launches[0].Warps = 1 << 40
	w := NewWriter(io.Discard, Options{Counters: true, Flows: true})
	if err := w.BeginLaunch(meta, 0, &meta.Launches[0], LaunchInfo{}); err != nil {
		t.Fatal(err)
	}
	ws := testWarps()
	slot := uint64(0)
	add := func() {
		for i := range ws {
			wp := ws[i]
			wp.Slot = slot
			wp.CTALinear = slot / 2
			slot++
			if err := w.AddWarp(&wp); err != nil {
				t.Fatal(err)
			}
		}
	}
	add() // warm the buffers
	// Track descriptors are built in scratch buffers and uuids are derived
	// (no set of them), so neither events nor tracks allocate once the
	// buffers are warm: two CTAs of two warps, with counters and flows.
	if got := testing.AllocsPerRun(50, add); got != 0 {
		t.Errorf("AddWarp: %.1f allocations per 2 CTAs, want 0", got)
	}
}

func TestTwoLaunches(t *testing.T) {
	meta := testMeta()
	meta.Launches = append(meta.Launches, meta.Launches[0])
	meta.Launches[1].Kernel = "second"
	var buf bytes.Buffer
	w := NewWriter(&buf, Options{Counters: true, Flows: true})
	for li := range meta.Launches {
		if err := w.BeginLaunch(meta, li, &meta.Launches[li], LaunchInfo{Notes: []string{"note"}}); err != nil {
			t.Fatal(err)
		}
		ws := testWarps()
		for i := range ws {
			ws[i].Launch = li
			if err := w.AddWarp(&ws[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.EndLaunch(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := CheckValid(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatalf("CheckValid: %v", err)
	}
	pkts := readPackets(t, buf.Bytes())
	m := resolve(t, pkts)
	if diff := cmp.Diff([]string{"launch 0 · warp_roles", "launch 1 · second"}, m.childNames(m.path(t, "GPU · Test GPU"))); diff != "" {
		t.Errorf("launches (-want +got):\n%s", diff)
	}
	// Each launch is its own sequence, cleared once, and interns its own names.
	cleared := map[uint32]int{}
	for _, p := range pkts {
		if p.GetSequenceFlags()&seqIncrementalClear != 0 {
			cleared[p.GetTrustedPacketSequenceId()]++
		}
	}
	if diff := cmp.Diff(map[uint32]int{1: 1, 2: 1}, cleared); diff != "" {
		t.Errorf("sequences cleared (-want +got):\n%s", diff)
	}
	st := w.Stats()
	if st.Launches != 2 || st.Warps != 8 || st.Flows != 4 {
		t.Errorf("stats %+v, want 2 launches, 8 warps, 4 flows", st)
	}
	if st.Bytes != int64(buf.Len()) {
		t.Errorf("Stats.Bytes = %d, wrote %d", st.Bytes, buf.Len())
	}
}

// TestModelError: a warp whose model breaks a rule (here an async range at a
// negative time, which the model places after the warp's 40,000 other
// events, over 1 MiB of output) fails the writer with a *ModelError naming
// it, and none of its packets reach the output.
func TestModelError(t *testing.T) {
	meta := testMeta()
	ws := testWarps()
	bad := &ws[3]
	bad.Ranges = nil
	for i := range int64(20000) {
		bad.Ranges = append(bad.Ranges, rng(nLoad, 0, 10*i, 10*i+5, 0))
	}
	bad.Ranges = append(bad.Ranges, trace.Range{Name: nTMA, Start: -50, End: -10, Async: true})
	var buf bytes.Buffer
	// No summary: its counts would refuse the CTA's span first.
	w := NewWriter(&buf, Options{NoSummary: true})
	if err := w.BeginLaunch(meta, 0, &meta.Launches[0], LaunchInfo{}); err != nil {
		t.Fatal(err)
	}
	var err error
	for i := range ws {
		if err = w.AddWarp(&ws[i]); err != nil {
			break
		}
	}
	if err == nil {
		err = w.Close()
	}
	var me *ModelError
	if !errors.As(err, &me) {
		t.Fatalf("error = %v, want a *ModelError", err)
	}
	if me.Slot != bad.Slot || me.Launch != 0 || !strings.Contains(me.Msg, "negative") {
		t.Errorf("ModelError = %+v, want slot %d, launch 0, a negative timestamp", me, bad.Slot)
	}
	if err := w.Close(); !errors.Is(err, me) {
		t.Errorf("Close after the error = %v, want the same error", err)
	}
	if buf.Len() != 0 {
		t.Errorf("%d bytes reached the output, want none (all of the launch is still buffered)", buf.Len())
	}
}

// deinterleave inverts interleave.
func deinterleave(x uint64, na, nb uint) (a, b uint64) {
	k := uint(0)
	for i, j := uint(0), uint(0); i < na || j < nb; {
		for range 2 {
			if i < na {
				a |= (x >> k & 1) << i
				i++
				k++
			}
		}
		if j < nb {
			b |= (x >> k & 1) << j
			j++
			k++
		}
	}
	return a, b
}

func TestInterleave(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	type pair struct{ a, b uint64 }
	ps := []pair{{0, 0}, {1, 0}, {0, 1}, {1<<32 - 1, 1<<16 - 1}, {383, 0}, {1 << 31, 1 << 15}}
	for range 100_000 {
		ps = append(ps, pair{r.Uint64() >> 30, r.Uint64() >> 40})
	}
	for _, n := range [][2]uint{{aSlotBits, aLaunchBits}, {bValueBits, bLaunchBits}} {
		for _, p := range ps {
			p.a &= 1<<n[0] - 1
			p.b &= 1<<n[1] - 1
			x := interleave(p.a, n[0], p.b, n[1])
			if x >= 1<<(n[0]+n[1]) {
				t.Fatalf("interleave(%#x, %#x) = %#x, not below 2^%d", p.a, p.b, x, n[0]+n[1])
			}
			if a, b := deinterleave(x, n[0], n[1]); a != p.a || b != p.b {
				t.Fatalf("deinterleave(interleave(%#x, %#x)) = %#x, %#x", p.a, p.b, a, b)
			}
		}
	}
	// Small slots of the first launch give short varints.
	w := NewWriter(io.Discard, Options{})
	if id := w.slotTrack(383, 0); protowire.SizeVarint(id) > 4 {
		t.Errorf("warp 383's uuid %#x takes %d varint bytes", id, protowire.SizeVarint(id))
	}
}

// TestTrackIDsDistinct derives the uuids of every kind of track for small
// launches, slots, lanes, keys and SMs, at the edges of the code fields and
// past them (hashed), and checks that no two are equal and none is 0.
func TestTrackIDsDistinct(t *testing.T) {
	w := NewWriter(io.Discard, Options{})
	seen := map[uint64]string{}
	add := func(id uint64, what string, a ...any) {
		t.Helper()
		s := fmt.Sprintf(what, a...)
		if id == 0 || id >= 1<<62 {
			t.Fatalf("%s: uuid %#x", s, id)
		}
		if prev, dup := seen[id]; dup {
			t.Fatalf("%s: uuid %#x already used by %s", s, id, prev)
		}
		seen[id] = s
	}
	for _, dev := range []*trace.Device{nil, {UUID: "GPU-1"}, {UUID: "GPU-2"}} {
		add(gpuTrack(gpuKey(dev)), "gpu %v", dev)
	}
	for _, li := range []int{0, 1, 2, 1<<aLaunchBits - 1, 1 << aLaunchBits, 1<<bLaunchBits - 1, 1 << bLaunchBits, 1<<31 - 2} {
		w.li = li
		add(w.launchTrack(bLaunch, 0), "launch %d", li)
		for _, sm := range []uint64{0, 1, 131, math.MaxUint32} {
			add(w.launchTrack(bSM, sm), "launch %d sm %d", li, sm)
		}
		for _, k := range []uint64{0, 1, 1<<16 | 3, keyRunning} {
			add(w.launchTrack(bSummary, k), "launch %d summary %#x", li, k)
		}
		for _, slot := range []uint64{0, 1, 7, 1<<aSlotBits - 1, 1 << aSlotBits, 1<<40 - 1} {
			for sub := range uint64(maxLanes + 1) {
				add(w.slotTrack(slot, sub), "launch %d slot %d sub %d", li, slot, sub)
			}
			for _, sub := range []uint64{subCTA, subDrops, subCounter, subCounter + 1, subCounter + maxPackedKeys - 1} {
				add(w.slotTrack(slot, sub), "launch %d slot %d sub %#x", li, slot, sub)
			}
		}
	}
	if w.err != nil {
		t.Fatal(w.err)
	}
	if len(w.overflow) == 0 {
		t.Error("no uuid went through the hashed path")
	}
}

// TestLargeIndices writes launches whose index or warp slots do not fit the
// uuid code fields (hashed uuids) next to ordinary ones: the trace stays
// valid.
func TestLargeIndices(t *testing.T) {
	meta := testMeta()
	var buf bytes.Buffer
	w := NewWriter(&buf, Options{Counters: true, Flows: true})
	for _, li := range []int{0, 1<<aLaunchBits - 1, 1 << aLaunchBits, 1 << bLaunchBits} {
		l := meta.Launches[0]
		l.Warps = 1 << 40
		if err := w.BeginLaunch(meta, li, &l, LaunchInfo{}); err != nil {
			t.Fatal(err)
		}
		for _, base := range []uint64{0, 1<<aSlotBits - 6, 1<<aSlotBits - 1} { // the last CTA straddles 2^32
			for i, wp := range testWarps() {
				wp.Launch, wp.Slot, wp.CTALinear = li, base+uint64(i), base/2+uint64(i/2)
				if err := w.AddWarp(&wp); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := w.EndLaunch(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := CheckValid(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatalf("CheckValid: %v", err)
	}
}

// TestPayloadVariants: a range's payload is in its name for the first
// maxNameVariants payloads of that name; later ones show the plain name with
// a payload annotation, so that the names a launch interns stay bounded.
func TestPayloadVariants(t *testing.T) {
	ws := testWarps()[:1]
	ws[0].Marks = nil
	ws[0].Ranges = nil
	for i := range int64(maxNameVariants + 3) {
		ws[0].Ranges = append(ws[0].Ranges, rng(nLoad, uint16(i+1), 10+100*i, 60+100*i, 0))
	}
	m := resolve(t, readPackets(t, writeLaunch(t, Options{}, testMeta(), ws)))
	ev := m.events[m.path(t, "GPU · Test GPU", "launch 0 · warp_roles", "SM 0", "CTA 0", "warp 0 · producer")]
	var got []string
	for _, e := range ev {
		if e.typ != pb.TrackEvent_TYPE_SLICE_BEGIN {
			continue
		}
		s := e.name
		if p, ok := e.args["payload"]; ok {
			s += fmt.Sprintf(" payload=%d", p)
		}
		got = append(got, s)
	}
	var want []string
	for i := range maxNameVariants + 3 {
		if i < maxNameVariants {
			want = append(want, fmt.Sprintf("producer_load/%d", i+1))
		} else {
			want = append(want, fmt.Sprintf("producer_load payload=%d", i+1))
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("slice names (-want +got):\n%s", diff)
	}
}

// TestCountersLeftOut: a CTA whose counters cannot be packed (a span over
// 2^52 ns: corrupt times) loses its counter tracks, with a problem on the
// launch track; its warps and the other CTA are written.
func TestCountersLeftOut(t *testing.T) {
	ws := testWarps()
	ws[1].Ranges = append(ws[1].Ranges, rng(nCompute, 1, 1<<53, 1<<53+10, 0))
	ws[1].Last = t0 + 1<<53 + 100
	data := writeLaunch(t, Options{Counters: true}, testMeta(), ws)
	if err := CheckValid(bytes.NewReader(data)); err != nil {
		t.Fatalf("CheckValid: %v", err)
	}
	m := resolve(t, readPackets(t, data))
	var problems []string
	for _, evs := range m.events {
		for _, e := range evs {
			if d, _ := e.args["detail"].(string); e.name == "problem" {
				problems = append(problems, d)
			}
		}
	}
	if len(problems) != 1 || !strings.HasPrefix(problems[0], "CTA 0: its counters and its part of the launch summary left out") {
		t.Errorf("problems %q, want one naming CTA 0's counters", problems)
	}
	var counters, warps []string
	for _, td := range m.tracks {
		switch name := td.GetName(); {
		case strings.HasPrefix(name, "warp "):
			warps = append(warps, name)
		case td.GetCounter() != nil && name == "consumer in consumer_compute": // a CTA's, not the summary's
			counters = append(counters, name)
		}
	}
	if len(warps) != 4 || len(counters) != 1 {
		t.Errorf("warp tracks %q and consumer_compute counters %q: want all 4 warps and CTA 1's counter alone", warps, counters)
	}
}

// TestProblemsCounted: past maxProblems a launch's problems are counted in
// one last instant.
func TestProblemsCounted(t *testing.T) {
	meta := testMeta()
	var buf bytes.Buffer
	w := NewWriter(&buf, Options{})
	if err := w.BeginLaunch(meta, 0, &meta.Launches[0], LaunchInfo{}); err != nil {
		t.Fatal(err)
	}
	for i := range maxProblems + 5 {
		w.AddProblem(fmt.Sprintf("problem %d", i))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	m := resolve(t, readPackets(t, buf.Bytes()))
	var problems []string
	for _, evs := range m.events {
		for _, e := range evs {
			if d, _ := e.args["detail"].(string); e.name == "problem" {
				problems = append(problems, d)
			}
		}
	}
	if len(problems) != maxProblems+1 || problems[maxProblems] != "and 5 more problems" {
		t.Errorf("%d problems, the last %q: want %d, the last counting 5 more", len(problems), problems[len(problems)-1], maxProblems+1)
	}
}
