package check

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseExpr(t *testing.T) {
	tests := []struct {
		expr string
		want Rule
	}{
		{"strict", Rule{Kind: KindStrict, Func: "strict"}},
		{" strict() ", Rule{Expr: "strict()", Kind: KindStrict, Func: "strict"}},
		{"no_drops", Rule{Kind: KindNoDrops, Func: "no_drops"}},
		{"overlap(producer_load, consumer_compute) >= 0.6", Rule{Kind: KindOverlap, Func: "overlap",
			Args: []string{"producer_load", "consumer_compute"}, Op: OpGE, Bound: 0.6}},
		{"overlap(a,b)>=60%", Rule{Kind: KindOverlap, Func: "overlap", Args: []string{"a", "b"}, Op: OpGE, Bound: 0.6}},
		{"overlap_min_cta(a, b) > .5", Rule{Kind: KindOverlapMinCTA, Func: "overlap_min_cta", Args: []string{"a", "b"}, Op: OpGT, Bound: 0.5}},
		{"p99(consumer_compute) <= 2us", Rule{Kind: KindDuration, Func: "p99", Args: []string{"consumer_compute"}, Op: OpLE, Bound: 2000}},
		{"p50(c, role=consumer) < 1.5ms", Rule{Kind: KindDuration, Func: "p50", Args: []string{"c"}, Role: "consumer", Op: OpLT, Bound: 1.5e6}},
		{"p90(c) <= 250ns", Rule{Kind: KindDuration, Func: "p90", Args: []string{"c"}, Op: OpLE, Bound: 250}},
		{"mean(c) <= 2µs", Rule{Kind: KindDuration, Func: "mean", Args: []string{"c"}, Op: OpLE, Bound: 2000}},
		{"max(c) <= 1e3ns", Rule{Kind: KindDuration, Func: "max", Args: []string{"c"}, Op: OpLE, Bound: 1000}},
		{"min(c) >= 1s", Rule{Kind: KindDuration, Func: "min", Args: []string{"c"}, Op: OpGE, Bound: 1e9}},
		{"count(consumer_compute, role=consumer) == 8", Rule{Kind: KindCount, Func: "count", Args: []string{"consumer_compute"},
			Role: "consumer", Op: OpEQ, Bound: 8}},
		{"count(c) != 0", Rule{Kind: KindCount, Func: "count", Args: []string{"c"}, Op: OpNE, Bound: 0}},
		{"before(producer_load, consumer_compute)", Rule{Kind: KindBefore, Func: "before", Args: []string{"producer_load", "consumer_compute"}}},
		{"latency_ratio <= 1.05", Rule{Kind: KindLatencyRatio, Func: "latency_ratio", Op: OpLE, Bound: 1.05}},
		{"latency_ratio() < 105%", Rule{Kind: KindLatencyRatio, Func: "latency_ratio", Op: OpLT, Bound: 1.05}},
		{"dormant_ratio <= 1.01", Rule{Kind: KindDormantRatio, Func: "dormant_ratio", Op: OpLE, Bound: 1.01}},
		{"control_ratio <= 1.02", Rule{Kind: KindControlRatio, Func: "control_ratio", Op: OpLE, Bound: 1.02}},
		{"overlap(producer:load, consumer:compute) >= 0.6", Rule{Kind: KindOverlap, Func: "overlap",
			Args: []string{"producer:load", "consumer:compute"}, Op: OpGE, Bound: 0.6}},
		{"p99(lag(producer:load, consumer:compute)) <= 2us", Rule{Kind: KindLag, Func: "p99",
			Args: []string{"producer:load", "consumer:compute"}, Op: OpLE, Bound: 2000}},
		{"min(lag(a, b)) >= -10ns", Rule{Kind: KindLag, Func: "min", Args: []string{"a", "b"}, Op: OpGE, Bound: -10}},
		{"bubble(consumer:compute, producer:wait) <= 0.1", Rule{Kind: KindBubble, Func: "bubble",
			Args: []string{"consumer:compute", "producer:wait"}, Op: OpLE, Bound: 0.1}},
		{"p50(consumer:compute) <= 1.05 * baseline", Rule{Kind: KindDuration, Func: "p50", Args: []string{"consumer:compute"},
			Op: OpLE, Baseline: true, Factor: 1.05}},
		{"overlap(a, b) >= baseline", Rule{Kind: KindOverlap, Func: "overlap", Args: []string{"a", "b"}, Op: OpGE, Baseline: true, Factor: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			got, err := ParseExpr(tc.expr)
			if err != nil {
				t.Fatalf("ParseExpr(%q): %v", tc.expr, err)
			}
			if tc.want.Expr == "" {
				tc.want.Expr = tc.expr
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseExpr(%q) (-want +got):\n%s", tc.expr, diff)
			}
		})
	}
}

