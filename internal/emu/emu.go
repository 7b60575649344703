package emu

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/iket-trace/iket/internal/raw"
	"github.com/iket-trace/iket/trace"
)

// Clock models one SM's cycle counter against the globaltimer:
//
//	globaltimer(c) = Ns0 + (c - Cycle0) * 1000 / MHz, read in steps of TickNs
type Clock struct {
	MHz    float64
	Cycle0 uint64 // cycle counter value at globaltimer Ns0
	Ns0    uint64
	TickNs uint64 // globaltimer resolution; 0 means 32 (H200)
	// JitterCycles: an anchor's clock is off the tick instant by up to this
	// many cycles either way (deterministic per warp), as the device's spin
	// loop reads the clock one iteration apart from the timer.
	JitterCycles uint64
}

// DefaultNs0 is the globaltimer of the default clocks at their Cycle0.
const DefaultNs0 = 1_764_000_000_000_000_000

// DefaultClock is the clock an SM gets when [Launch.Clocks] has none: 1980
// MHz, a 32 ns tick, and a cycle counter offset that differs per SM.
func DefaultClock(sm uint32) Clock {
	return Clock{MHz: 1980, Cycle0: 500_000_000_000 + uint64(sm)*1_000_003_007, Ns0: DefaultNs0, TickNs: 32}
}

func (c *Clock) tick() int64 {
	if c.TickNs == 0 {
		return 32
	}
	return int64(c.TickNs)
}

// NsAt returns the exact (unquantised) globaltimer at cycle cy, as whole ns
// and a fraction in [0, 1).
func (c *Clock) NsAt(cy uint64) (int64, float64) {
	d := float64(int64(cy-c.Cycle0)) * 1000 / c.MHz
	whole := math.Floor(d)
	return int64(c.Ns0) + int64(whole), d - whole
}

// anchor returns the pair the device records when it starts spinning at
// cycle cy: the first globaltimer tick after cy, and the cycle counter at
// that instant (rounded, plus jitter).
func (c *Clock) anchor(cy uint64, jitter int64) (gt, clk uint64) {
	tick := c.tick()
	ns0 := int64(c.Ns0)
	base := ns0 - ns0%tick
	rel := float64(ns0%tick) + float64(int64(cy-c.Cycle0))*1000/c.MHz
	k := int64(math.Floor(rel/float64(tick))) + 1
	t := base + k*tick
	at := math.Round(float64(t-ns0) * c.MHz / 1000)
	return uint64(t), c.Cycle0 + uint64(int64(at)+jitter)
}

// Launch is an emulated traced launch. Set the fields, add warps with
// [Launch.Warp] (or set Generate), then call [Launch.Capture].
type Launch struct {
	Kernel   string
	Grid     [3]uint32
	Block    [3]uint32
	Capacity uint32
	Mode     trace.Mode // "" means stop
	Names    []trace.Name
	// Version is the record format written (docs/FORMAT.md section 4); 0
	// means raw.FormatVersion. The launches of one capture share it.
	Version int
	// SMs spreads CTAs over SMs: a warp's SM is its CTA's linear index
	// modulo SMs unless the script sets it. 0 means 132.
	SMs    uint32
	Clocks map[uint32]Clock // per SM; missing SMs use DefaultClock
	// Generate, when set, scripts each warp slot at write time instead of
	// the warps added with [Launch.Warp], so a capture of any size streams
	// with one warp in memory. w arrives reset, with its location set.
	Generate func(w *Warp)

	warps map[uint64]*Warp
}

