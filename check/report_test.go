package check

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/iket-trace/iket/trace"
)

func sampleResults(t *testing.T) []Result {
	t.Helper()
	meta := testMeta(t)
	in := &trace.Analysis{Meta: meta, Analyzer: analyzer(t, meta, pipeline()...)}
	rules := []Rule{
		mustRule(t, "overlap(producer_load, consumer_compute) >= 0.7"),
		mustRule(t, "p99(consumer_compute) <= 10ns"),
		mustRule(t, "latency_ratio <= 1.05"),
	}
	rules[0].Name = "pipeline <overlaps> & \"flows\""
	return Evaluate(rules, in, nil)
}

func TestWriteJUnit(t *testing.T) {
	rs := sampleResults(t)
	var b bytes.Buffer
	if err := WriteJUnit(&b, "iket check out/trace.iket", rs); err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("parse junit: %v\n%s", err, b.String())
	}
	type tc struct {
		Name, Class, FailType, FailMsg string
		Failed                         bool
	}
	var got []tc
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			x := tc{Name: c.Name, Class: c.Classname}
			if c.Failure != nil {
				x.Failed, x.FailType, x.FailMsg = true, c.Failure.Type, c.Failure.Message
				if !strings.Contains(c.Failure.Body, "value ") || !strings.Contains(c.Failure.Body, c.Name) && !strings.Contains(c.Failure.Body, "p99") {
					t.Errorf("failure body %q lacks the rule and value", c.Failure.Body)
				}
			}
			got = append(got, x)
		}
	}
	want := []tc{
		{Name: `pipeline <overlaps> & "flows"`, Class: "iket.check.overlap"},
		{Name: "p99(consumer_compute) <= 10ns", Class: "iket.check.duration", Failed: true, FailType: "duration",
			FailMsg: "p99 of 3 consumer_compute ranges is 20ns"},
		{Name: "latency_ratio <= 1.05", Class: "iket.check.latency_ratio", Failed: true, FailType: "latency_ratio",
			FailMsg: ErrNoLatency.Error()},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("junit cases (-want +got):\n%s", diff)
	}
	if doc.Name != "iket check out/trace.iket" || doc.Tests != 3 || doc.Failures != 2 || len(doc.Suites) != 1 ||
		doc.Suites[0].Tests != 3 || doc.Suites[0].Failures != 2 {
		t.Errorf("junit counts: %+v", doc)
	}
}

func TestWriteJSON(t *testing.T) {
	rs := sampleResults(t)
	var b bytes.Buffer
	if err := WriteJSON(&b, rs); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Pass    bool `json:"pass"`
		Passed  int  `json:"passed"`
		Failed  int  `json:"failed"`
		Results []struct {
			Rule struct {
				Expr string `json:"expr"`
				Name string `json:"name"`
			} `json:"rule"`
			Pass  bool    `json:"pass"`
			Value float64 `json:"value"`
			Bound float64 `json:"bound"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("parse json: %v\n%s", err, b.String())
	}
	if got.Pass || got.Passed != 1 || got.Failed != 2 || len(got.Results) != 3 {
		t.Fatalf("json summary: %+v", got)
	}
	r := got.Results[1]
	if r.Rule.Expr != "p99(consumer_compute) <= 10ns" || r.Pass || r.Value != 20 || r.Bound != 10 {
		t.Errorf("json result 1: %+v", r)
	}
	b.Reset()
	if err := WriteJSON(&b, nil); err != nil || !strings.Contains(b.String(), `"results": []`) {
		t.Errorf("WriteJSON(nil) = %q, %v", b.String(), err)
	}
}

func TestWriteTable(t *testing.T) {
	rs := sampleResults(t)
	var b bytes.Buffer
	if err := WriteTable(&b, rs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	wantPrefix := []string{"STATUS", "PASS", "FAIL", "", "FAIL", "1 of 3 rules passed"}
	if len(lines) != len(wantPrefix) {
		t.Fatalf("table has %d lines, want %d:\n%s", len(lines), len(wantPrefix), b.String())
	}
	for i, p := range wantPrefix {
		if !strings.HasPrefix(lines[i], p) {
			t.Errorf("line %d = %q, want prefix %q", i, lines[i], p)
		}
	}
	for _, want := range []string{"pipeline <overlaps>", "0.7333", "20ns", "worst: longest 20ns on warp 1 (sm 0, cta 0,0,0, warp 1)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return len(p), nil
}

func TestWriteErrors(t *testing.T) {
	rs := sampleResults(t)
	for name, write := range map[string]func(w *failWriter) error{
		"table": func(w *failWriter) error { return WriteTable(w, rs) },
		"json":  func(w *failWriter) error { return WriteJSON(w, rs) },
		"junit": func(w *failWriter) error { return WriteJUnit(w, "s", rs) },
	} {
		if err := write(&failWriter{}); err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("%s to a failing writer: %v, want the write error", name, err)
		}
	}
}
