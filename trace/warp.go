package trace

import "fmt"

// This file holds the decoded, validated form of a launch, produced by a
// Decoder (decode.go). The perfetto exporter, stats and checks read only
// these types.

// Event is one decoded event of a warp, in program order.
type Event struct {
	// hi is the record's high word: kind<<29 | name<<16 | payload, as
	// docs/FORMAT.md packs them (one store per event instead of three).
	hi     uint32
	cycles uint64 // unwrapped SM cycle count
	time   int64  // ns on the launch's common timeline
}

// NewEvent builds an Event; decoders and tests use it. Like a record, it
// keeps the kind's low 3 bits and the name's low 13 bits.
func NewEvent(k Kind, name, payload uint16, cycles uint64, ns int64) Event {
	return Event{hi: uint32(k&7)<<29 | uint32(name&0x1fff)<<16 | uint32(payload), cycles: cycles, time: ns}
}

// Kind returns the event's kind.
func (e Event) Kind() Kind { return Kind(e.hi >> 29) }

// Name returns the event's name id (0 on an unnamed pop).
func (e Event) Name() uint16 { return uint16(e.hi>>16) & 0x1fff }

// Payload returns the event's 16-bit payload.
func (e Event) Payload() uint16 { return uint16(e.hi) }

// Cycles returns the event's unwrapped SM cycle count.
func (e Event) Cycles() uint64 { return e.cycles }

// Time returns the event's time in ns on the common timeline.
func (e Event) Time() int64 { return e.time }

// RangeFlags qualify a range whose recording was incomplete.
type RangeFlags uint8

// Range flags.
const (
	// RangeUnclosed: the warp ended (or its record did) with the range open;
	// End is the warp's last event.
	RangeUnclosed RangeFlags = 1 << iota
	// RangeTruncated: the range's begin was lost to a wrapped buffer; Start is
	// the warp's first recorded event.
	RangeTruncated
)

// Range is one paired range of a warp.
type Range struct {
	Name        uint16
	Payload     uint16
	Start, End  int64 // ns
	StartCycles uint64
	EndCycles   uint64
	// Depth is the push/pop nesting depth (0 = outermost). Async ranges
	// (start/end) have Depth 0.
	Depth int32
	// Async is true for start/end ranges, which may overlap on one warp.
	Async bool
	// Lane is, for an async range, the smallest lane index such that no other
	// async range of the warp on that lane overlaps it; exporters draw one
	// child track per lane.
	Lane  int32
	Flags RangeFlags
}

// Duration returns End-Start in ns.
func (r *Range) Duration() int64 { return r.End - r.Start }

// Mark is one instant event (MARK) of a warp.
type Mark struct {
	Name    uint16
	Payload uint16
	Time    int64
	Cycles  uint64
}

// Warp is one decoded warp. The slices are owned by the Decoder that filled
// it and are valid until its next call.
type Warp struct {
	Launch    int    // launch index in the capture
	Slot      uint64 // warp slot in the launch
	SM        uint32
	CTA       [3]uint32
	Warp      uint32 // within the CTA
	CTALinear uint64
	// Role is the name id of the warp's role (its last ROLE event), 0 = none.
	Role     uint16
	Started  bool
	Finished bool
	// Count is the events attempted; Stored are in Events; Dropped = Count -
	// Stored (exact, 0 when Count <= capacity, unless CountSaturated).
	Count   uint64
	Stored  int
	Dropped uint64
	// CountSaturated: the warp's event counter saturated (header flag bit
	// 3), so Count and Dropped are lower bounds: at least Count events were
	// attempted and at least Dropped of them are missing. In wrap mode the
	// ring slots the saturated cursor kept overwriting are left out of
	// Stored (their order is unknown).
	CountSaturated bool
	// Side is how many of Count were side events (format 3): recorded while
	// the warp's lane 0 was not among the lanes recording, stored apart by
	// the lowest lane and merged into Events by time. SideDropped of them
	// were not stored (a wrap build keeps none; a full buffer drops them as
	// it drops lane 0's).
	Side        uint64
	SideDropped uint64
	// SideLanes is how many lanes stored side events (format 3). Each
	// lane's go downward from the last record with a cursor of its own, so
	// with more than one, records may have overwritten each other: strict
	// decoding then reports a [DivergedLanes] violation, and
	// [Warp.Overwritten] says so.
	SideLanes uint32
	// LanesDiverged (format 1 and 2 captures): lanes of the warp that left the kernel together had
	// recorded different numbers of events (header flag bit 2), so some
	// records may have been overwritten by others: one of its records
	// appears twice (a stop-mode warp whose records are all distinct has
	// LanesAhead instead). The warp is decoded as usual; in strict mode it
	// also has a [DivergedLanes] violation.
	LanesDiverged bool
	// LanesAhead (format 1 and 2 captures): the header says the lanes recorded different numbers of
	// events, but no record appears twice, so the lanes that recorded more
	// did so after the others' last event and nothing was overwritten (a
	// mark by lane 0 alone at the end). The warp is trusted. Lanes that
	// record apart in two groups that never record together again can
	// still lose records unseen (format 3 has no such rule).
	LanesAhead bool
	// Beyond is, for a warp that did not finish, how many records were
	// stored after its first unwritten slot, where its events are taken to
	// end: a hang left holes, such as pairs an iket::Batch held in
	// registers. They are not decoded; the [NotFinished] violation says so.
	Beyond int
	// Trimmed is how many of the Stored events [Options.TrimCommonWindow]
	// left out of Events (they fell before the launch's common window).
	Trimmed int
	// BadTimes: the warp's times cannot be placed on the timeline: an
	// event's clock unwrapped to before its start anchor or past its exit
	// anchor (a gap over 2^32 cycles between two events, or a corrupt
	// record), or its anchors convert to a negative time or an end before
	// its start (corrupt anchors). A [BadRecord] violation says which;
	// [Warp.LeftOut] says so.
	BadTimes bool
	// First and Last are the ns times of the warp's start and end anchors.
	First, Last int64
	Events      []Event
	Ranges      []Range
	Marks       []Mark
	// Violations are the warp's first [MaxWarpViolations] violations;
	// MoreViolations counts the others.
	Violations     []Violation
	MoreViolations int
}

