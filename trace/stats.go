package trace

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// NoRole is the role text of warps that never set a role.
const NoRole = "(none)"

// ExactDurations is how many durations an [Analyzer] keeps per (role, range)
// for exact quantiles. Past it, that (role, range) switches to a logarithmic
// histogram whose quantiles are within [SketchRelativeError] of an exact
// nearest-rank quantile (relative to the value); Count, TotalNs, MeanNs,
// MinNs and MaxNs stay exact.
const ExactDurations = 1 << 20

// SketchRelativeError bounds the relative error of quantiles computed from
// the histogram used past [ExactDurations] values.
const SketchRelativeError = 0.005

// aggGroup is the accumulator group of the all-roles rows.
const aggGroup = 1 << 16

// WarpRef locates one warp of a launch.
type WarpRef struct {
	Slot uint64    `json:"slot"`
	SM   uint32    `json:"sm"`
	CTA  [3]uint32 `json:"cta"`
	Warp uint32    `json:"warp"` // within the CTA
}

// String formats the warp like a [Violation] does: "warp 12 (sm 3, cta 7,0,0, warp 1)".
func (r WarpRef) String() string {
	return fmt.Sprintf("warp %d (sm %d, cta %d,%d,%d, warp %d)", r.Slot, r.SM, r.CTA[0], r.CTA[1], r.CTA[2], r.Warp)
}

// Ref locates the warp: its slot, SM, CTA and index in the CTA.
func (w *Warp) Ref() WarpRef { return WarpRef{Slot: w.Slot, SM: w.SM, CTA: w.CTA, Warp: w.Warp} }

// RangeStats are the statistics of one range name over the warps of one role
// (Role "" for the rows that aggregate every role). Durations are End-Start
// in ns of every range of that name, including ranges flagged unclosed or
// truncated (counted in Incomplete), whose durations are lower bounds.
type RangeStats struct {
	Role       string  `json:"role"` // role text, [NoRole], or "" for all roles
	Range      string  `json:"range"`
	Count      uint64  `json:"count"`
	Incomplete uint64  `json:"incomplete,omitempty"`
	TotalNs    int64   `json:"total_ns"`
	MeanNs     float64 `json:"mean_ns"`
	// Quantiles are nearest-rank: the smallest duration d such that at least
	// p*Count durations are <= d. Exact says they are exact (see
	// [ExactDurations]).
	P50Ns float64 `json:"p50_ns"`
	P90Ns float64 `json:"p90_ns"`
	P99Ns float64 `json:"p99_ns"`
	MinNs float64 `json:"min_ns"`
	MaxNs float64 `json:"max_ns"`
	Exact bool    `json:"exact"`
	// Share is TotalNs divided by the summed lifetimes (Last-First) of the
	// Warps that ran the range; nested or async ranges of one name can make
	// it exceed 1.
	Share float64 `json:"share"`
	// Warps is how many warps ran the range at least once; RoleWarps how many
	// started warps have the role (every started warp for Role "").
	Warps     uint64 `json:"warps"`
	RoleWarps uint64 `json:"role_warps"`
	// MinPerWarp and MaxPerWarp are the fewest and most ranges of this name
	// one warp of the role ran (0 when some warp of the role ran none), and
	// MinWarp, MaxWarp a warp with that many.
	MinPerWarp uint64  `json:"min_per_warp"`
	MaxPerWarp uint64  `json:"max_per_warp"`
	MinWarp    WarpRef `json:"min_warp"`
	MaxWarp    WarpRef `json:"max_warp"`
	// LongestWarp ran the longest range (MaxNs), the first one added on ties.
	LongestWarp WarpRef `json:"longest_warp"`
}

// WarpDrops is one warp that dropped events.
type WarpDrops struct {
	WarpRef
	Count   uint64 `json:"count"` // events attempted
	Stored  int    `json:"stored"`
	Dropped uint64 `json:"dropped"`
	// AtLeast: the warp's event counter saturated ([Warp.CountSaturated]),
	// so Count and Dropped are lower bounds.
	AtLeast bool `json:"at_least,omitempty"`
}

// Drops sums the events lost to full buffers.
type Drops struct {
	Total     uint64 `json:"total"`
	Attempted uint64 `json:"attempted"`
	// AtLeast: some warp's event counter saturated, so Total and Attempted
	// are lower bounds.
	AtLeast bool `json:"at_least,omitempty"`
	// WarpsDropping counts the warps that dropped events or whose count
	// saturated; Warps lists the first [MaxDropWarps]-1 of them in slot
	// order, then the one of the rest that dropped the most.
	WarpsDropping uint64      `json:"warps_dropping"`
	Warps         []WarpDrops `json:"warps,omitempty"`
}

