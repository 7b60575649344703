package perfetto

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/iket-trace/iket/trace"
)

// describeGPU returns the GPU track's name and description.
func describeGPU(d *trace.Device) (string, string) {
	if d == nil {
		return "GPU", "device not recorded"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s", d.Name)
	if d.UUID != "" {
		fmt.Fprintf(&b, "\nuuid %s", d.UUID)
	}
	if d.ComputeCap != "" {
		fmt.Fprintf(&b, "\ncompute capability %s, %d SMs, max SM clock %d MHz", d.ComputeCap, d.SMs, d.MaxSMClockMHz)
	}
	if d.Driver != "" || d.CUDA != "" {
		fmt.Fprintf(&b, "\ndriver %s, CUDA %s", d.Driver, d.CUDA)
	}
	for _, c := range []struct {
		when string
		c    *trace.Conditions
	}{{"before", d.Before}, {"after", d.After}} {
		if c.c == nil {
			continue
		}
		fmt.Fprintf(&b, "\n%s: SM %d MHz, memory %d MHz, %d °C, %.0f W", c.when, c.c.SMClockMHz, c.c.MemClockMHz, c.c.TemperatureC, c.c.PowerW)
		if len(c.c.ThrottleReasons) > 0 {
			fmt.Fprintf(&b, ", throttled: %s", strings.Join(c.c.ThrottleReasons, ", "))
		}
	}
	return "GPU · " + d.Name, b.String()
}

// describeLaunch returns the launch track's description: configuration,
// latency comparison and clock fits.
func describeLaunch(l *trace.LaunchMeta, info *LaunchInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "kernel %s", l.Kernel)
	if l.Source != "" {
		fmt.Fprintf(&b, " (%s)", l.Source)
	}
	fmt.Fprintf(&b, "\ngrid %s, block %s", dim3(l.Grid), dim3(l.Block))
	if l.Cluster != [3]uint32{} {
		fmt.Fprintf(&b, ", cluster %s", dim3(l.Cluster))
	}
	fmt.Fprintf(&b, ", %d B dynamic shared memory, %d warps per CTA, %d warp slots", l.SharedBytes, l.WarpsPerCTA, l.Warps)
	fmt.Fprintf(&b, "\nbuffer: %s", l.BufferText())
	if lt := l.Latency; lt != nil {
		fmt.Fprintf(&b, "\nlatency: uninstrumented median %.3f us (min %.3f), instrumented median %.3f us (min %.3f): ratio %.3f",
			lt.Uninstrumented.MedianUS, lt.Uninstrumented.MinUS, lt.Instrumented.MedianUS, lt.Instrumented.MinUS, lt.Ratio)
		if lt.Control != nil {
			fmt.Fprintf(&b, "\ncontrol (the uninstrumented binary again): median %.3f us: ratio %.3f", lt.Control.MedianUS, lt.ControlRatio)
		}
		if lt.Dormant != nil {
			fmt.Fprintf(&b, "\ninstrumented, not traced: median %.3f us: ratio %.3f", lt.Dormant.MedianUS, lt.DormantRatio)
		}
		s := lt.Settings
		fmt.Fprintf(&b, "\ntiming: %d rounds of %d calls after %d warmup calls, L2 flushed %t, interleaved %t, boundary %s",
			s.Rounds, s.CallsPerRound, s.Warmup, s.FlushL2, s.Interleaved, s.Boundary)
	} else {
		b.WriteString("\nlatency: not measured")
	}
	if n := len(info.Clocks); n > 0 {
		mhz := make([]float64, 0, n)
		var worst float64
		fallback := 0
		for _, f := range info.Clocks {
			mhz = append(mhz, f.MHz)
			worst = max(worst, f.ResidualMaxNs)
			if f.Fallback != "" {
				fallback++
			}
		}
		slices.Sort(mhz)
		fmt.Fprintf(&b, "\nclocks: %d SMs fitted, SM clock %.1f MHz median (%.1f-%.1f), worst anchor residual %.1f ns",
			n, mhz[n/2], mhz[0], mhz[n-1], worst)
		if fallback > 0 {
			fmt.Fprintf(&b, ", %d SMs on a fallback slope", fallback)
		}
	}
	if info.Window.Start != 0 {
		fmt.Fprintf(&b, "\ncommon recorded window from %d ns (trimmed: %t)", info.Window.Start, info.Window.Applied)
	}
	for _, n := range info.Notes {
		b.WriteString("\n")
		b.WriteString(n)
	}
	return b.String()
}

func dim3(d [3]uint32) string { return fmt.Sprintf("(%d,%d,%d)", d[0], d[1], d[2]) }

// appendWarpDesc appends a warp track's description: nothing for a warp
// that finished and kept every event (its name, its parents and its slices
// say all), else its event counts and whether it finished.
func appendWarpDesc(b []byte, in *warpInfo) []byte {
	if in.finished && in.dropped == 0 && in.trimmed == 0 {
		return b
	}
	b = appendUint(b, in.count)
	b = append(b, " events attempted, "...)
	b = strconv.AppendInt(b, int64(in.stored), 10)
	b = append(b, " stored, "...)
	b = appendUint(b, in.dropped)
	b = append(b, " dropped"...)
	if in.trimmed > 0 {
		b = append(b, ", "...)
		b = strconv.AppendInt(b, int64(in.trimmed), 10)
		b = append(b, " trimmed"...)
	}
	if !in.finished {
		b = append(b, "; did not finish (hung or faulted)"...)
	}
	return b
}