// ViolationKind classifies a pairing or recording problem.
type ViolationKind uint8

// Violation kinds.
const (
	PopEmpty      ViolationKind = iota + 1 // pop (or NEXT) with no open push
	PopMismatch                            // named pop closes another name
	UnclosedRange                          // push or start still open at the warp's end
	EndUnknown                             // end with no open start of that token
	UnknownName                            // record names an id outside the table
	WrongNameKind                          // e.g. a MARK name used in a push
	BadRecord                              // kind 0 (unwritten), kind 7 in version 1, or time going backwards
	NotFinished                            // warp started but never finished
	DroppedEvents                          // events dropped (an error only in strict mode)
	// UnorderedRecords: a wrap-mode warp that started but never finished
	// filled its ring; count was never written, so the oldest record is
	// unknown and the events cannot be ordered. They are not decoded.
	UnorderedRecords
	// DivergedLanes (strict mode only): the warp's lanes recorded different
	// numbers of events, so records may have been overwritten
	// ([Warp.LanesDiverged]).
	DivergedLanes
	// SaturatedCount (strict mode only): the warp's event counter
	// saturated, so its count and drops are lower bounds
	// ([Warp.CountSaturated]).
	SaturatedCount
)

var violationNames = [...]string{"", "pop-empty", "pop-mismatch", "unclosed", "end-unknown",
	"unknown-name", "wrong-name-kind", "bad-record", "not-finished", "dropped", "unordered",
	"lanes-diverged", "count-saturated"}

func (k ViolationKind) String() string {
	if int(k) < len(violationNames) && k > 0 {
		return violationNames[k]
	}
	return "violation"
}

// Violation is one problem found in a warp, with where it is. It is an error.
type Violation struct {
	Kind   ViolationKind
	Launch int
	Slot   uint64
	SM     uint32
	CTA    [3]uint32
	Warp   uint32
	Index  int    // event index in the warp's stored events, -1 if none
	Name   string // name involved, if any
	Detail string
}

// Overwritten says why some of the warp's records may have been written
// over by others, or is empty: its lanes disagreed (formats 1 and 2,
// [Warp.LanesDiverged]) or several lanes stored side events (format 3,
// [Warp.SideLanes]). [Analyze] and the exports leave such a warp out, and
// [Warp.LeftOut] says so.
func (w *Warp) Overwritten() string {
	switch {
	case w.LanesDiverged:
		return "lanes recorded different numbers of events"
	case w.SideLanes > 1:
		return fmt.Sprintf("%d lanes stored side events (events without lane 0)", w.SideLanes)
	}
	return ""
}

// overwritten reports whether [Warp.Overwritten] has a reason.
func (w *Warp) overwritten() bool { return w.LanesDiverged || w.SideLanes > 1 }

// LeftOut is the note a reader gives when it leaves out a warp whose
// records may be overwritten ("warp 12 (sm 3, cta 7,0,0, warp 1) left out:
// REASON, so records may be overwritten") or whose times cannot be placed
// ([Warp.BadTimes]), or empty for a warp that is kept.
func (w *Warp) LeftOut() string {
	if why := w.Overwritten(); why != "" {
		return w.Ref().String() + " left out: " + why + ", so records may be overwritten"
	}
	if w.BadTimes {
		return w.Ref().String() + " left out: its clock readings lie outside its start and exit anchors, or its anchors are no times, so its times cannot be placed"
	}
	return ""
}

// Equal reports whether e and o are the same event (all fields equal); it
// also lets go-cmp compare values holding Events.
func (e Event) Equal(o Event) bool { return e == o }

// String formats the event for debugging and test output.
func (e Event) String() string {
	return fmt.Sprintf("%s name %d payload %d cycles %d ns %d", e.Kind(), e.Name(), e.Payload(), e.cycles, e.time)
}