// Worst returns the warp that dropped the most events (the first such one),
// and false when none dropped.
func (d *Drops) Worst() (WarpDrops, bool) {
	var best WarpDrops
	for _, w := range d.Warps {
		if w.Dropped > best.Dropped {
			best = w
		}
	}
	return best, best.Dropped > 0
}

// rangeAcc accumulates one (group, range name).
type rangeAcc struct {
	count, incomplete uint64
	total             int64
	min, max          int64
	warps             uint64
	life              int64
	minPer, maxPer    uint64
	minRef, maxRef    WarpRef
	longest           WarpRef
	last              uint64 // ordinal (in the group) of the last warp with the range
	missing           WarpRef
	hasMissing        bool
	d                 durations // role groups only
}

// groupAcc counts the started warps of a role (or of every role).
type groupAcc struct {
	n       uint64
	lastRef WarpRef
}

// Analyzer computes statistics, overlap, order, lag, bubbles, occupancy and
// drops of one launch from its decoded warps, fed one at a time with
// [Analyzer.Add] in slot order (as a [Decoder] gives them). It copies what
// it needs. Its time is linear in the ranges (n log n within a CTA) plus,
// per CTA, the pairs of tracked series that ran in it; its memory is
// bounded by the series (role, range) that ran, not by the name table or
// the CTAs: the range durations per series (at most [ExactDurations] each,
// then a fixed-size histogram), the ranges of one CTA, a few numbers per
// pair of the first [MaxTrackedSeries] series (with [ExactLags] lags) and
// the first [MaxDropWarps] warps that dropped events. The query methods may
// be called at any time and account every warp added so far. An Analyzer is
// not safe for concurrent use.
type Analyzer struct {
	meta  *LaunchMeta
	exact int // ExactDurations; tests lower it

	groups map[uint32]*groupAcc
	accs   map[uint64]*rangeAcc
	byName map[uint16][]uint32 // range id -> the roles (groups) that ran it, in order seen
	drops  Drops
	warps  uint64 // warps added
	start  uint64 // started warps
	gen    uint64 // Add calls, for the cached view

	// per-warp scratch, indexed by name id
	serial  uint32
	stamp   []uint32
	pos     []int32
	touched []uint16
	counts  []uint64
	tacc    []*rangeAcc
	tagg    []*rangeAcc
	tsid    [][2]int32

	rangeIDs [1 << 10]uint64 // bit set of the declared RANGE ids
	sids     map[uint64]int32
	st       ctaState
	cta      ctaAnalysis
	viewSt   *ctaState
	viewGen  uint64
}

// MaxDropWarps bounds the warps [Drops.Warps] lists.
const MaxDropWarps = 1000

// NewAnalyzer returns an Analyzer for a launch described by meta (which
// gives the names' texts; it must stay valid while the Analyzer is used).
func NewAnalyzer(meta *LaunchMeta) *Analyzer {
	a := &Analyzer{
		meta:   meta,
		exact:  ExactDurations,
		groups: map[uint32]*groupAcc{},
		accs:   map[uint64]*rangeAcc{},
		byName: map[uint16][]uint32{},
		sids:   map[uint64]int32{},
		stamp:  make([]uint32, 1<<16),
		pos:    make([]int32, 1<<16),
	}
	for _, n := range meta.Names {
		if n.Kind == NameRange {
			a.rangeIDs[n.ID/64] |= 1 << (n.ID % 64)
		}
	}
	return a
}

// Meta returns the launch metadata the Analyzer was made with.
func (a *Analyzer) Meta() *LaunchMeta { return a.meta }