// Warp is the script of one warp slot: its events with explicit SM cycle
// times, in program order, and how it ends.
type Warp struct {
	CTA  [3]uint32
	Warp uint32
	Slot uint64
	SM   uint32
	// StartCycle is the cycle at which the warp's tracer is constructed
	// (its start anchor is taken at the next globaltimer tick); 0 means
	// "just early enough before the first event".
	StartCycle uint64
	// EndCycle is the cycle at which the tracer is destroyed (the end
	// anchor is taken at the next tick); 0 means just after the last event.
	EndCycle uint64
	// Unfinished leaves the warp as a hung or faulted one: no count, no end
	// anchor, flag bit 1 clear.
	Unfinished bool
	// Unstored lists events (by number, from 0) whose records were never
	// stored, as for the pairs an iket::Batch still held in registers when
	// the warp hung. Only on an Unfinished warp: a finished one stored them.
	Unstored []int
	// NoHeaderRole leaves the role out of the header's flags, as a capture
	// from before format 1's role bits (or a corrupt one) would.
	NoHeaderRole bool
	// NeverStarted leaves the slot zero, as for a warp that never ran.
	NeverStarted bool
	// LanesDiverged sets header flag bit 2 at exit, as the device does when
	// the lanes leaving the kernel together had recorded different numbers
	// of events. The records stay as scripted (script overwritten records
	// with [Warp.Raw] if a test needs them). Not allowed on an Unfinished
	// warp: the flag is set at exit.
	LanesDiverged bool
	// SaturateAt, when not 0, is the event number at which the warp's
	// cursor reaches its limit (the device's is about 2^29 records; tests
	// use small numbers). Events from that one on are written at the
	// saturated cursor: in wrap mode they overwrite slot SaturateAt mod
	// capacity; in stop mode slot SaturateAt when it is inside the buffer,
	// else nowhere, like every dropped event. A finished warp that
	// reached the limit has count SaturateAt and header flag bit 3 set.
	SaturateAt uint32
	// Side lists events (by number, from 0) recorded while the warp's lane
	// 0 was not among the recording lanes (format 3): the i-th is stored,
	// in stop mode, at record capacity-1-i while i < capacity (a wrap build
	// stores none), and a finished warp's tail word counts them (at most
	// capacity + 1) and, in its high half, SideLanes (1 when 0), the lanes
	// that stored them. The header's count and SaturateAt are lane 0's
	// events only.
	Side      []int
	SideLanes uint32

	l      *Launch
	events []rec
	err    error
}

type rec struct {
	kind          trace.Kind
	name, payload uint16
	cycle         uint64
}

// Names builds a name table from "KIND name" entries, ids in order from 1.
func Names(spec ...string) ([]trace.Name, error) {
	table := "iket-names 1\n" + strings.Join(spec, "\n") + "\n"
	names, err := trace.ParseNameTable(table)
	if err != nil {
		return nil, fmt.Errorf("emu names: %w", err)
	}
	return names, nil
}

// MustNames is [Names] that panics on a malformed spec (for test tables).
func MustNames(spec ...string) []trace.Name {
	n, err := Names(spec...)
	if err != nil {
		panic(err)
	}
	return n
}

// ID returns the id of name, or 0 when the table lacks it.
func (l *Launch) ID(name string) uint16 {
	for _, n := range l.Names {
		if n.Text == name {
			return n.ID
		}
	}
	return 0
}

// WarpsPerCTA returns ceil(threads per CTA / 32).
func (l *Launch) WarpsPerCTA() uint32 {
	t := max(l.Block[0], 1) * max(l.Block[1], 1) * max(l.Block[2], 1)
	return (t + 31) / 32
}

// Slots returns the launch's number of warp slots.
func (l *Launch) Slots() uint64 {
	g := l.grid()
	return uint64(g[0]) * uint64(g[1]) * uint64(g[2]) * uint64(l.WarpsPerCTA())
}

func (l *Launch) grid() [3]uint32 {
	return [3]uint32{max(l.Grid[0], 1), max(l.Grid[1], 1), max(l.Grid[2], 1)}
}

func (l *Launch) version() int {
	if l.Version == 0 {
		return raw.FormatVersion
	}
	return l.Version
}

func (l *Launch) mode() trace.Mode {
	if l.Mode == "" {
		return trace.ModeStop
	}
	return l.Mode
}

// Clock returns SM sm's clock model.
func (l *Launch) Clock(sm uint32) Clock {
	if c, ok := l.Clocks[sm]; ok {
		return c
	}
	return DefaultClock(sm)
}

// locate fills w's location for a slot.
func (l *Launch) locate(w *Warp, slot uint64) {
	g := l.grid()
	wpc := uint64(l.WarpsPerCTA())
	cta := slot / wpc
	w.l, w.Slot, w.Warp = l, slot, uint32(slot%wpc)
	w.CTA = [3]uint32{uint32(cta % uint64(g[0])), uint32(cta / uint64(g[0]) % uint64(g[1])), uint32(cta / (uint64(g[0]) * uint64(g[1])))}
	sms := l.SMs
	if sms == 0 {
		sms = 132
	}
	w.SM = uint32(cta % uint64(sms))
}