func TestParseExprErrors(t *testing.T) {
	tests := []struct {
		expr string
		want string
	}{
		{"", "column 1: expected a rule (strict, no_drops, overlap, overlap_min_cta, bubble, p50, p90, p99, mean, min, max, count, before, latency_ratio, dormant_ratio, control_ratio), found end of rule"},
		{"overlapp(a, b) >= 1", `column 1: unknown rule "overlapp": want strict, no_drops, overlap, overlap_min_cta, bubble, p50, p90, p99, mean, min, max, count, before, latency_ratio, dormant_ratio or control_ratio`},
		{"overlap a, b >= 1", `column 9: expected '(' after overlap, found "a"`},
		{"overlap(a b) >= 1", `column 11: expected ',' or ')' after "a", found "b"`},
		{"overlap(a) >= 1", "column 1: overlap takes 2 range name(s), found 1"},
		{"overlap(a, b, c) >= 1", `column 15: overlap takes 2 range name(s), found another: "c"`},
		{"overlap(a, b)", "column 14: expected a comparison (>=, <=, >, <, ==, !=) after overlap, found end of rule"},
		{"overlap(a, b) => 1", `column 15: expected a comparison (>=, <=, >, <, ==, !=) after overlap, found "="`},
		{"overlap(a, b) >= x", `column 18: expected a number or baseline after >=, found "x"`},
		{"overlap(a, b) >= 0.6 and", `column 22: expected end of rule after 0.6, found "and"`},
		{"overlap(a, b) >= 0.6us", `column 21: overlap takes a plain ratio or a percentage, found unit "us"`},
		{"overlap(a, role=x) >= 0.6", "column 12: overlap does not take role="},
		{"p99(c) <= 2", "column 12: expected a duration unit (ns, us, ms, s) after 2"},
		{"p99(c) <= 2sec", `column 12: unknown duration unit "sec": want ns, us, ms or s`},
		{"p99(c) <= -2us", "column 11: a duration bound cannot be negative"},
		{"p99(c) <= 1..2us", `column 11: "1..2" is not a number`},
		{"p99(c, lane=3) <= 2us", `column 8: unknown option "lane": only role= is accepted`},
		{"p99(c, role=) <= 2us", `column 13: expected a role name after role=, found ")"`},
		{"p99(c, role=a, role=b) <= 2us", "column 16: role= given twice"},
		{"p99(role=a, c) <= 2us", `column 13: expected ')' after role=a, found "c"`},
		{"p99(c <= 2us", `column 7: expected ',' or ')' after "c", found "<="`},
		{"count(c, role=r) != 8", "column 18: count with role= applies to every warp of the role: use ==, >=, >, <= or <, not !="},
		{"count(c) == 2.5", "column 13: count takes a whole number >= 0, found 2.5"},
		{"count(c) == 2x", `column 14: count takes a plain number, found unit "x"`},
		{"before(a, b) >= 1", `column 14: expected end of rule after before (it takes no comparison), found ">="`},
		{"strict(a)", `column 8: strict takes no arguments: expected ')', found "a"`},
		{"no_drops == 0", `column 10: expected end of rule after no_drops (it takes no comparison), found "=="`},
		{"latency_ratio ! 1", `column 15: expected a comparison (>=, <=, >, <, ==, !=) after latency_ratio, found unexpected character "!"`},
		{"p99(c) <= 2us; strict", `column 14: expected end of rule after 2us, found unexpected character ";"`},
		{"p99(ç) <= 2us", `column 5: expected a range name, found unexpected character "ç"`},
		{"p99(lag(a)) <= 2us", `column 10: lag takes 2 range names: expected ',' after "a", found ")"`},
		{"p99(lag(a, b) <= 2us", `column 15: expected ')' after lag(...), found "<="`},
		{"p99(lag(a, b)) <= 2", `column 20: expected a duration unit (ns, us, ms, s) after 2`},
		{"bubble(a) <= 0.1", "column 1: bubble takes 2 range name(s), found 1"},
		{"p50(a) <= 1.05 * 2", `column 18: expected baseline after 1.05 *, found "2"`},
		{"p50(a) <= 1us * baseline", `column 11: expected a plain factor >= 0 before * baseline, found "1us"`},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			_, err := ParseExpr(tc.expr)
			if err == nil {
				t.Fatalf("ParseExpr(%q) succeeded, want error %q", tc.expr, tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("ParseExpr(%q) error\n got: %s\nwant: %s", tc.expr, err, tc.want)
			}
			var se *SyntaxError
			if !errors.As(err, &se) || se.Expr != tc.expr {
				t.Errorf("error %v is not a *SyntaxError for %q", err, tc.expr)
			}
		})
	}
}