// Add accounts warp w. It copies what it needs, so the caller may reuse w.
// Warps that never started count nowhere but in [Analyzer.Warps].
func (a *Analyzer) Add(w *Warp) {
	a.warps++
	a.gen++
	if !w.Started {
		return
	}
	a.start++
	ref := w.Ref()
	if w.Dropped > 0 || w.CountSaturated {
		a.drops.WarpsDropping++
		wd := WarpDrops{WarpRef: ref, Count: w.Count, Stored: w.Stored, Dropped: w.Dropped, AtLeast: w.CountSaturated}
		switch {
		case len(a.drops.Warps) < MaxDropWarps-1:
			a.drops.Warps = append(a.drops.Warps, wd)
		case len(a.drops.Warps) == MaxDropWarps-1:
			a.drops.Warps = append(a.drops.Warps, wd) // the last place: the worst of the rest
		case wd.Dropped > a.drops.Warps[MaxDropWarps-1].Dropped:
			a.drops.Warps[MaxDropWarps-1] = wd
		}
	}
	a.drops.AtLeast = a.drops.AtLeast || w.CountSaturated
	a.drops.Total += w.Dropped
	a.drops.Attempted += w.Count
	a.cta.closeIfOther(w, &a.st)

	// Count ranges per name in this warp.
	a.serial++
	if a.serial == 0 { // wrapped: clear stamps
		clear(a.stamp)
		a.serial = 1
	}
	a.touched = a.touched[:0]
	a.counts = a.counts[:0]
	for i := range w.Ranges {
		n := w.Ranges[i].Name
		if a.stamp[n] != a.serial {
			a.stamp[n] = a.serial
			a.pos[n] = int32(len(a.touched))
			a.touched = append(a.touched, n)
			a.counts = append(a.counts, 0)
		}
		a.counts[a.pos[n]]++
	}
	a.tacc = a.tacc[:0]
	a.tagg = a.tagg[:0]
	a.tsid = a.tsid[:0]
	for _, n := range a.touched {
		a.tacc = append(a.tacc, a.acc(uint32(w.Role), n))
		a.tagg = append(a.tagg, a.acc(aggGroup, n))
		a.tsid = append(a.tsid, [2]int32{a.sid(uint32(w.Role), n), a.aggSid(n)})
	}
	a.cta.add(w, a.meta.Mode != ModeWrap, func(i int) (int32, int32) {
		s := a.tsid[a.pos[w.Ranges[i].Name]]
		return s[0], s[1]
	})
	for i := range w.Ranges {
		r := &w.Ranges[i]
		d := max(r.End-r.Start, 0)
		p := a.pos[r.Name]
		for _, acc := range [2]*rangeAcc{a.tacc[p], a.tagg[p]} {
			if acc.count == 0 || d < acc.min {
				acc.min = d
			}
			if acc.count == 0 || d > acc.max {
				acc.max, acc.longest = d, ref
			}
			acc.count++
			acc.total += d
			if r.Flags != 0 {
				acc.incomplete++
			}
		}
		a.tacc[p].d.add(d, a.exact)
	}
	life := max(w.Last-w.First, 0)
	a.perWarp(uint32(w.Role), a.tacc, ref, life)
	a.perWarp(aggGroup, a.tagg, ref, life)
}

// perWarp updates the per-warp counts of group g with the warp's counts.
func (a *Analyzer) perWarp(g uint32, accs []*rangeAcc, ref WarpRef, life int64) {
	ga := a.groups[g]
	if ga == nil {
		ga = &groupAcc{}
		a.groups[g] = ga
	}
	ord := ga.n
	for i, acc := range accs {
		c := a.counts[i]
		switch {
		case acc.warps == 0:
			acc.minPer, acc.maxPer, acc.minRef, acc.maxRef = c, c, ref, ref
			if ord > 0 { // the group's previous warp ran none
				acc.missing, acc.hasMissing = ga.lastRef, true
			}
		default:
			if acc.last+1 < ord && !acc.hasMissing {
				acc.missing, acc.hasMissing = ga.lastRef, true
			}
			if c < acc.minPer {
				acc.minPer, acc.minRef = c, ref
			}
			if c > acc.maxPer {
				acc.maxPer, acc.maxRef = c, ref
			}
		}
		acc.last = ord
		acc.warps++
		acc.life += life
	}
	ga.n++
	ga.lastRef = ref
}

func (a *Analyzer) acc(g uint32, name uint16) *rangeAcc {
	k := uint64(g)<<16 | uint64(name)
	acc := a.accs[k]
	if acc == nil {
		acc = &rangeAcc{}
		a.accs[k] = acc
		if g != aggGroup {
			a.byName[name] = append(a.byName[name], g)
		}
	}
	return acc
}

// Warps returns how many warps were added and how many of them started.
func (a *Analyzer) Warps() (added, started uint64) { return a.warps, a.start }

// Drops returns the drops of the warps added so far. Warps is the caller's.
func (a *Analyzer) Drops() Drops {
	d := a.drops
	d.Warps = slices.Clone(d.Warps)
	return d
}

// roleText returns the text of role id r.
func (a *Analyzer) roleText(r uint32) string {
	switch r {
	case aggGroup:
		return ""
	case 0:
		return NoRole
	}
	return a.meta.NameText(uint16(r))
}