// Warp returns the script of the warp at (cta, warp), creating it. It does
// not check bounds; Capture reports a warp outside the launch.
func (l *Launch) Warp(cta [3]uint32, warp uint32) *Warp {
	g := l.grid()
	slot := (uint64(cta[0])+uint64(g[0])*(uint64(cta[1])+uint64(g[1])*uint64(cta[2])))*uint64(l.WarpsPerCTA()) + uint64(warp)
	if w, ok := l.warps[slot]; ok {
		return w
	}
	if l.warps == nil {
		l.warps = map[uint64]*Warp{}
	}
	w := &Warp{}
	l.locate(w, slot)
	w.CTA, w.Warp = cta, warp // keep what was asked, even if out of range
	l.warps[slot] = w
	return w
}

// Reset empties the script, keeping the slices' memory and the location.
func (w *Warp) Reset() {
	*w = Warp{CTA: w.CTA, Warp: w.Warp, Slot: w.Slot, SM: w.SM, l: w.l, events: w.events[:0]}
}

// Len returns the number of events scripted.
func (w *Warp) Len() int { return len(w.events) }

func (w *Warp) id(name string) uint16 {
	id := w.l.ID(name)
	if id == 0 && w.err == nil {
		w.err = fmt.Errorf("warp %d: name %q is not in the launch's name table", w.Slot, name)
	}
	return id
}

// Raw appends a record with any kind and id (for malformed input).
func (w *Warp) Raw(k trace.Kind, id, payload uint16, cycle uint64) *Warp {
	w.events = append(w.events, rec{kind: k, name: id, payload: payload, cycle: cycle})
	return w
}

// Push appends a range_push(name, payload) at cycle.
func (w *Warp) Push(name string, payload uint16, cycle uint64) *Warp {
	return w.Raw(trace.KindPush, w.id(name), payload, cycle)
}

// Pop appends a plain range_pop() at cycle.
func (w *Warp) Pop(cycle uint64) *Warp { return w.Raw(trace.KindPop, 0, 0, cycle) }

// Next records a NEXT (format version 2): the innermost push closes and a
// push of name opens at one instant, as range_next records it.
func (w *Warp) Next(name string, payload uint16, cycle uint64) *Warp {
	return w.Raw(trace.KindNext, w.id(name), payload, cycle)
}

// PopNamed appends a range_pop(name) at cycle.
func (w *Warp) PopNamed(name string, cycle uint64) *Warp {
	return w.Raw(trace.KindPop, w.id(name), 0, cycle)
}

// Start appends a range_start(name, payload) at cycle.
func (w *Warp) Start(name string, payload uint16, cycle uint64) *Warp {
	return w.Raw(trace.KindStart, w.id(name), payload, cycle)
}

// End appends a range_end(name, payload) at cycle.
func (w *Warp) End(name string, payload uint16, cycle uint64) *Warp {
	return w.Raw(trace.KindEnd, w.id(name), payload, cycle)
}

// Mark appends a mark(name, payload) at cycle.
func (w *Warp) Mark(name string, payload uint16, cycle uint64) *Warp {
	return w.Raw(trace.KindMark, w.id(name), payload, cycle)
}

// Role appends a set_role(name) at cycle.
func (w *Warp) Role(name string, cycle uint64) *Warp {
	return w.Raw(trace.KindRole, w.id(name), 0, cycle)
}

// Meta returns the launch's metadata as the runtime would record it.
func (l *Launch) Meta() trace.LaunchMeta {
	return trace.LaunchMeta{
		Kernel: l.Kernel, Grid: l.grid(), Block: l.Block,
		WarpsPerCTA: l.WarpsPerCTA(), Warps: l.Slots(),
		Capacity: l.Capacity, Mode: l.mode(), Names: l.Names,
	}
}

// jitter returns a deterministic value in [-maxJ, maxJ] for a slot and
// anchor.
func jitter(slot uint64, which uint64, maxJ uint64) int64 {
	if maxJ == 0 {
		return 0
	}
	x := slot*0x9e3779b97f4a7c15 + which*0xbf58476d1ce4e5b9
	x ^= x >> 31
	x *= 0x94d049bb133111eb
	x ^= x >> 29
	return int64(x%(2*maxJ+1)) - int64(maxJ)
}

// encode writes w's slot (len(b) == stride) as the device would leave it.
func (l *Launch) encode(w *Warp, b []byte) error {
	clear(b)
	if w == nil || w.NeverStarted {
		return nil
	}
	if w.err != nil {
		return w.err
	}
	if w.Unfinished && w.LanesDiverged {
		return fmt.Errorf("warp %d: lanes diverged on an unfinished warp (the flag is set at exit)", w.Slot)
	}
	if len(w.Unstored) > 0 && !w.Unfinished {
		return fmt.Errorf("warp %d: unstored events on a finished warp (a Batch stores its pairs before the warp ends)", w.Slot)
	}
	unstored := make(map[int]bool, len(w.Unstored))
	for _, i := range w.Unstored {
		if i < 0 || i >= len(w.events) {
			return fmt.Errorf("warp %d: unstored event %d of %d", w.Slot, i, len(w.events))
		}
		unstored[i] = true
	}
	side := make(map[int]bool, len(w.Side))
	for _, i := range w.Side {
		if i < 0 || i >= len(w.events) {
			return fmt.Errorf("warp %d: side event %d of %d", w.Slot, i, len(w.events))
		}
		side[i] = true
	}
	if len(side) > 0 && l.version() < 3 {
		return fmt.Errorf("warp %d: side events need format 3, the launch has %d", w.Slot, l.version())
	}
	ck := l.Clock(w.SM)
	if !(ck.MHz > 0) {
		return fmt.Errorf("warp %d: sm %d clock of %g MHz", w.Slot, w.SM, ck.MHz)
	}
	ev := w.events
	for i := 1; i < len(ev); i++ {
		if ev[i].cycle < ev[i-1].cycle {
			return fmt.Errorf("warp %d: event %d at cycle %d is before event %d at %d", w.Slot, i, ev[i].cycle, i-1, ev[i-1].cycle)
		}
	}
	// Cycles the start anchor can take after the constructor's entry.
	lead := uint64(math.Ceil(float64(ck.tick())*ck.MHz/1000)) + ck.JitterCycles + 2
	start := w.StartCycle
	if start == 0 {
		start = 1_000_000 + ck.Cycle0
		if len(ev) > 0 {
			if ev[0].cycle < lead {
				return fmt.Errorf("warp %d: first event at cycle %d leaves no room for the start anchor (%d cycles)", w.Slot, ev[0].cycle, lead)
			}
			start = ev[0].cycle - lead
		}
	}
	sgt, sclk := ck.anchor(start, jitter(w.Slot, 1, ck.JitterCycles))
	if len(ev) > 0 && ev[0].cycle < sclk {
		return fmt.Errorf("warp %d: first event at cycle %d precedes the start anchor at cycle %d (constructor at %d)", w.Slot, ev[0].cycle, sclk, start)
	}
	h := raw.WarpHeader{
		Magic: raw.WarpMagic, SM: w.SM, CTA: w.CTA, Warp: w.Warp,
		StartGlobaltimer: sgt, StartClock: sclk, Flags: raw.FlagStarted,
	}
	for _, e := range ev { // set_role also writes the role into the flags
		if e.kind == trace.KindRole && !w.NoHeaderRole {
			h.Flags = raw.FlagStarted | uint32(e.name&raw.FlagRoleMask)<<raw.FlagRoleShift
		}
	}
	capa := uint64(l.Capacity)
	recs := b[raw.WarpHeaderSize:]
	wrap := l.mode() == trace.ModeWrap
	sat := uint64(w.SaturateAt)
	var mains, sides uint64 // lane 0's events and the side events so far
	for i, e := range ev {
		r := raw.EncodeRecord(l.version(), uint8(e.kind), e.name, e.payload, e.cycle)
		if side[i] {
			si := sides
			sides++
			if !wrap && si < capa && !unstored[i] {
				binary.LittleEndian.PutUint64(recs[(capa-1-si)*raw.RecordSize:], uint64(r))
			}
			continue
		}
		pos := mains // the cursor, in records
		mains++
		if sat != 0 {
			pos = min(pos, sat)
		}
		idx := pos
		if wrap {
			idx = pos % capa
		} else if idx >= capa {
			continue // the device's store is predicated off past capacity
		}
		if unstored[i] {
			continue
		}
		binary.LittleEndian.PutUint64(recs[idx*raw.RecordSize:], uint64(r))
	}
	if sides > 0 && !w.Unfinished { // written at exit
		lanes := w.SideLanes
		if lanes == 0 {
			lanes = 1
		}
		raw.EncodeTail(recs[capa*raw.RecordSize:], uint32(min(sides, capa+1)), lanes)
	}
	if !w.Unfinished {
		end := w.EndCycle
		if end == 0 {
			end = sclk + 1
			if len(ev) > 0 {
				end = ev[len(ev)-1].cycle + 1
			}
		}
		if len(ev) > 0 && end < ev[len(ev)-1].cycle {
			return fmt.Errorf("warp %d: end at cycle %d precedes the last event at %d", w.Slot, end, ev[len(ev)-1].cycle)
		}
		if len(ev) > math.MaxUint32 {
			return fmt.Errorf("warp %d: %d events overflow the 32-bit count", w.Slot, len(ev))
		}
		h.EndGlobaltimer, h.EndClock = ck.anchor(end, jitter(w.Slot, 2, ck.JitterCycles))
		h.Count = uint32(mains)
		h.Flags |= raw.FlagFinished
		if sat != 0 && mains >= sat {
			h.Count = w.SaturateAt
			h.Flags |= raw.FlagCountSaturated
		}
		if w.LanesDiverged {
			h.Flags |= raw.FlagLanesDiverged
		}
	}
	raw.EncodeWarpHeader(b, &h)
	return nil
}

// check reports a launch the emulator cannot lay out.
func (l *Launch) check() error {
	m := l.Meta()
	switch {
	case l.Capacity == 0 || l.Capacity > raw.MaxCapacity:
		return fmt.Errorf("emu launch %s: capacity %d", l.Kernel, l.Capacity)
	case m.Mode == trace.ModeWrap && l.Capacity&(l.Capacity-1) != 0:
		return fmt.Errorf("emu launch %s: wrap mode needs a power-of-two capacity, have %d", l.Kernel, l.Capacity)
	}
	for slot, w := range l.warps {
		if slot >= l.Slots() || w.Warp >= l.WarpsPerCTA() {
			return fmt.Errorf("emu launch %s: warp (cta %v, warp %d) outside the launch", l.Kernel, w.CTA, w.Warp)
		}
	}
	return nil
}

// reader streams a launch's warp buffers slot by slot.
type reader struct {
	l    *Launch
	slot uint64
	buf  []byte
	pos  int
	gen  Warp
}

func (r *reader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if r.pos == len(r.buf) {
			if r.slot == r.l.Slots() {
				if n == 0 {
					return 0, io.EOF
				}
				return n, nil
			}
			w := r.l.warps[r.slot]
			if r.l.Generate != nil {
				r.gen.Reset()
				r.l.locate(&r.gen, r.slot)
				r.l.Generate(&r.gen)
				w = &r.gen
			}
			if err := r.l.encode(w, r.buf); err != nil {
				return n, fmt.Errorf("emu launch %s: %w", r.l.Kernel, err)
			}
			r.slot++
			r.pos = 0
		}
		c := copy(p[n:], r.buf[r.pos:])
		r.pos += c
		n += c
	}
	return n, nil
}

// Write writes a capture of the launches to w, streaming the warp buffers.
func Write(w io.Writer, ls ...*Launch) error {
	meta := trace.Meta{Tool: "iket-emu", Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Device: &trace.Device{Name: "emulated", MaxSMClockMHz: 1980}}
	bufs := make([]io.Reader, len(ls))
	for i, l := range ls {
		if err := l.check(); err != nil {
			return err
		}
		if v := l.version(); i == 0 {
			meta.Version = v
		} else if v != meta.Version {
			return fmt.Errorf("emu write: launch %d records format version %d, launch 0 version %d: one capture holds one version", i, v, meta.Version)
		}
		meta.Launches = append(meta.Launches, l.Meta())
		st := raw.Stride(l.Capacity)
		bufs[i] = &reader{l: l, buf: make([]byte, st), pos: int(st)}
	}
	if err := trace.WriteCapture(w, &meta, bufs); err != nil {
		return fmt.Errorf("emu write: %w", err)
	}
	return nil
}

// Capture returns the bytes of a capture of the launches.
func Capture(ls ...*Launch) ([]byte, error) {
	var b bytes.Buffer
	if err := Write(&b, ls...); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Capture returns the bytes of a capture holding only l.
func (l *Launch) Capture() ([]byte, error) { return Capture(l) }

// Read parses capture bytes, for tests: trace.Read over a bytes.Reader.
func Read(data []byte) (*trace.Capture, error) {
	return trace.Read(bytes.NewReader(data), int64(len(data)))
}
