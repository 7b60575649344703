package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/trace"
)

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// snakeKeys reports every object key in v (decoded JSON) that is not
// snake_case, with its path.
func snakeKeys(t *testing.T, path string, v any) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if !snakeCase.MatchString(k) {
				t.Errorf("%s: key %q is not snake_case", path, k)
			}
			snakeKeys(t, path+"."+k, e)
		}
	case []any:
		for i, e := range x {
			snakeKeys(t, fmt.Sprintf("%s[%d]", path, i), e)
		}
	}
}

// TestJSONSnakeCase runs every command that has --json and checks that
// every key of its output is snake_case (docs/JSON.md).
func TestJSONSnakeCase(t *testing.T) {
	capPath := bundledCapture(t)
	l := &emu.Launch{Kernel: "k", Block: [3]uint32{32, 1, 1}, Capacity: 64, Names: emu.MustNames("RANGE a")}
	l.Warp([3]uint32{}, 0).Push("a", 0, 1e9).Pop(1e9 + 10).Pop(1e9 + 20) // a pop with nothing open: a violation
	b, err := l.Capture()
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.iket")
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	runs := map[string][][]string{
		"stats":     {{"stats", "--json", capPath}, {"stats", "--json", bad}},
		"validate":  {{"validate", "--json", capPath}, {"validate", "--json", bad}},
		"check":     {{"check", "--json", capPath, "--expect", "strict", "--expect", "p99(lag(producer_load, consumer_compute)) <= 1ms", "--baseline", capPath, "--expect", "p50(consumer_compute) <= 1.1 * baseline"}},
		"diff":      {{"diff", "--json", capPath, bad}},
		"calibrate": {{"calibrate", "--json", calibrationCapture(t, 4, 3, -1, 0)}},
	}
	for cmd, list := range runs {
		for _, args := range list {
			_, out, errs := runCLI(t, args...)
			var v any
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Errorf("%s: output is not JSON: %v\n%s%s", strings.Join(args, " "), err, out, errs)
				continue
			}
			snakeKeys(t, cmd, v)
		}
	}
	// devices needs a GPU: check the type it prints.
	dev, err := json.Marshal([]trace.Device{{Name: "x", UUID: "u", Driver: "d", CUDA: "c", ComputeCap: "9.0", SMs: 1, MaxSMClockMHz: 1,
		Before: &trace.Conditions{SMClockMHz: 1, ThrottleReasons: []string{"x"}, PowerLimitW: 1}, After: &trace.Conditions{}}})
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(dev, &v); err != nil {
		t.Fatal(err)
	}
	snakeKeys(t, "devices", v)
	runs["devices"] = nil
	// Every command with --json is covered above.
	for _, c := range newRootCmd(nil, nil).Commands() {
		if c.Flags().Lookup("json") == nil {
			continue
		}
		if _, ok := runs[c.Name()]; !ok {
			t.Errorf("%s has --json and is not checked here", c.Name())
		}
	}
}

// TestJSONViolationKeys checks that the summary's violation counts are
// keyed by kind name, and read back.
func TestJSONViolationKeys(t *testing.T) {
	s := trace.Summary{Violations: map[trace.ViolationKind]int{trace.PopEmpty: 2, trace.WrongNameKind: 1}}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Violations map[string]int `json:"violations"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(m.Violations))
	for k := range m.Violations {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"pop_empty", "wrong_name_kind"}; !slices.Equal(keys, want) {
		t.Errorf("violation keys %v, want %v", keys, want)
	}
	var back trace.Summary
	if err := json.Unmarshal(b, &back); err != nil || back.Violations[trace.PopEmpty] != 2 || back.Violations[trace.WrongNameKind] != 1 {
		t.Errorf("read back %+v, %v", back, err)
	}
}