// Stats returns one row per (role, range name) seen, ordered by role id
// (warps without a role first) then range id, followed by the rows of every
// role together (Role "") for the range names more than one role ran,
// ordered by range id. The slice is the caller's.
func (a *Analyzer) Stats() []RangeStats {
	keys := make([]uint64, 0, len(a.accs))
	for k := range a.accs {
		if uint32(k>>16) == aggGroup && len(a.byName[uint16(k)]) < 2 {
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]RangeStats, 0, len(keys))
	for _, k := range keys {
		out = append(out, a.row(uint32(k>>16), uint16(k)))
	}
	return out
}

// RangeStat returns the row of one role (text, [NoRole], or "" for every
// role) and range name. rangeName may be a role-qualified [Series]
// ("producer:load"), which sets the role when role is "" and must agree
// with it otherwise. A role that ran no such range gives a row with Count 0
// (and RoleWarps set); an unknown range name or a role that no warp had is
// an error.
func (a *Analyzer) RangeStat(role, rangeName string) (RangeStats, error) {
	if s := ParseSeries(rangeName); s.Role != "" {
		if role != "" && role != s.Role {
			return RangeStats{}, fmt.Errorf("range stats of %q: role %q given twice, differently", rangeName, role)
		}
		role, rangeName = s.Role, s.Range
	}
	id, err := a.rangeID(rangeName)
	if err != nil {
		return RangeStats{}, err
	}
	g, ok := a.roleGroup(role)
	if !ok {
		return RangeStats{}, fmt.Errorf("range stats of %q: no warp has role %q (roles: %s)", rangeName, role, strings.Join(a.Roles(), ", "))
	}
	if _, ok := a.accs[uint64(g)<<16|uint64(id)]; ok {
		return a.row(g, id), nil
	}
	ga := a.groups[g]
	return RangeStats{Role: role, Range: rangeName, Exact: true, RoleWarps: ga.n, MinWarp: ga.lastRef, MaxWarp: ga.lastRef}, nil
}

// Roles returns the texts of the roles of the started warps, in role id
// order ([NoRole] first when some warp had none).
func (a *Analyzer) Roles() []string {
	var ids []uint32
	for g := range a.groups {
		if g != aggGroup {
			ids = append(ids, g)
		}
	}
	slices.Sort(ids)
	out := make([]string, len(ids))
	for i, g := range ids {
		out[i] = a.roleText(g)
	}
	return out
}

func (a *Analyzer) roleGroup(role string) (uint32, bool) {
	if role == "" {
		_, ok := a.groups[aggGroup]
		return aggGroup, ok
	}
	for g := range a.groups {
		if g != aggGroup && a.roleText(g) == role {
			return g, true
		}
	}
	return 0, false
}

// UnknownRangeError reports a range name that the launch's name table does
// not declare as a RANGE.
type UnknownRangeError struct {
	Name   string
	Ranges []string // the RANGE names of the table
}

func (e *UnknownRangeError) Error() string {
	return fmt.Sprintf("no range named %q in the launch's name table (ranges: %s)", e.Name, strings.Join(e.Ranges, ", "))
}

// rangeID returns the id of the RANGE name text.
func (a *Analyzer) rangeID(text string) (uint16, error) {
	var all []string
	for _, n := range a.meta.Names {
		if n.Kind != NameRange {
			continue
		}
		if n.Text == text {
			return n.ID, nil
		}
		all = append(all, n.Text)
	}
	return 0, &UnknownRangeError{Name: text, Ranges: all}
}

// row builds the statistics of group g and range id.
func (a *Analyzer) row(g uint32, id uint16) RangeStats {
	acc := a.accs[uint64(g)<<16|uint64(id)]
	ga := a.groups[g]
	s := RangeStats{
		Role: a.roleText(g), Range: a.meta.NameText(id),
		Count: acc.count, Incomplete: acc.incomplete, TotalNs: acc.total,
		MinNs: float64(acc.min), MaxNs: float64(acc.max),
		Warps: acc.warps, RoleWarps: ga.n,
		MinPerWarp: acc.minPer, MaxPerWarp: acc.maxPer, MinWarp: acc.minRef, MaxWarp: acc.maxRef,
		LongestWarp: acc.longest,
	}
	if acc.warps < ga.n {
		s.MinPerWarp = 0
		switch {
		case acc.hasMissing:
			s.MinWarp = acc.missing
		default: // the group's last warp ran none
			s.MinWarp = ga.lastRef
		}
	}
	if acc.count > 0 {
		s.MeanNs = float64(acc.total) / float64(acc.count)
	}
	if acc.life > 0 {
		s.Share = float64(acc.total) / float64(acc.life)
	}
	var q func(p float64) float64
	if g != aggGroup {
		q, s.Exact = acc.d.quantiles()
	} else {
		q, s.Exact = a.aggQuantiles(id)
	}
	if acc.count > 0 {
		clamp := func(v float64) float64 { return min(max(v, s.MinNs), s.MaxNs) }
		s.P50Ns, s.P90Ns, s.P99Ns = clamp(q(0.50)), clamp(q(0.90)), clamp(q(0.99))
	}
	return s
}