func TestOpHolds(t *testing.T) {
	tests := []struct {
		op         Op
		lo, eq, hi bool // 1 op 2, 2 op 2, 3 op 2
	}{
		{OpGE, false, true, true}, {OpLE, true, true, false}, {OpGT, false, false, true},
		{OpLT, true, false, false}, {OpEQ, false, true, false}, {OpNE, true, false, true},
		{Op("~"), false, false, false},
	}
	for _, tc := range tests {
		got := [3]bool{tc.op.Holds(1, 2), tc.op.Holds(2, 2), tc.op.Holds(3, 2)}
		if want := [3]bool{tc.lo, tc.eq, tc.hi}; got != want {
			t.Errorf("%s: Holds(1|2|3, 2) = %v, want %v", tc.op, got, want)
		}
	}
}

func TestKindString(t *testing.T) {
	if got := KindOverlapMinCTA.String(); got != "overlap_min_cta" {
		t.Errorf("String() = %q", got)
	}
	if got := Kind(99).String(); got != "kind(99)" {
		t.Errorf("String() = %q", got)
	}
}

func TestHeadKind(t *testing.T) {
	for _, tt := range []struct {
		word string
		want Kind
	}{
		{"strict", KindStrict},
		{"no_drops", KindNoDrops},
		{"overlap", KindOverlap},
		{"overlap_min_cta", KindOverlapMinCTA},
		{"p90", KindDuration},
		{"max", KindDuration},
		{"count", KindCount},
		{"before", KindBefore},
		{"latency_ratio", KindLatencyRatio},
		{"bubble", KindBubble},
		{"dormant_ratio", KindDormantRatio},
		{"control_ratio", KindControlRatio},
		{"duration", 0}, // a kind, not a rule's first word
		{"lag", 0},      // inside a duration function only
		{"", 0},
		{"overlaps", 0},
	} {
		if got := headKind(tt.word); got != tt.want {
			t.Errorf("headKind(%q) = %v, want %v", tt.word, got, tt.want)
		}
	}
	// Every word the parse errors list starts a rule, and every word that
	// starts one is listed.
	listed := map[string]bool{}
	for _, w := range ruleHeads {
		listed[w] = true
		if headKind(w) == 0 {
			t.Errorf("ruleHeads has %q, which headKind does not know", w)
		}
	}
	for f := range durationFuncs {
		if !listed[f] {
			t.Errorf("ruleHeads lacks the duration function %q", f)
		}
	}
	for k := KindStrict; int(k) < len(kindNames); k++ {
		if w := kindNames[k]; headKind(w) != 0 && !listed[w] {
			t.Errorf("ruleHeads lacks %q", w)
		}
	}
}
