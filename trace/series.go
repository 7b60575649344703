package trace

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// A Series names the ranges of one RANGE name on the warps of one role, or
// on every warp (Role ""). Its text form is "role:range" or "range"; a
// plain range name that one role only ran means that role's series (the
// two are the same ranges), and a name several roles ran means every
// role's ranges together.
type Series struct {
	Role  string `json:"role,omitempty"` // role text, [NoRole], or "" for every role
	Range string `json:"range"`
}

// ParseSeries splits "role:range" at its first colon; text without a colon
// is a plain range name (Role ""). It does not check that the names exist.
func ParseSeries(text string) Series {
	if role, rng, ok := strings.Cut(text, ":"); ok {
		return Series{Role: role, Range: rng}
	}
	return Series{Range: text}
}

// String returns "role:range", or the range name when Role is "".
func (s Series) String() string {
	if s.Role == "" {
		return s.Range
	}
	return s.Role + ":" + s.Range
}

// MaxTrackedSeries bounds the series an [Analyzer] measures overlap, order,
// lag and bubbles of: the first ones seen (in slot order), each
// role-qualified series and each range name over every role counting one.
// Statistics ([Analyzer.Stats]) cover every series. Queries about a series
// past the bound fail with [ErrUntracked].
const MaxTrackedSeries = 128

// ErrUntracked is matched (errors.Is) by the error of a query about a
// series past [MaxTrackedSeries].
var ErrUntracked = errors.New("not tracked")

// UnknownRoleError reports a role that the launch's name table does not
// declare as a ROLE.
type UnknownRoleError struct {
	Name  string
	Roles []string // the ROLE names of the table
}

func (e *UnknownRoleError) Error() string {
	return fmt.Sprintf("no role named %q in the launch's name table (roles: %s)", e.Name, strings.Join(e.Roles, ", "))
}

// seriesRef is a resolved series: its accumulator group (a role id or
// aggGroup) and range id.
type seriesRef struct {
	g     uint32
	name  uint16
	label string // as the caller wrote it
}

func (r seriesRef) key() uint64 { return uint64(r.g)<<16 | uint64(r.name) }

// resolve turns series text into a group and range id. A plain name that
// exactly one role ran resolves to that role's series (the same ranges as
// every role's), otherwise to every role's.
func (a *Analyzer) resolve(text string) (seriesRef, error) {
	s := ParseSeries(text)
	id, err := a.rangeID(s.Range)
	if err != nil {
		return seriesRef{}, err
	}
	ref := seriesRef{g: aggGroup, name: id, label: text}
	switch {
	case s.Role != "":
		g, err := a.roleID(s.Role)
		if err != nil {
			return seriesRef{}, err
		}
		ref.g = g
	default:
		if roles := a.byName[id]; len(roles) == 1 {
			ref.g = roles[0]
		}
	}
	return ref, nil
}

// roleID returns the group of role text: 0 for [NoRole], else the id of the
// ROLE name.
func (a *Analyzer) roleID(text string) (uint32, error) {
	if text == NoRole {
		return 0, nil
	}
	var all []string
	for _, n := range a.meta.Names {
		if n.Kind != NameRole {
			continue
		}
		if n.Text == text {
			return uint32(n.ID), nil
		}
		all = append(all, n.Text)
	}
	return 0, &UnknownRoleError{Name: text, Roles: all}
}

// seriesLabel is the text of series (g, name): "role:range", or the range
// name for every role.
func (a *Analyzer) seriesLabel(g uint32, name uint16) string {
	if g == aggGroup {
		return a.meta.NameText(name)
	}
	return a.roleText(g) + ":" + a.meta.NameText(name)
}

// trackedSeries is one series the CTA analysis measures.
type trackedSeries struct {
	g    uint32
	name uint16

	// Totals over the closed CTAs where the series ran.
	active, span int64
	ctas         uint64 // CTAs where it was active (active > 0)
	ranges       uint64
	first        CTAOverlap     // the first CTA where it was active (Overlapped 0)
	firstNoA     OrderViolation // its first range in the first CTA it ran in, as a before() violation with no A
	hasFirst     bool
	hasRanges    bool
	staged       bool      // a range of it carried a payload other than 0: it has stages
	busiest      CTABubble // the CTA where it was active for the largest share of the CTA's span
}

// sid returns the tracked series of role group g and range name, creating
// it when the name is a declared RANGE and there is room; -1 when
// untracked.
func (a *Analyzer) sid(g uint32, name uint16) int32 {
	k := uint64(g)<<16 | uint64(name)
	if s, ok := a.sids[k]; ok {
		return s
	}
	s := int32(-1)
	if a.isRange(name) && len(a.st.series) < MaxTrackedSeries {
		s = a.newSeries(g, name)
	}
	a.sids[k] = s
	return s
}

// aggSid returns the tracked every-role series of range name, which exists
// once a second role ran the name (until then it is the one role's
// series), or -1. Created late, it starts as a copy of the first role's
// series, which held every range of the name so far, and takes the open
// CTA's ranges of the name.
func (a *Analyzer) aggSid(name uint16) int32 {
	k := uint64(aggGroup)<<16 | uint64(name)
	if s, ok := a.sids[k]; ok {
		return s
	}
	if len(a.byName[name]) < 2 {
		return -1
	}
	s := int32(-1)
	src, ok := a.sids[uint64(a.byName[name][0])<<16|uint64(name)]
	if ok && src >= 0 && len(a.st.series) < MaxTrackedSeries {
		s = a.copySeries(src)
		for i := range a.cta.ranges {
			if r := &a.cta.ranges[i]; r.name == name {
				r.asid = s
			}
		}
	}
	a.sids[k] = s
	return s
}

// copySeries adds the every-role series of src's name as a copy of src.
func (a *Analyzer) copySeries(src int32) int32 {
	st := &a.st
	j := int32(len(st.series))
	c := st.series[src]
	c.g = aggGroup
	st.series = append(st.series, c)
	for i := range st.series[:j] {
		st.pairs[i][j] = st.pairs[i][src].clone()
	}
	row := make([]pairAcc, MaxTrackedSeries)
	for i := range st.series[:j] {
		row[i] = st.pairs[src][i].clone()
	}
	row[j] = st.pairs[src][src].clone()
	st.pairs = append(st.pairs, row)
	return j
}

func (a *Analyzer) isRange(name uint16) bool {
	return a.rangeIDs[name/64]&(1<<(name%64)) != 0
}

// newSeries adds tracked series j and brings the pairs with every earlier
// series up to date with the CTAs closed before it existed (it ran in none
// of them).
func (a *Analyzer) newSeries(g uint32, name uint16) int32 {
	st := &a.st
	j := int32(len(st.series))
	st.series = append(st.series, trackedSeries{g: g, name: name})
	st.pairs = append(st.pairs, make([]pairAcc, MaxTrackedSeries))
	for i := range st.series[:j] {
		x := &st.series[i]
		if x.hasRanges {
			p := &st.pairs[i][j] // overlap(x, new): 0 in each of x's CTAs
			p.span = x.span
			if x.hasFirst {
				p.ctas = x.ctas
				p.minShare, p.worst, p.hasWorst = 0, x.first, true
			}
			q := &st.pairs[j][i] // the new series never ran while x did
			q.bubble += x.active
			q.span += x.span
			q.bubbleWorst(x.busiest)
			if x.name != name {
				q.noA(x.ranges, x.firstNoA)
			}
		}
	}
	return j
}

// pairAcc accumulates the ordered pair (x, y) of tracked series over the
// closed CTAs.
type pairAcc struct {
	// overlap(x, y): over the CTAs where x was active.
	ctas       uint64
	overlapped int64
	minShare   float64
	worst      CTAOverlap
	hasWorst   bool
	// bubble(x, y): y active while x is active on no warp, over the CTAs
	// where x or y ran.
	bubble, span int64
	bworst       CTABubble
	// before(x, y) and lag(x, y), for different range names.
	order *orderAcc
	lag   *lagAcc
}

func (p *pairAcc) overlapCTA(c CTAOverlap) {
	p.ctas++
	p.overlapped += c.OverlappedNs
	if !p.hasWorst || c.Share < p.minShare {
		p.minShare, p.worst, p.hasWorst = c.Share, c, true
	}
}

func (p *pairAcc) bubbleWorst(c CTABubble) {
	if c.BubbleNs > 0 && c.Share > p.bworst.Share {
		p.bworst = c
	}
}

func (p *pairAcc) orderAcc() *orderAcc {
	if p.order == nil {
		p.order = &orderAcc{}
	}
	return p.order
}

func (p *pairAcc) lagAcc() *lagAcc {
	if p.lag == nil {
		p.lag = &lagAcc{}
	}
	return p.lag
}

// noA accounts n y ranges of CTAs where x never ran: before(x, y) fails for
// each, and none has a lag.
func (p *pairAcc) noA(n uint64, first OrderViolation) {
	o := p.orderAcc()
	o.checked += n
	o.violate(first)
	o.violations += n - 1
	p.lagAcc().unmatched += n
}

// ctaState is what the CTA analysis accumulates: the tracked series and
// their pairs (pairs[x][y] for x, y < len(series)).
type ctaState struct {
	series []trackedSeries
	pairs  [][]pairAcc
}

// clone copies s deeply.
func (s *ctaState) clone() *ctaState {
	c := &ctaState{series: slices.Clone(s.series), pairs: make([][]pairAcc, len(s.pairs))}
	for i, row := range s.pairs {
		c.pairs[i] = make([]pairAcc, len(row))
		for j := range s.series {
			c.pairs[i][j] = row[j].clone()
		}
	}
	return c
}

// clone copies p deeply.
func (p pairAcc) clone() pairAcc {
	if p.order != nil {
		o := *p.order
		p.order = &o
	}
	if p.lag != nil {
		p.lag = p.lag.clone()
	}
	return p
}

// lookup returns the tracked series of ref, -1 when it never ran, or an
// error when it ran but is past [MaxTrackedSeries].
func (a *Analyzer) lookup(ref seriesRef) (int32, error) {
	s, ok := a.sids[ref.key()]
	switch {
	case !ok:
		return -1, nil
	case s < 0 && a.isRange(ref.name):
		return -1, fmt.Errorf("series %s: %w: the launch has more than %d series (role, range)", ref.label, ErrUntracked, MaxTrackedSeries)
	}
	return s, nil
}