// aggQuantiles merges the durations of range id over every role.
func (a *Analyzer) aggQuantiles(id uint16) (func(float64) float64, bool) {
	var parts []*durations
	n := 0
	sketched := false
	for _, g := range a.byName[id] {
		acc := a.accs[uint64(g)<<16|uint64(id)]
		parts = append(parts, &acc.d)
		n += len(acc.d.exact)
		sketched = sketched || acc.d.sk != nil
	}
	var m durations
	if !sketched && n <= a.exact {
		m.exact = make([]int64, 0, n)
		for _, p := range parts {
			m.exact = append(m.exact, p.exact...)
		}
		return m.quantiles()
	}
	m.sk = &logSketch{}
	for _, p := range parts {
		if p.sk != nil {
			m.sk.merge(p.sk)
		}
		for _, v := range p.exact {
			m.sk.add(v)
		}
	}
	return m.quantiles()
}

// durations holds one (role, range)'s durations: exact up to a limit, then a
// logarithmic histogram.
type durations struct {
	exact  []int64
	sorted bool
	sk     *logSketch
}

func (d *durations) add(v int64, limit int) {
	if d.sk != nil {
		d.sk.add(v)
		return
	}
	d.exact = append(d.exact, v)
	d.sorted = false
	if len(d.exact) > limit {
		d.sk = &logSketch{}
		for _, x := range d.exact {
			d.sk.add(x)
		}
		d.exact = nil
	}
}

// quantiles returns the nearest-rank quantile function and whether it is
// exact. It sorts the exact durations in place.
func (d *durations) quantiles() (func(float64) float64, bool) {
	if d.sk != nil {
		return d.sk.quantile, false
	}
	return exactQuantiles(d.exact, &d.sorted), true
}

// exactQuantiles returns the nearest-rank quantile function of v, sorting v
// in place unless *sorted says it already is.
func exactQuantiles(v []int64, sorted *bool) func(float64) float64 {
	if !*sorted {
		slices.Sort(v)
		*sorted = true
	}
	return func(p float64) float64 {
		if len(v) == 0 {
			return 0
		}
		return float64(v[nearestRank(p, uint64(len(v)))-1])
	}
}

// nearestRank returns ceil(p*n) clamped to 1..n.
func nearestRank(p float64, n uint64) uint64 {
	r := uint64(math.Ceil(p * float64(n)))
	return min(max(r, 1), n)
}

var (
	sketchGamma   = (1 + SketchRelativeError) / (1 - SketchRelativeError)
	sketchLnGamma = math.Log(sketchGamma)
)

// logSketch is a histogram over logarithmic buckets: bucket i holds the
// values in (gamma^(i-1), gamma^i] and reports 2*gamma^i/(gamma+1), which
// is within SketchRelativeError of every value in it. Zero has its own
// bucket. Its size is bounded by the range of values (about 4400 buckets
// for 1 ns to 2^63 ns).
type logSketch struct {
	zero   uint64
	off    int
	counts []uint64
	n      uint64
}

func sketchIndex(v int64) int {
	return int(math.Ceil(math.Log(float64(v)) / sketchLnGamma))
}

func (s *logSketch) add(v int64) {
	s.n++
	if v <= 0 {
		s.zero++
		return
	}
	s.bump(sketchIndex(v), 1)
}

func (s *logSketch) bump(i int, c uint64) {
	switch {
	case len(s.counts) == 0:
		s.off = i
		s.counts = append(s.counts, 0)
	case i < s.off:
		s.counts = slices.Insert(s.counts, 0, make([]uint64, s.off-i)...)
		s.off = i
	case i >= s.off+len(s.counts):
		s.counts = append(s.counts, make([]uint64, i-s.off-len(s.counts)+1)...)
	}
	s.counts[i-s.off] += c
}

func (s *logSketch) merge(o *logSketch) {
	s.n += o.n
	s.zero += o.zero
	for j, c := range o.counts {
		if c > 0 {
			s.bump(o.off+j, c)
		}
	}
}

func (s *logSketch) quantile(p float64) float64 {
	if s.n == 0 {
		return 0
	}
	return s.atRank(nearestRank(p, s.n))
}
