package report

import (
	"cmp"
	"math"
	"slices"
	"strconv"

	"github.com/iket-trace/iket/trace"
)

// payload is the JSON the page's script reads (element #iket-data). Times
// are ns relative to T0, so they stay exact as JavaScript numbers.
type payload struct {
	Title    string     `json:"title"`
	Kernel   string     `json:"kernel"`
	T0       string     `json:"t0"`  // absolute globaltimer ns of time 0, as text
	End      int64      `json:"end"` // end of the launch's time domain
	Names    []string   `json:"names"`
	Roles    []string   `json:"roles"`
	Warps    []pwarp    `json:"warps"`
	Activity *pactivity `json:"activity"`
	Capped   pcapped    `json:"capped"`
}

// Tuple widths of pwarp.R and pwarp.M.
const (
	rangeFields = 7 // name, payload, start, end, depth, lane (-1: push/pop), flags
	markFields  = 3 // name, payload, time
)

type pwarp struct {
	Slot      uint64    `json:"slot"`
	SM        uint32    `json:"sm"`
	CTA       [3]uint32 `json:"cta"`
	CTALinear uint64    `json:"ctaLinear"`
	Warp      uint32    `json:"warp"`
	Role      int       `json:"role"` // index in payload.Roles, -1: none
	Started   bool      `json:"started"`
	Finished  bool      `json:"finished"`
	First     int64     `json:"first"`
	Last      int64     `json:"last"`
	Count     uint64    `json:"count"`
	Stored    int       `json:"stored"`
	Dropped   uint64    `json:"dropped"`
	Clipped   bool      `json:"clipped"`
	Depth     int       `json:"depth"` // push/pop sub-rows
	Lanes     int       `json:"lanes"` // async sub-rows, below them
	R         []int64   `json:"r"`
	M         []int64   `json:"m"`
	// Idle is the number of idle warps (see idle) this row stands for, 0
	// for an ordinary warp: consecutive idle warps of one role in one CTA
	// share a row, "CTA 3 · 3 idle producer warps". IdleWarps are their
	// warp indices; First and Last span their lifetimes.
	Idle      int      `json:"idle,omitempty"`
	IdleWarps []uint32 `json:"idleWarps,omitempty"`
}

// idle reports whether w recorded nothing but its role: it started and
// finished, kept every event and has no range or mark (the idle warps of a
// warp group).
func idle(w *WarpView) bool {
	return w.Started && w.Finished && w.Dropped == 0 && !w.Clipped && len(w.Ranges) == 0 && len(w.Marks) == 0
}

type pactivity struct {
	Start  int64       `json:"start"`
	Width  int64       `json:"width"`
	Names  []int       `json:"names"` // index in payload.Names, -1: the rest merged
	Series [][]float64 `json:"series"`
	Alive  []float64   `json:"alive"`
}

type pcapped struct {
	EmbeddedWarps  int    `json:"embeddedWarps"`
	EmbeddedEvents int    `json:"embeddedEvents"`
	OmittedWarps   uint64 `json:"omittedWarps"`
	OmittedEvents  uint64 `json:"omittedEvents"`
	Filtered       uint64 `json:"filtered"`
	MaxEvents      int    `json:"maxEvents"`
	MaxWarps       int    `json:"maxWarps"`
	Clipped        bool   `json:"clipped"`
}

// maxSeries bounds the activity strip's series; smaller ones are merged.
const maxSeries = 24

// interner numbers strings in first-seen order.
type interner struct {
	list []string
	idx  map[string]int
}

func (n *interner) id(s string) int {
	if i, ok := n.idx[s]; ok {
		return i
	}
	if n.idx == nil {
		n.idx = map[string]int{}
	}
	n.idx[s] = len(n.list)
	n.list = append(n.list, s)
	return len(n.list) - 1
}

