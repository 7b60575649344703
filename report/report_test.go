package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/iket-trace/iket/trace"
)

var update = flag.Bool("update", false, "rewrite docs/img/report.png from the headless Chromium test")

// render writes in and returns the page.
func render(t *testing.T, in *Input) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, in); err != nil {
		t.Fatalf("Write: %v", err)
	}
	return b.String()
}

var dataRE = regexp.MustCompile(`(?s)<script type="application/json" id="iket-data">(.*?)</script>`)

// extract returns the page's embedded data, parsed.
func extract(t *testing.T, page string) *payload {
	t.Helper()
	m := dataRE.FindAllStringSubmatch(page, -1)
	if len(m) != 1 {
		t.Fatalf("page has %d iket-data elements, want 1", len(m))
	}
	var p payload
	dec := json.NewDecoder(strings.NewReader(m[0][1]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("parse iket-data: %v\n%.300s", err, m[0][1])
	}
	return &p
}

// section returns the text of the page's <section id="id"> with tags
// removed, entities decoded and spaces collapsed.
func section(t *testing.T, page, id string) string {
	t.Helper()
	start := strings.Index(page, `<section id="`+id+`">`)
	if start < 0 {
		t.Fatalf("page has no section %q", id)
	}
	end := strings.Index(page[start:], "</section>")
	if end < 0 {
		t.Fatalf("section %q is not closed", id)
	}
	s := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(page[start:start+end], " ")
	return strings.Join(strings.Fields(html.UnescapeString(s)), " ")
}

func TestWriteSynthetic(t *testing.T) {
	c := synthCapture(t, 4, 4, 64)
	in := synthInput(t, c, Limits{})
	page := render(t, in)
	p := extract(t, page)

	if got, want := len(p.Warps), 16; got != want {
		t.Fatalf("embedded %d warps, want %d", got, want)
	}
	if diff := cmp.Diff([]string{"producer", "consumer"}, p.Roles); diff != "" {
		t.Errorf("roles (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"load", "copy", "compute", "mma", "kernel_start"}, p.Names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	// Producers first (CTA order), then consumers.
	var order []string
	for _, w := range p.Warps {
		order = append(order, p.Roles[w.Role]+":"+itoa(w.CTALinear)+"."+itoa(uint64(w.Warp)))
	}
	wantOrder := []string{"producer:0.0", "producer:1.0", "producer:2.0", "producer:3.0"}
	for cta := range 4 {
		for w := 1; w < 4; w++ {
			wantOrder = append(wantOrder, "consumer:"+itoa(uint64(cta))+"."+itoa(uint64(w)))
		}
	}
	if diff := cmp.Diff(wantOrder, order); diff != "" {
		t.Errorf("row order (-want +got):\n%s", diff)
	}
	if got := p.T0; got != itoa(uint64(synthBaseNs)) {
		t.Errorf("t0 = %s, want the first warp's start %d", got, synthBaseNs)
	}
	// The last finished warp is CTA 3's warp 2 (warp 3 never finished).
	if want := int64(3*250 + 2*8 + 1000 + synthStages*synthStageNs); p.End != want {
		t.Errorf("end = %d, want the last finished warp's end %d", p.End, want)
	}

	// The producer of CTA 0: loads on depth 0, copies on two lanes.
	prod := p.Warps[0]
	wantR := []int64{}
	for s := range int64(synthStages) {
		t0 := 100 + s*synthStageNs
		wantR = append(wantR, 0, s, t0, t0+600, 0, -1, 0) // load
		copyEnd := t0 + synthStageNs + 400
		if s == synthStages-1 {
			copyEnd = 100 + synthStages*synthStageNs
		}
		wantR = append(wantR, 1, s, t0+200, copyEnd, 0, s%2, 0) // copy
	}
	if diff := cmp.Diff(wantR, prod.R); diff != "" {
		t.Errorf("producer 0 ranges (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int64{4, 0, 10}, prod.M); diff != "" {
		t.Errorf("producer 0 marks (-want +got):\n%s", diff)
	}
	if prod.Depth != 1 || prod.Lanes != 2 {
		t.Errorf("producer 0: depth %d lanes %d, want 1 and 2", prod.Depth, prod.Lanes)
	}

	// CTA 1's last consumer left its last compute open: flagged unclosed.
	var unclosed, unfinished int
	for _, w := range p.Warps {
		for i := 0; i < len(w.R); i += rangeFields {
			if trace.RangeFlags(w.R[i+6])&trace.RangeUnclosed != 0 {
				unclosed++
				if w.CTALinear != 1 || w.Warp != 3 || p.Names[w.R[i]] != "compute" {
					t.Errorf("unclosed %s on cta %d warp %d, want compute on cta 1 warp 3", p.Names[w.R[i]], w.CTALinear, w.Warp)
				}
			}
		}
		if w.Started && !w.Finished {
			unfinished++
			if w.CTALinear != 3 || w.Warp != 3 {
				t.Errorf("unfinished warp cta %d warp %d, want cta 3 warp 3", w.CTALinear, w.Warp)
			}
		}
	}
	if unclosed == 0 || unfinished != 1 {
		t.Errorf("%d unclosed ranges and %d unfinished warps, want some and 1", unclosed, unfinished)
	}

	// The activity strip counts the whole launch: its integral per name is
	// the ranges' total time.
	if p.Activity == nil {
		t.Fatal("no activity strip")
	}
	wantTotal := map[string]float64{}
	for _, w := range p.Warps {
		for i := 0; i < len(w.R); i += rangeFields {
			wantTotal[p.Names[w.R[i]]] += float64(w.R[i+3] - w.R[i+2])
		}
	}
	gotTotal := map[string]float64{}
	for s, n := range p.Activity.Names {
		for _, v := range p.Activity.Series[s] {
			gotTotal[p.Names[n]] += v * float64(p.Activity.Width)
		}
	}
	if diff := cmp.Diff(wantTotal, gotTotal, cmpApprox(0.001*float64(p.Activity.Width)*ActivityBins)); diff != "" {
		t.Errorf("activity integral per name (-want +got):\n%s", diff)
	}

	if c := p.Capped; c.OmittedWarps != 0 || c.Clipped || c.EmbeddedWarps != 16 {
		t.Errorf("capped = %+v, want nothing omitted", c)
	}
	if strings.Contains(page, `id="capped"`) {
		t.Error("page shows a capped notice for a launch that fits")
	}
}

func itoa(v uint64) string { return string(appendUint(nil, v)) }

func appendUint(b []byte, v uint64) []byte {
	if v >= 10 {
		b = appendUint(b, v/10)
	}
	return append(b, byte('0'+v%10))
}

func cmpApprox(tol float64) cmp.Option {
	return cmp.Comparer(func(a, b float64) bool { d := a - b; return d <= tol && d >= -tol })
}

func TestWriteTables(t *testing.T) {
	c := synthCapture(t, 4, 4, 64)
	page := render(t, synthInput(t, c, Limits{}))
	tests := []struct {
		section string
		want    []string
	}{
		{"stats", []string{
			"role range count mean p50 p90 p99 max share",
			"producer load 24 600 ns 600 ns 600 ns 600 ns 600 ns 51.4%",
			"consumer compute 72 (1 incomplete) 795.8 ns 800 ns 800 ns 800 ns 800 ns 68.6%",
			"Pipeline", "producer:load consumer:compute 72 0 0 56 ns 84 ns 84 ns 84 ns",
			"producer:load 0.0% 0.0% 67.2% 25.6%", "consumer:compute 47.2% 90.7% 93.4% 53.3%",
		}},
		{"drops", []string{"warps 16", "started / finished 16 / 15", "dropped 0", "unclosed"}},
		{"latency", []string{
			"uninstrumented 10.5 µs 10.25 µs 11 µs 3",
			"instrumented 10.88 µs 10.5 µs 11.5 µs 3",
			"median: 1.036×", "L2 flush yes (256 MiB)", "timing boundary cuda events",
			"1 10.25 µs 10.5 µs", "2 10.5 µs 10.88 µs", "3 11 µs 11.5 µs",
		}},
		{"conditions", []string{"GPU NVIDIA H200", "UUID GPU-0123", "driver 580.159.04", "CUDA 13.0",
			"SM clock 1980 MHz 1755 MHz", "temperature 31 °C 44 °C", "power 118.5 W 402.2 W",
			"throttle reasons none sw_power_cap"}},
		{"clocks", []string{"SM MHz anchors residual rms residual max note", "0 1500.0"}},
	}
	for _, tt := range tests {
		t.Run(tt.section, func(t *testing.T) {
			text := section(t, page, tt.section)
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("section %s lacks %q; it reads:\n%s", tt.section, w, text)
				}
			}
		})
	}
}

func TestWriteSelfContained(t *testing.T) {
	c := synthCapture(t, 4, 4, 64)
	page := render(t, synthInput(t, c, Limits{}))
	for _, bad := range []string{"http://", "https://", "//cdn", " src=", " href=", "@import", "url(", "fetch(", "XMLHttpRequest"} {
		if i := strings.Index(page, bad); i >= 0 {
			t.Errorf("page references %q at %d: %q", bad, i, page[max(0, i-40):min(len(page), i+40)])
		}
	}
	// The browser enforces it: the policy forbids every fetch.
	if !strings.Contains(page, `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">`) {
		t.Error("page lacks its content security policy")
	}
	if n := strings.Count(page, "<script"); n != 2 {
		t.Errorf("page has %d script elements, want 2 (data and code)", n)
	}
}

func TestWriteEscapes(t *testing.T) {
	evil := `</script><script>alert("x")</script><b>&amp;`
	in := &Input{
		Title: evil,
		Warps: []WarpView{{Slot: 0, Role: evil, Started: true, Finished: true, First: 100, Last: 900, Count: 2,
			Ranges: []RangeView{{Name: evil, Start: 200, End: 300}},
			Marks:  []MarkView{{Name: "m\u2028x", Time: 250}}}},
		Analysis: evilAnalysis(evil),
		Problems: []string{evil},
	}
	page := render(t, in)
	if strings.Contains(page, "<script>alert") || strings.Contains(page, "<b>&amp;") {
		t.Fatalf("page contains the raw input:\n%s", page)
	}
	if n := strings.Count(page, "</script>"); n != 2 {
		t.Errorf("page closes %d script elements, want 2", n)
	}
	p := extract(t, page)
	if diff := cmp.Diff([]string{evil, "m\u2028x"}, p.Names); diff != "" {
		t.Errorf("names round trip (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{evil}, p.Roles); diff != "" {
		t.Errorf("roles round trip (-want +got):\n%s", diff)
	}
	if p.Title != evil {
		t.Errorf("title round trip = %q, want %q", p.Title, evil)
	}
	if !strings.Contains(section(t, page, "stats"), evil) {
		t.Errorf("stats table does not show the role as text")
	}
}

// evilAnalysis is the analysis of one warp of role evil running a range
// evil.
func evilAnalysis(evil string) *trace.Analysis {
	meta := &trace.LaunchMeta{Kernel: "k", Warps: 1, WarpsPerCTA: 1, Names: []trace.Name{
		{ID: 1, Kind: trace.NameRole, Text: evil}, {ID: 2, Kind: trace.NameRange, Text: evil}}}
	a := trace.NewAnalyzer(meta)
	a.Add(&trace.Warp{Started: true, Finished: true, Role: 1, First: 100, Last: 900,
		Ranges: []trace.Range{{Name: 2, Start: 200, End: 300}}})
	return &trace.Analysis{Meta: meta, Analyzer: a, Summary: trace.Summary{Warps: 1, Started: 1, Finished: 1}}
}

func TestWriteErrors(t *testing.T) {
	meta := synthMeta(1, 1, 8)
	writeErr := errors.New("disk full")
	tests := []struct {
		name   string
		in     *Input
		w      func() *failWriter
		target error
		msg    string
	}{
		{"nil input", nil, nil, ErrInput, "nil input"},
		{"launch out of range", &Input{Meta: meta, Launch: 1}, nil, ErrInput, "launch 1: the capture has 1 launches"},
		{"negative launch", &Input{Meta: meta, Launch: -1}, nil, ErrInput, "launch -1"},
		{"launch without meta", &Input{Launch: 2}, nil, ErrInput, "launch 2 without metadata"},
		{"failing writer", &Input{Meta: meta}, func() *failWriter { return &failWriter{after: 100, err: writeErr} }, writeErr, "disk full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w interface{ Write([]byte) (int, error) } = &bytes.Buffer{}
			if tt.w != nil {
				w = tt.w()
			}
			err := Write(w, tt.in)
			if err == nil {
				t.Fatal("Write succeeded, want an error")
			}
			if !errors.Is(err, tt.target) {
				t.Errorf("error %v is not %v", err, tt.target)
			}
			if !strings.Contains(err.Error(), tt.msg) || !strings.HasPrefix(err.Error(), "write report: ") {
				t.Errorf("error %q, want \"write report: ...%s...\"", err, tt.msg)
			}
		})
	}
}

// failWriter fails once more than after bytes were written.
type failWriter struct {
	after, n int
	err      error
}

func (f *failWriter) Write(b []byte) (int, error) {
	if f.n+len(b) > f.after {
		return 0, f.err
	}
	f.n += len(b)
	return len(b), nil
}

func TestWriteEmpty(t *testing.T) {
	tests := []struct {
		name string
		in   *Input
	}{
		{"nothing", &Input{}},
		{"meta only", &Input{Meta: &trace.Meta{Launches: []trace.LaunchMeta{{Kernel: "k"}}}}},
		{"unstarted warps", &Input{Warps: []WarpView{{Slot: 3}, {Slot: 4}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := render(t, tt.in)
			p := extract(t, page)
			if p.End != 0 || p.T0 != "0" {
				t.Errorf("empty domain: t0 %s end %d, want 0 0", p.T0, p.End)
			}
			if len(p.Warps) != len(tt.in.Warps) {
				t.Errorf("%d warps embedded, want %d", len(p.Warps), len(tt.in.Warps))
			}
			for _, s := range []string{"stats", "latency", "conditions", "clocks"} {
				if text := section(t, page, s); !strings.Contains(text, "No ") && !strings.Contains(text, "no ") {
					t.Errorf("section %s does not say it is empty: %s", s, text)
				}
			}
		})
	}
}

// TestWriteResources: an application launch's page states what the kernel
// takes of an SM (the traced build's, and the baseline's when the latency
// has it).
func TestWriteResources(t *testing.T) {
	lm := trace.LaunchMeta{Kernel: "k", Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{32, 1, 1}, WarpsPerCTA: 1, Warps: 1, Capacity: 4, Mode: trace.ModeStop,
		Resources: &trace.Resources{Registers: 62, StaticSharedBytes: 17416, LocalBytes: 0, MaxActiveCTAsPerSM: 4},
		Latency: &trace.Latency{Uninstrumented: trace.Samples{MedianUS: 1, RoundsUS: []float64{1}}, Instrumented: trace.Samples{MedianUS: 1.1, RoundsUS: []float64{1.1}}, Ratio: 1.1,
			UninstrumentedResources: &trace.Resources{Registers: 60, StaticSharedBytes: 17416, MaxActiveCTAsPerSM: 4}}}
	page := render(t, &Input{Meta: &trace.Meta{Launches: []trace.LaunchMeta{lm}}})
	for _, want := range []string{"62 registers per thread", "17416", "60 registers per thread"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Where the records went: said when the capture says, not guessed for
	// older ones.
	for _, tc := range []struct {
		bytes *uint64
		want  string // "" for no fact at all
	}{
		{nil, ""},
		{new(uint64), "written through the L2 with the kernel&#39;s data"},
		{func() *uint64 { v := uint64(11796480); return &v }(), "kept in the L2 (a persisting window over the buffers, 11.2 MiB set aside)"},
	} {
		lm.RecordsL2Bytes = tc.bytes
		page := render(t, &Input{Meta: &trace.Meta{Launches: []trace.LaunchMeta{lm}}})
		if has := strings.Contains(page, "through the L2") || strings.Contains(page, "kept in the L2"); tc.want == "" && has {
			t.Errorf("records %v: the page says where the records went", tc.bytes)
		} else if tc.want != "" && !strings.Contains(page, tc.want) {
			t.Errorf("records %d: page lacks %q", *tc.bytes, tc.want)
		}
	}
}
