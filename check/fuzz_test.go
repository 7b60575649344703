package check

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParseExpr checks that any text parses or fails with a *SyntaxError,
// never panics, and that a parsed rule parses again to the same rule.
func FuzzParseExpr(f *testing.F) {
	for _, s := range []string{
		"strict", "no_drops", "overlap(producer:load, consumer:compute) >= 0.6", "overlap_min_cta(a, b) > 50%",
		"p99(consumer_compute, role=consumer) <= 2us", "count(c, role=r) == 8", "before(a, b)", "latency_ratio <= 1.05", "dormant_ratio <= 1.01", "control_ratio <= 1.02",
		"p99(lag(producer:load, consumer:compute)) <= 2us", "min(lag(a, b)) >= -10ns", "bubble(x:c, y:w) <= 0.1",
		"p50(consumer:compute) <= 1.05 * baseline", "overlap(a, b) >= baseline", "p50(a) <= 1.05 *", "p99(lag(a,",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseExpr(s)
		if err != nil {
			if _, ok := err.(*SyntaxError); !ok {
				t.Fatalf("ParseExpr(%q) error %T, want *SyntaxError", s, err)
			}
			return
		}
		again, err := ParseExpr(r.Expr)
		if err != nil {
			t.Fatalf("ParseExpr(%q) parsed, its Expr %q does not: %v", s, r.Expr, err)
		}
		if diff := cmp.Diff(r, again); diff != "" {
			t.Fatalf("ParseExpr(%q) then again (-first +again):\n%s", s, diff)
		}
	})
}