// buildPayload lays out the embedded data. warps and act are the collected
// ones (see Write).
func buildPayload(in *Input, lm *trace.LaunchMeta, warps []WarpView, act *Activity, om Omitted, lim Limits) *payload {
	p := &payload{Title: pageTitle(in, lm)}
	if lm != nil {
		p.Kernel = lm.Kernel
	}
	var names, roles interner
	if lm != nil {
		// Declared order first, so colours stay put across reports.
		for _, n := range lm.Names {
			switch n.Kind {
			case trace.NameRole:
				roles.id(n.Text)
			default:
				names.id(n.Text)
			}
		}
	}

	// The time domain: every embedded time and the whole launch's activity.
	t0, t1 := int64(math.MaxInt64), int64(math.MinInt64)
	see := func(t int64) { t0, t1 = min(t0, t), max(t1, t) }
	for i := range warps {
		w := &warps[i]
		if w.Started && w.First != 0 {
			see(w.First)
			see(max(w.Last, w.First))
		}
		for _, r := range w.Ranges {
			see(r.Start)
			see(r.End)
		}
		for _, m := range w.Marks {
			see(m.Time)
		}
	}
	if !act.Empty() {
		f, l := act.Bounds()
		see(f)
		see(l)
	}
	if t0 > t1 {
		t0, t1 = 0, 0
	}
	p.T0 = strconv.FormatInt(t0, 10)
	p.End = t1 - t0

	// Warps, grouped by role in declared order, no role last.
	order := make([]int, len(warps))
	roleOf := make([]int, len(warps))
	for i := range warps {
		order[i] = i
		roleOf[i] = -1
		if warps[i].Role != "" {
			roleOf[i] = roles.id(warps[i].Role)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ra, rb := roleOf[a], roleOf[b]
		if ra < 0 {
			ra = math.MaxInt
		}
		if rb < 0 {
			rb = math.MaxInt
		}
		return cmp.Or(cmp.Compare(ra, rb),
			cmp.Compare(warps[a].CTALinear, warps[b].CTALinear),
			cmp.Compare(warps[a].Warp, warps[b].Warp),
			cmp.Compare(warps[a].Slot, warps[b].Slot))
	})
	p.Warps = make([]pwarp, 0, len(warps))
	events := 0
	for _, i := range order {
		w := &warps[i]
		if idle(w) {
			if n := len(p.Warps); n > 0 {
				if last := &p.Warps[n-1]; last.Idle > 0 && last.Role == roleOf[i] && last.CTALinear == w.CTALinear {
					last.Idle++
					last.IdleWarps = append(last.IdleWarps, w.Warp)
					last.Count += w.Count
					last.Stored += w.Stored
					if w.First != 0 {
						if last.First == 0 && last.Last == 0 {
							last.First, last.Last = w.First-t0, max(w.Last, w.First)-t0
						} else {
							last.First, last.Last = min(last.First, w.First-t0), max(last.Last, max(w.Last, w.First)-t0)
						}
					}
					continue
				}
			}
		}
		pw := pwarp{Slot: w.Slot, SM: w.SM, CTA: w.CTA, CTALinear: w.CTALinear, Warp: w.Warp,
			Role: roleOf[i], Started: w.Started, Finished: w.Finished,
			Count: w.Count, Stored: w.Stored, Dropped: w.Dropped, Clipped: w.Clipped,
			R: make([]int64, 0, rangeFields*len(w.Ranges)), M: make([]int64, 0, markFields*len(w.Marks))}
		if w.Started && w.First != 0 {
			pw.First, pw.Last = w.First-t0, max(w.Last, w.First)-t0
		}
		for _, r := range w.Ranges {
			lane := int64(-1)
			if r.Async {
				lane = int64(max(r.Lane, 0))
				pw.Lanes = max(pw.Lanes, int(lane)+1)
			} else {
				pw.Depth = max(pw.Depth, int(max(r.Depth, 0))+1)
			}
			pw.R = append(pw.R, int64(names.id(r.Name)), int64(r.Payload), r.Start-t0, r.End-t0,
				int64(max(r.Depth, 0)), lane, int64(r.Flags))
		}
		for _, m := range w.Marks {
			pw.M = append(pw.M, int64(names.id(m.Name)), int64(m.Payload), m.Time-t0)
		}
		if idle(w) {
			pw.Idle, pw.IdleWarps = 1, []uint32{w.Warp}
		}
		events += len(w.Ranges) + len(w.Marks)
		p.Warps = append(p.Warps, pw)
	}

	if !act.Empty() {
		p.Activity = buildActivity(act, t0, &names)
	}
	p.Names, p.Roles = names.list, roles.list
	if p.Names == nil {
		p.Names = []string{}
	}
	if p.Roles == nil {
		p.Roles = []string{}
	}
	p.Capped = pcapped{EmbeddedWarps: len(warps), EmbeddedEvents: events,
		OmittedWarps: om.Warps, OmittedEvents: om.Events, Filtered: om.Filtered,
		MaxEvents: lim.maxEvents(), MaxWarps: lim.maxWarps()}
	for i := range warps {
		p.Capped.Clipped = p.Capped.Clipped || warps[i].Clipped
	}
	return p
}

// buildActivity keeps the maxSeries largest series by total time and merges
// the rest into one (name -1). Values are rounded to 1/1000 warp.
func buildActivity(act *Activity, t0 int64, names *interner) *pactivity {
	lo, _, width := act.Span()
	pa := &pactivity{Start: lo - t0, Width: width}
	type series struct {
		name  string
		vals  []float64
		total float64
	}
	var all []series
	for _, n := range act.names {
		v := act.Average(n, false)
		var tot float64
		for _, x := range v {
			tot += x
		}
		all = append(all, series{n, v, tot})
	}
	slices.SortStableFunc(all, func(a, b series) int { return cmp.Compare(b.total, a.total) })
	// Series in the names' order, so the stacking matches the legend.
	keep := all[:min(len(all), maxSeries)]
	for _, s := range keep {
		names.id(s.name)
	}
	slices.SortStableFunc(keep, func(a, b series) int { return cmp.Compare(names.id(a.name), names.id(b.name)) })
	for _, s := range keep {
		pa.Names = append(pa.Names, names.id(s.name))
		pa.Series = append(pa.Series, round3(s.vals))
	}
	if len(all) > maxSeries {
		rest := make([]float64, ActivityBins)
		for _, s := range all[maxSeries:] {
			for i, x := range s.vals {
				rest[i] += x
			}
		}
		pa.Names = append(pa.Names, -1)
		pa.Series = append(pa.Series, round3(rest))
	}
	if a := act.Average("", true); a != nil {
		pa.Alive = round3(a)
	}
	return pa
}

func round3(v []float64) []float64 {
	for i, x := range v {
		v[i] = math.Round(x*1000) / 1000
	}
	return v
}

func pageTitle(in *Input, lm *trace.LaunchMeta) string {
	switch {
	case in.Title != "":
		return in.Title
	case lm != nil && lm.Kernel != "":
		return "iket: " + lm.Kernel
	}
	return "iket report"
}
