package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/iket-trace/iket/internal/bundled"
)

// complete runs cobra's hidden __complete command and returns the offered
// values (descriptions cut) and the directive line.
func complete(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(context.Background(), append([]string{"__complete"}, args...), &out, &errb); code != 0 {
		t.Fatalf("__complete %q: exit %d: %s", args, code, errb.String())
	}
	var vals []string
	dir := ""
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.HasPrefix(l, ":") {
			dir = l
			continue
		}
		v, _, _ := strings.Cut(l, "\t")
		vals = append(vals, v)
	}
	return vals, dir
}

func TestCompletion(t *testing.T) {
	b, err := bundled.Capture(bundled.GEMMName)
	if err != nil {
		t.Fatal(err)
	}
	gemm := filepath.Join(t.TempDir(), "gemm.iket")
	if err := os.WriteFile(gemm, b, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want []string
		dir  string // ":N", cobra's directive bits
	}{
		{[]string{"export", ""}, []string{"iket"}, ":8"}, // filter by extension
		{[]string{"diff", gemm, ""}, []string{"iket"}, ":8"},
		{[]string{"diff", gemm, gemm, ""}, nil, ":4"},
		{[]string{"export", "--format", ""}, []string{"pftrace", "json", "html"}, ":4"},
		{[]string{"run", "--mode", ""}, []string{"stop", "wrap"}, ":4"},
		{[]string{"check", "--format", ""}, []string{"table", "json"}, ":4"},
		{[]string{"stats", "--json="}, []string{"true", "false"}, ":4"},
		{[]string{"stats", gemm, "--launch", ""}, []string{"0"}, ":4"},
		{[]string{"check", gemm, "--expect", "overlap(wa"}, []string{"overlap(wait_data,", "overlap(wait_free,"}, ":6"},
		{[]string{"check", gemm, "--expect", "p99(consumer:com"}, []string{"p99(consumer:compute)"}, ":6"},
		{[]string{"check", gemm, "--expect", "p99(compute)"}, []string{"p99(compute)>=", "p99(compute)<=", "p99(compute)>", "p99(compute)<", "p99(compute)==", "p99(compute)!="}, ":6"},
		{[]string{"check", gemm, "--expect", "count(compute,"}, nil, ":4"},
	}
	for _, tt := range tests {
		got, dir := complete(t, tt.args...)
		if diff := cmp.Diff(tt.want, got); diff != "" || dir != tt.dir {
			t.Errorf("complete %q: directive %s, want %s; values (-want +got):\n%s", tt.args, dir, tt.dir, diff)
		}
	}
}
