package report

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/iket-trace/iket/trace"
)

var (
	//go:embed assets/report.html.tmpl
	pageTemplate string
	//go:embed assets/report.css
	pageCSS string
	//go:embed assets/report.js
	pageJS string

	page = template.Must(template.New("report").Funcs(template.FuncMap{
		"ns": fmtNs, "nsi": func(v int64) string { return fmtNs(float64(v)) }, "us": fmtUS, "pct": fmtPct, "heat": heat, "dims": dims,
	}).Parse(pageTemplate))
)

// ErrInput is wrapped by every error Write returns for an inconsistent
// [Input] (as opposed to a failing writer).
var ErrInput = errors.New("invalid report input")

// Write writes in as one self-contained HTML page to w. The page makes no
// network requests. See [Input] for how the warps are bounded. It returns an
// error wrapping [ErrInput] when in is inconsistent (a launch index out of
// range) and the writer's error when writing fails.
func Write(w io.Writer, in *Input) error {
	if in == nil {
		return fmt.Errorf("write report: %w: nil input", ErrInput)
	}
	lm, err := launchMeta(in)
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	eff := *in
	if eff.Activity == nil {
		c := NewCollector(lm, in.Limits)
		for i := range in.Warps {
			c.AddView(&in.Warps[i])
		}
		c.Fill(&eff)
		if len(in.Warps) == 0 {
			eff.drops = nil // nothing counted: no drops table
		}
	}
	p := buildPayload(in, lm, eff.Warps, eff.Activity, eff.Omitted, in.Limits)
	var data bytes.Buffer
	enc := json.NewEncoder(&data) // escapes <, > and & so "</script" cannot occur
	if err := enc.Encode(p); err != nil {
		return fmt.Errorf("write report: encode data: %w", err)
	}
	v := newView(&eff, lm, p)
	v.Data = template.JS(bytes.TrimSpace(data.Bytes()))
	if err := page.Execute(w, v); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

func launchMeta(in *Input) (*trace.LaunchMeta, error) {
	if in.Meta == nil {
		if in.Launch != 0 {
			return nil, fmt.Errorf("%w: launch %d without metadata", ErrInput, in.Launch)
		}
		return nil, nil
	}
	if n := len(in.Meta.Launches); in.Launch < 0 || in.Launch >= n {
		return nil, fmt.Errorf("%w: launch %d: the capture has %d launches", ErrInput, in.Launch, n)
	}
	return &in.Meta.Launches[in.Launch], nil
}

// view is what the template renders; the timeline itself is drawn by the
// script from the JSON data.
type view struct {
	Title  string
	Facts  []fact
	Notice string
	Data   template.JS
	CSS    template.CSS
	JS     template.JS
	tables
	Latency    *latencyView
	Device     *trace.Device
	Conditions []condRow
}

type fact struct{ Label, Value string }

type latencyView struct {
	*trace.Latency
	Rounds   []roundRow
	Settings []fact
	Chart    *roundsChart
}

type roundRow struct {
	N                                            int
	Uninstrumented, Instrument, Control, Dormant string
}

type condRow struct{ Label, Before, After string }

func newView(in *Input, lm *trace.LaunchMeta, p *payload) *view {
	v := &view{
		Title: p.Title, CSS: template.CSS(pageCSS), JS: template.JS(pageJS),
		tables: newTables(in.Analysis, in.Problems, in.drops),
	}
	if lm != nil {
		v.Facts = append(v.Facts,
			fact{"kernel", lm.Kernel},
			fact{"launch", fmt.Sprint(in.Launch)},
			fact{"grid", dims(lm.Grid)},
			fact{"block", dims(lm.Block)})
		if lm.Cluster != [3]uint32{} {
			v.Facts = append(v.Facts, fact{"cluster", dims(lm.Cluster)})
		}
		v.Facts = append(v.Facts,
			fact{"warps", fmt.Sprintf("%d (%d per CTA)", lm.Warps, lm.WarpsPerCTA)},
			fact{"buffer", lm.BufferText()})
		if lm.Source != "" {
			v.Facts = append(v.Facts, fact{"source", lm.Source})
		}
		if r := lm.Resources; r != nil {
			v.Facts = append(v.Facts, fact{"resources", r.String()})
		}
		if b := lm.RecordsL2Bytes; b != nil {
			v.Facts = append(v.Facts, fact{"records", trace.RecordsL2(*b)})
		}
		if l := lm.Latency; l != nil && l.UninstrumentedResources != nil {
			v.Facts = append(v.Facts, fact{"resources, uninstrumented", l.UninstrumentedResources.String()})
		}
		if lm.Latency != nil {
			v.Latency = newLatencyView(lm.Latency)
		}
	}
	if m := in.Meta; m != nil {
		if m.Device != nil {
			v.Device = m.Device
			v.Facts = append(v.Facts, fact{"device", m.Device.Name})
			v.Conditions = conditions(m.Device)
		}
		if m.Tool != "" {
			v.Facts = append(v.Facts, fact{"tool", m.Tool})
		}
		if !m.Created.IsZero() {
			v.Facts = append(v.Facts, fact{"captured", m.Created.UTC().Format("2006-01-02 15:04:05 UTC")})
		}
	}
	v.Facts = append(v.Facts, fact{"time 0", p.T0 + " ns (globaltimer)"})
	c := p.Capped
	if c.OmittedWarps > 0 || c.Clipped {
		var b strings.Builder
		fmt.Fprintf(&b, "The timeline embeds %d of %d warps (%d events", c.EmbeddedWarps,
			uint64(c.EmbeddedWarps)+c.OmittedWarps, c.EmbeddedEvents)
		if c.Filtered > 0 {
			fmt.Fprintf(&b, "; %d warps are outside the selected CTAs/SMs", c.Filtered)
		}
		fmt.Fprintf(&b, "; the bound is %d events and %d warps). %d events of the warps left out",
			c.MaxEvents, c.MaxWarps, c.OmittedEvents)
		if c.Clipped {
			b.WriteString(" (including the end of a clipped warp)")
		}
		b.WriteString(" appear only in the activity strip, which covers the whole launch.")
		v.Notice = b.String()
	}
	return v
}

func newLatencyView(l *trace.Latency) *latencyView {
	lv := &latencyView{Latency: l}
	var ctl, dorm []float64
	if l.Control != nil {
		ctl = l.Control.RoundsUS
	}
	if l.Dormant != nil {
		dorm = l.Dormant.RoundsUS
	}
	n := max(len(l.Uninstrumented.RoundsUS), len(l.Instrumented.RoundsUS), len(ctl), len(dorm))
	at := func(s []float64, i int) string {
		if i < len(s) {
			return fmtUS(s[i])
		}
		return "—"
	}
	for i := range n {
		lv.Rounds = append(lv.Rounds, roundRow{N: i + 1,
			Uninstrumented: at(l.Uninstrumented.RoundsUS, i), Instrument: at(l.Instrumented.RoundsUS, i), Control: at(ctl, i),
			Dormant: at(dorm, i)})
	}
	lv.Chart = newRoundsChart(l.Uninstrumented.RoundsUS, l.Instrumented.RoundsUS)
	s := l.Settings
	lv.Settings = []fact{
		{"warm-up calls", fmt.Sprint(s.Warmup)},
		{"rounds", fmt.Sprint(s.Rounds)},
		{"calls per round", fmt.Sprint(s.CallsPerRound)},
		{"L2 flush", flush(s)},
		{"interleaved builds", fmt.Sprint(s.Interleaved)},
		{"timing boundary", s.Boundary},
	}
	if s.WarmupStableAt > 0 {
		lv.Settings = append(lv.Settings, fact{"warm-up stable after", fmt.Sprint(s.WarmupStableAt)})
	}
	if s.Order != "" {
		lv.Settings = append(lv.Settings, fact{"order", s.Order})
	}
	if l.PairedRatio != 0 {
		lv.Settings = append(lv.Settings, fact{"paired ratio (median over rounds)", fmt.Sprintf("%.3f", l.PairedRatio)})
	}
	if c := l.Control; c != nil {
		lv.Settings = append(lv.Settings, fact{"control (the uninstrumented binary again)",
			fmt.Sprintf("median %s, ratio %.3f (paired %.3f): two identical builds differ by this much here",
				fmtUS(c.MedianUS), l.ControlRatio, l.ControlPairedRatio)})
	}
	if d := l.Dormant; d != nil {
		lv.Settings = append(lv.Settings, fact{"instrumented, not traced",
			fmt.Sprintf("median %s, ratio %.3f (paired %.3f): what the build with tracing costs while nobody traces it",
				fmtUS(d.MedianUS), l.DormantRatio, l.DormantPairedRatio)})
	}
	return lv
}

func flush(s trace.TimingSettings) string {
	if !s.FlushL2 {
		return "no"
	}
	if s.FlushBytes > 0 {
		return fmt.Sprintf("yes (%d MiB)", s.FlushBytes>>20)
	}
	return "yes"
}

func conditions(d *trace.Device) []condRow {
	get := func(c *trace.Conditions, f func(*trace.Conditions) string) string {
		if c == nil {
			return "—"
		}
		return f(c)
	}
	row := func(label string, f func(*trace.Conditions) string) condRow {
		return condRow{label, get(d.Before, f), get(d.After, f)}
	}
	if d.Before == nil && d.After == nil {
		return nil
	}
	return []condRow{
		row("SM clock", func(c *trace.Conditions) string { return fmt.Sprintf("%d MHz", c.SMClockMHz) }),
		row("memory clock", func(c *trace.Conditions) string { return fmt.Sprintf("%d MHz", c.MemClockMHz) }),
		row("temperature", func(c *trace.Conditions) string { return fmt.Sprintf("%d °C", c.TemperatureC) }),
		row("power", func(c *trace.Conditions) string { return fmt.Sprintf("%.1f W", c.PowerW) }),
		row("power limit", func(c *trace.Conditions) string {
			if c.PowerLimitW == 0 {
				return "—"
			}
			return fmt.Sprintf("%.0f W", c.PowerLimitW)
		}),
		row("throttle reasons", func(c *trace.Conditions) string {
			if len(c.ThrottleReasons) == 0 {
				return "none"
			}
			return strings.Join(c.ThrottleReasons, ", ")
		}),
	}
}
