package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"
)

// fmtNs formats a duration in ns with a unit that keeps three or four
// significant digits.
func fmtNs(ns float64) string {
	a := math.Abs(ns)
	switch {
	case math.IsNaN(ns) || math.IsInf(ns, 0):
		return fmt.Sprint(ns)
	case a < 1e3:
		return trimZeros(fmt.Sprintf("%.1f", ns)) + " ns"
	case a < 1e6:
		return trimZeros(fmt.Sprintf("%.4g", ns/1e3)) + " µs"
	case a < 1e9:
		return trimZeros(fmt.Sprintf("%.4g", ns/1e6)) + " ms"
	}
	return trimZeros(fmt.Sprintf("%.4g", ns/1e9)) + " s"
}

// fmtUS formats microseconds.
func fmtUS(us float64) string { return fmtNs(us * 1e3) }

func trimZeros(s string) string {
	if strings.Contains(s, ".") && !strings.ContainsAny(s, "eE") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func fmtPct(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

// heat is a cell background for a share in 0..1: white to blue.
func heat(f float64) template.CSS {
	if math.IsNaN(f) {
		f = 0
	}
	f = math.Max(0, math.Min(1, f))
	return template.CSS(fmt.Sprintf("background-color: rgba(37, 99, 235, %.2f)", 0.08+0.72*f))
}

// dims formats a 3-vector, dropping trailing 1s (and keeping the first).
func dims(v [3]uint32) string {
	n := 3
	for n > 1 && v[n-1] <= 1 {
		n--
	}
	parts := make([]string, n)
	for i := range n {
		parts[i] = fmt.Sprint(v[i])
	}
	return strings.Join(parts, "×")
}
