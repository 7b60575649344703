package report

import (
	"fmt"
	"math"
	"strings"
)

// roundsChart is an inline SVG of every round of the two builds.
type roundsChart struct {
	W, H         int
	Left, Bottom float64 // plot area's left and bottom edges
	U, I         []chartPt
	UPath, IPath string // polyline points
	Ticks        []chartTick
}

type chartPt struct{ X, Y float64 }

type chartTick struct {
	Y     float64
	Label string
}

// newRoundsChart lays out the rounds (µs); nil when there are none or a
// value is not finite.
func newRoundsChart(u, in []float64) *roundsChart {
	n := max(len(u), len(in))
	if n == 0 {
		return nil
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range append(append([]float64(nil), u...), in...) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	if hi-lo < 1e-9 {
		lo, hi = lo-0.5, hi+0.5
	}
	pad := (hi - lo) * 0.08
	lo, hi = lo-pad, hi+pad
	c := &roundsChart{W: 420, H: 170, Left: 64, Bottom: 150}
	top, right := 10.0, float64(c.W)-12
	x := func(i int) float64 {
		if n == 1 {
			return (c.Left + right) / 2
		}
		return round1(c.Left + float64(i)*(right-c.Left)/float64(n-1))
	}
	y := func(v float64) float64 { return round1(c.Bottom - (v-lo)/(hi-lo)*(c.Bottom-top)) }
	pts := func(vs []float64) ([]chartPt, string) {
		out := make([]chartPt, len(vs))
		var b strings.Builder
		for i, v := range vs {
			out[i] = chartPt{x(i), y(v)}
			fmt.Fprintf(&b, "%g,%g ", out[i].X, out[i].Y)
		}
		return out, strings.TrimSpace(b.String())
	}
	c.U, c.UPath = pts(u)
	c.I, c.IPath = pts(in)
	for k := range 3 {
		v := lo + pad + float64(k)*(hi-lo-2*pad)/2
		c.Ticks = append(c.Ticks, chartTick{y(v), fmtUS(v)})
	}
	return c
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }
