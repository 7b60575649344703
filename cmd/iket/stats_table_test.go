package main

import (
	"strings"
	"testing"
)

// TestStatsTable checks the table of the bundled warp_roles capture: a p90
// column, an all-roles row only for wait_for_data (both roles run it), the
// matrix by series and the pipeline section.
func TestStatsTable(t *testing.T) {
	code, out, errs := runCLI(t, "stats", bundledCapture(t))
	if code != 0 {
		t.Fatalf("stats: exit %d\n%s%s", code, out, errs)
	}
	var all []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "(all)" {
			all = append(all, f[1])
		}
	}
	if len(all) != 1 || all[0] != "wait_for_data" {
		t.Errorf("(all) rows for %v, want [wait_for_data] only", all)
	}
	for _, want := range []string{"count      mean     p50     p90     p99     max  share",
		"producer:wait_for_data  consumer:wait_for_data", "pipeline lag", "producer:producer_load  consumer:consumer_compute     1056",
		"bubbles (y active while x runs on no warp"} {
		if !strings.Contains(out, want) {
			t.Errorf("stats output lacks %q:\n%s", want, out)
		}
	}
}
