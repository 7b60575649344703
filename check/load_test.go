package check

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestLoadRules(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "checks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	got, err := LoadRules(f, "checks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type short struct{ Expr, Name, Description, Where string }
	var gs []short
	for _, r := range got {
		gs = append(gs, short{r.Expr, r.Name, r.Description, r.Where})
	}
	want := []short{
		{"strict", "", "", "checks.yaml:3"},
		{"overlap(producer_load, consumer_compute) >= 0.6", "pipeline overlaps", "The producer's loads hide under the consumers' compute.\n", "checks.yaml:5"},
		{"p99(consumer_compute, role=consumer) <= 2us", "", "", "checks.yaml:10"},
	}
	if diff := cmp.Diff(want, gs); diff != "" {
		t.Errorf("LoadRules (-want +got):\n%s", diff)
	}
	if got[2].Kind != KindDuration || got[2].Bound != 2000 || got[2].Role != "consumer" {
		t.Errorf("rule 3 parsed as %+v", got[2])
	}
}

func TestLoadRulesErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"empty", "", "r.yaml: empty rules file: want a mapping with a rules list"},
		{"not-yaml", "rules: [", "r.yaml: parse yaml: yaml: line 1: did not find expected node content"},
		{"list-root", "- strict\n", "r.yaml:1: expected a mapping with a rules list"},
		{"unknown-top", "rule:\n  - expect: strict\n", `r.yaml:1: unknown key "rule": want rules`},
		{"no-rules-key", "{}\n", "r.yaml:1: no rules key"},
		{"rules-not-list", "rules: strict\n", "r.yaml:1: rules must be a list"},
		{"empty-list", "rules: []\n", "r.yaml:1: rules list is empty"},
		{"item-not-map", "rules:\n  - strict\n", "r.yaml:2: rule 1: expected a mapping with expect, name, description"},
		{"unknown-key", "rules:\n  - expect: strict\n  - expext: no_drops\n", `r.yaml:3: rule 2: unknown key "expext": want expect, name or description`},
		{"missing-expect", "rules:\n  - name: x\n", "r.yaml:2: rule 1: missing expect"},
		{"expect-list", "rules:\n  - expect: [a]\n", "r.yaml:2: rule 1: expect must be a string"},
		{"bad-expr", "rules:\n  - expect: strict\n  - name: o\n    expect: overlap(a b) >= 1\n", `r.yaml:4: rule 2: expect "overlap(a b) >= 1": column 11: expected ',' or ')' after "a", found "b"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadRules(strings.NewReader(tc.yaml), "r.yaml")
			if err == nil {
				t.Fatalf("LoadRules succeeded, want %q", tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n got: %s\nwant: %s", err, tc.want)
			}
			var le *LoadError
			if !errors.As(err, &le) || le.File != "r.yaml" {
				t.Errorf("error %v is not a *LoadError for r.yaml", err)
			}
		})
	}
	_, err := LoadRules(strings.NewReader("rules:\n  - expect: p99(c) <= 2\n"), "r.yaml")
	var se *SyntaxError
	if !errors.As(err, &se) || se.Col != 12 {
		t.Errorf("bad expect error %v does not unwrap to a *SyntaxError at column 12", err)
	}
	if diff := cmp.Diff(&SyntaxError{Expr: "p99(c) <= 2", Col: 12, Msg: "expected a duration unit (ns, us, ms, s) after 2"}, se, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("SyntaxError (-want +got):\n%s", diff)
	}
}
