package check

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// FuzzLoadRules checks that any text loads into rules that parse again, or
// fails with a *LoadError naming the file, and never panics.
func FuzzLoadRules(f *testing.F) {
	example, err := os.ReadFile("testdata/checks.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(example))
	f.Add("rules:\n  - strict\n  - expect: overlap(a, b) >= 0.6\n    name: overlap\n")
	f.Fuzz(func(t *testing.T, text string) {
		rules, err := LoadRules(strings.NewReader(text), "fuzz.yaml")
		if err != nil {
			var le *LoadError
			if !errors.As(err, &le) || !strings.Contains(err.Error(), "fuzz.yaml") {
				t.Fatalf("error %T %q: want a *LoadError naming the file", err, err)
			}
			return
		}
		for _, r := range rules {
			if _, err := ParseExpr(r.Expr); err != nil {
				t.Fatalf("loaded rule %q does not parse again: %v", r.Expr, err)
			}
		}
	})
}
