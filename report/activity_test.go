package report

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type interval struct {
	name       string
	start, end int64
}

// integral returns the time integral of name's series (ns).
func integral(a *Activity, name string, alive bool) float64 {
	_, _, w := a.Span()
	var s float64
	for _, v := range a.Average(name, alive) {
		s += v * float64(w)
	}
	return s
}

func TestActivityConservesTime(t *testing.T) {
	const base = int64(1_700_000_000_000_000_000)
	tests := []struct {
		name string
		ivs  []interval
	}{
		{"one", []interval{{"a", base, base + 100}}},
		{"grows right", []interval{{"a", base, base + 10}, {"a", base + 5, base + 1_000_000}, {"b", base + 999_000, base + 3_000_000}}},
		{"grows left", []interval{{"a", base + 1_000_000, base + 1_000_010}, {"a", base - 7_000_000, base - 6_999_000}, {"b", base - 3, base + 4}}},
		{"both ways, many", func() []interval {
			var ivs []interval
			for i := range 200 {
				s := base + int64((i*7919)%1000-500)*1000
				ivs = append(ivs, interval{string(rune('a' + i%5)), s, s + int64(i*37+1)})
			}
			return ivs
		}()},
		{"empty and inverted ignored", []interval{{"a", base, base}, {"a", base + 5, base}, {"a", base, base + 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a Activity
			want := map[string]float64{}
			first, last := int64(math.MaxInt64), int64(math.MinInt64)
			for _, iv := range tt.ivs {
				a.AddRange(iv.name, iv.start, iv.end)
				if iv.end > iv.start {
					want[iv.name] += float64(iv.end - iv.start)
					first, last = min(first, iv.start), max(last, iv.end)
				}
			}
			got := map[string]float64{}
			for _, n := range a.Names() {
				got[n] = integral(&a, n, false)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("integral per name (-want +got):\n%s", diff)
			}
			lo, hi, w := a.Span()
			if lo > first || hi < last || hi-lo != ActivityBins*w {
				t.Errorf("span [%d, %d) width %d does not cover [%d, %d]", lo, hi, w, first, last)
			}
			// The bins are as fine as the data allow: halving them would not
			// cover the data.
			if w > 1 && (last-first) <= ActivityBins*w/4 {
				t.Errorf("width %d for a span of %d ns: coarser than needed", w, last-first)
			}
		})
	}
}

func TestActivityAverage(t *testing.T) {
	var a Activity
	// Two warps alive over [0, 512); one range over the first half.
	a.AddAlive(0, 512)
	a.AddAlive(0, 512)
	a.AddRange("load", 0, 256)
	lo, _, w := a.Span()
	if lo != 0 || w != 1 {
		t.Fatalf("span starts %d width %d, want 0 and 1", lo, w)
	}
	alive := a.Average("", true)
	load := a.Average("load", false)
	for i := range ActivityBins {
		wantLoad := 0.0
		if i < 256 {
			wantLoad = 1
		}
		if alive[i] != 2 || load[i] != wantLoad {
			t.Fatalf("bin %d: alive %g load %g, want 2 and %g", i, alive[i], load[i], wantLoad)
		}
	}
	// Growing to twice the span halves the resolution and keeps averages.
	a.AddRange("load", 1000, 1024)
	_, _, w = a.Span()
	if w != 2 {
		t.Fatalf("width %d after growing, want 2", w)
	}
	load = a.Average("load", false)
	if load[0] != 1 || load[127] != 1 || load[128] != 0 || load[500] != 1 || load[511] != 1 {
		t.Errorf("after growing: load bins 0,127,128,500,511 = %g %g %g %g %g, want 1 1 0 1 1",
			load[0], load[127], load[128], load[500], load[511])
	}
	if a.Average("missing", false) != nil {
		t.Error("Average of a name never added is not nil")
	}
}

func TestActivityExtremeTimes(t *testing.T) {
	var a Activity
	a.AddRange("a", math.MinInt64, math.MaxInt64)
	a.AddRange("a", 0, 1)
	a.AddRange("b", math.MaxInt64-1, math.MaxInt64)
	a.AddAlive(-5, 5)
	lo, hi, w := a.Span()
	if w <= 0 || hi <= lo {
		t.Fatalf("span [%d, %d) width %d", lo, hi, w)
	}
	for _, n := range []string{"a", "b"} {
		for i, v := range a.Average(n, false) {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Fatalf("%s bin %d = %g", n, i, v)
			}
		}
	}
}

func FuzzActivity(f *testing.F) {
	f.Add(int64(0), int64(10), int64(-100), int64(5), int64(1e9), int64(1e9+7))
	f.Add(int64(math.MinInt64), int64(math.MaxInt64), int64(0), int64(0), int64(1), int64(2))
	f.Fuzz(func(t *testing.T, s1, e1, s2, e2, s3, e3 int64) {
		var a Activity
		a.AddRange("x", s1, e1)
		a.AddRange("y", s2, e2)
		a.AddAlive(s3, e3)
		if a.Empty() {
			return
		}
		_, _, w := a.Span()
		if w <= 0 {
			t.Fatalf("width %d", w)
		}
		for _, n := range a.Names() {
			for _, v := range a.Average(n, false) {
				if math.IsNaN(v) || v < 0 {
					t.Fatalf("%s: bin value %g", n, v)
				}
			}
		}
	})
}
