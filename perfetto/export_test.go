package perfetto

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/iket-trace/iket/internal/raw"
	"github.com/iket-trace/iket/trace"
)

// rec is one event of a synthetic warp: kind, name, payload and the cycle
// offset from the warp's start.
type rec struct {
	k       trace.Kind
	name    uint16
	payload uint16
	at      uint32
}

// buildCapture writes a capture of one stop-mode launch, 2 CTAs of 2 warps:
// warp 0 produces, warp 1 consumes; the last warp overflows its buffer and
// leaves a push open.
func buildCapture(t testing.TB) *trace.Capture {
	t.Helper()
	return buildCaptureWith(t, nil)
}

// buildCaptureWith lets edit change a warp's header before it is written.
func buildCaptureWith(t testing.TB, edit func(slot int, h *raw.WarpHeader)) *trace.Capture {
	t.Helper()
	return buildCaptureMeta(t, testMeta(), edit)
}

// buildCaptureMeta is buildCaptureWith with the caller's metadata (the
// names of testMeta's ids).
func buildCaptureMeta(t testing.TB, meta *trace.Meta, edit func(slot int, h *raw.WarpHeader)) *trace.Capture {
	t.Helper()
	l := &meta.Launches[0]
	l.Capacity = 8
	prod := []rec{{trace.KindRole, nProducer, 0, 1}, {trace.KindMark, nKernelStart, 0, 2}, {trace.KindPush, nLoad, 0, 10},
		{trace.KindPop, nLoad, 0, 200}, {trace.KindPush, nWait, 0, 201}, {trace.KindPop, 0, 0, 300}}
	cons := []rec{{trace.KindRole, nConsumer, 0, 1}, {trace.KindPush, nWait, 0, 5}, {trace.KindPop, 0, 0, 300},
		{trace.KindPush, nCompute, 0, 310}, {trace.KindStart, nTMA, 1, 320}, {trace.KindEnd, nTMA, 1, 400}, {trace.KindPop, nCompute, 0, 500}}
	overflow := append(append([]rec(nil), cons[:4]...), rec{trace.KindMark, nKernelStart, 1, 600}, rec{trace.KindMark, nKernelStart, 2, 601},
		rec{trace.KindMark, nKernelStart, 3, 602}, rec{trace.KindMark, nKernelStart, 4, 603}, rec{trace.KindMark, nKernelStart, 5, 604},
		rec{trace.KindMark, nKernelStart, 6, 605})
	warps := [][]rec{prod, cons, prod, overflow}
	buf := make([]byte, l.Size())
	for s, evs := range warps {
		b := buf[int64(s)*l.Stride():]
		startClk := uint64(1_000_000 + s*3) // 1 cycle per ns on every SM
		h := raw.WarpHeader{Magic: raw.WarpMagic, SM: uint32(s / 2), CTA: [3]uint32{uint32(s / 2), 0, 0}, Warp: uint32(s % 2),
			StartGlobaltimer: t0 + uint64(s)*3, StartClock: startClk, EndGlobaltimer: t0 + uint64(s)*3 + 1000, EndClock: startClk + 1000,
			Count: uint32(len(evs)), Flags: raw.FlagStarted | raw.FlagFinished}
		if edit != nil {
			edit(s, &h)
		}
		raw.EncodeWarpHeader(b, &h)
		for i, e := range evs {
			if i >= int(l.Capacity) {
				break
			}
			binary.LittleEndian.PutUint64(b[raw.WarpHeaderSize+8*i:], uint64(raw.MakeRecord(uint8(e.k), e.name, e.payload, uint32(startClk)+e.at)))
		}
	}
	path := filepath.Join(t.TempDir(), "c.iket")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := trace.WriteCapture(f, meta, []io.Reader{bytes.NewReader(buf)}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := trace.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestExportCapture(t *testing.T) {
	c := buildCapture(t)
	for _, opt := range []Options{{}, {Flows: true, Counters: true}, {Flows: true, Counters: true, Compress: true}} {
		var buf bytes.Buffer
		if err := ExportCapture(&buf, c, opt); err != nil {
			t.Fatalf("%+v: ExportCapture: %v", opt, err)
		}
		if err := CheckValid(bytes.NewReader(buf.Bytes())); err != nil {
			t.Errorf("%+v: CheckValid: %v", opt, err)
		}
		m := resolve(t, readPackets(t, buf.Bytes()))
		cta1 := []string{"GPU · Test GPU", "launch 0 · warp_roles", "SM 1", "CTA 1"}
		last := m.events[m.path(t, append(cta1, "warp 1 · consumer (dropped 2)")...)]
		var names []string
		for _, e := range last {
			if e.name != "" {
				names = append(names, e.name)
			}
		}
		want := []string{"wait_for_data", "consumer_compute (unclosed)", "violation: unclosed", "kernel_start", "kernel_start", "kernel_start", "kernel_start", "dropped events"}
		if diff := cmp.Diff(want, names); diff != "" {
			t.Errorf("%+v: overflowing warp's events (-want +got):\n%s", opt, diff)
		}
		if opt.Flows {
			flows := 0
			for _, evs := range m.events {
				for _, e := range evs {
					flows += len(e.flows)
				}
			}
			if flows != 2 { // one per CTA: producer_load -> consumer_compute
				t.Errorf("%+v: %d flows, want 2", opt, flows)
			}
		}
	}
}

type jsonEvent struct {
	Ph   string         `json:"ph"`
	Pid  int            `json:"pid"`
	Tid  uint64         `json:"tid"`
	Ts   float64        `json:"ts"`
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

func TestWriteJSON(t *testing.T) {
	c := buildCapture(t)
	var buf bytes.Buffer
	if err := WriteJSON(&buf, c); err != nil {
		t.Fatalf("WriteJSON: %v", err)
	}
	var doc struct {
		TraceEvents []jsonEvent    `json:"traceEvents"`
		OtherData   map[string]any `json:"otherData"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("parse JSON: %v\n%s", err, buf.String())
	}
	if doc.OtherData["iket_time_origin_ns"] != float64(t0-1000) {
		t.Errorf("origin = %v, want %d", doc.OtherData["iket_time_origin_ns"], t0-1000)
	}
	// Per thread, after a stable sort by ts: B/E nest, and never overlap.
	type key struct {
		pid int
		tid uint64
	}
	per := map[key][]jsonEvent{}
	threads := map[key]string{}
	for _, e := range doc.TraceEvents {
		switch e.Ph {
		case "B", "E":
			per[key{e.Pid, e.Tid}] = append(per[key{e.Pid, e.Tid}], e)
		case "M":
			if e.Name == "thread_name" {
				threads[key{e.Pid, e.Tid}] = e.Args["name"].(string)
			}
		}
	}
	if len(per) == 0 {
		t.Fatal("no slices")
	}
	for k, evs := range per {
		sort.SliceStable(evs, func(i, j int) bool { return evs[i].Ts < evs[j].Ts })
		var stack []float64
		for _, e := range evs {
			if e.Ph == "B" {
				stack = append(stack, e.Ts)
				continue
			}
			if len(stack) == 0 {
				t.Errorf("thread %q: E at %v with nothing open", threads[k], e.Ts)
				continue
			}
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 {
			t.Errorf("thread %q: %d slices never end", threads[k], len(stack))
		}
		if threads[k] == "" {
			t.Errorf("thread %v has slices but no name", k)
		}
	}
	// The consumer's compute range on warp slot 1: 310 cycles after its
	// start, on a clock of 1 cycle/ns, 3 ns later than slot 0.
	found := false
	for _, e := range per[key{1, tid(1, -1)}] {
		if e.Ph == "B" && e.Name == "consumer_compute" {
			found = true
			if want := 1.0 + 0.003 + 0.310; e.Ts < want-0.0005 || e.Ts > want+0.0005 {
				t.Errorf("consumer_compute at %v us, want about %v", e.Ts, want)
			}
		}
	}
	if !found {
		t.Errorf("no consumer_compute slice on slot 1; threads %v", threads)
	}
	if !strings.Contains(buf.String(), `"consumer_compute (unclosed)"`) {
		t.Error("the unclosed range is not labelled")
	}
}

// TestWriteJSONEscapes writes names with control characters, quotes,
// backslashes, non-ASCII and invalid UTF-8 (kernel, role, range and mark
// names) and parses the output with encoding/json: every name comes back
// as written (invalid UTF-8 as U+FFFD).
func TestWriteJSONEscapes(t *testing.T) {
	odd := map[uint16]string{
		nProducer:    "pro\x00du\x01cer\x1f",
		nConsumer:    `con"sumer\`,
		nKernelStart: "start\a\b\f\v\x7f\n\r\t",
		nLoad:        "lädt · 読み込み 🚀",
		nWait:        "wait\u2028\u2029",
		nCompute:     "bad\xff\xfeutf8",
	}
	meta := testMeta()
	meta.Launches[0].Kernel = "kern\x02el \"q\" \\"
	for i, n := range meta.Launches[0].Names {
		if s, ok := odd[n.ID]; ok {
			meta.Launches[0].Names[i].Text = s
		}
	}
	c := buildCaptureMeta(t, meta, nil)
	var buf bytes.Buffer
	if err := WriteJSON(&buf, c); err != nil {
		t.Fatalf("WriteJSON: %v", err)
	}
	var doc struct {
		TraceEvents []jsonEvent `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("parse JSON: %v\n%s", err, buf.String())
	}
	seen := map[string]bool{}
	for _, e := range doc.TraceEvents {
		seen[e.Name] = true
		if s, ok := e.Args["name"].(string); ok {
			seen[s] = true
		}
	}
	want := []string{"launch 0 · " + meta.Launches[0].Kernel, odd[nKernelStart], odd[nLoad], odd[nWait],
		"bad\ufffd\ufffdutf8", "sm 0 · cta 0,0,0 · warp 0 · " + odd[nProducer], "sm 0 · cta 0,0,0 · warp 1 · " + odd[nConsumer]}
	for _, w := range want {
		if !seen[w] {
			t.Errorf("name %q not in the parsed JSON", w)
		}
	}
	if t.Failed() {
		var names []string
		for n := range seen {
			names = append(names, n)
		}
		slices.Sort(names)
		t.Logf("names: %q", names)
	}
}

func TestExportCorruptWarp(t *testing.T) {
	c := buildCaptureWith(t, func(slot int, h *raw.WarpHeader) {
		if slot == 2 {
			h.EndClock = h.StartClock - 1 // anchors out of order: a WarpError
		}
	})
	var buf bytes.Buffer
	if err := ExportCapture(&buf, c, Options{Counters: true, Flows: true}); err != nil {
		t.Fatalf("ExportCapture: %v", err)
	}
	if err := CheckValid(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatalf("CheckValid: %v", err)
	}
	m := resolve(t, readPackets(t, buf.Bytes()))
	launch := m.path(t, "GPU · Test GPU", "launch 0 · warp_roles")
	var problems []string
	for _, e := range m.events[launch] {
		if e.name == "problem" {
			problems = append(problems, e.args["detail"].(string))
		}
	}
	if len(problems) != 1 || !strings.Contains(problems[0], "warp 2") || !strings.Contains(problems[0], "end clock") {
		t.Errorf("problems = %q, want one about warp 2's end clock", problems)
	}
	// The CTA keeps its other warp.
	if got := m.childNames(m.path(t, "GPU · Test GPU", "launch 0 · warp_roles", "SM 1", "CTA 1")); !slices.Contains(got, "warp 1 · consumer (dropped 2)") {
		t.Errorf("CTA 1 children %q lack the consumer warp", got)
	}
}
