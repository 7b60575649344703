package perfetto

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/iket-trace/iket/perfetto/internal/pb"
)

// CheckError is one import-rule violation found by [CheckValid], with where
// it is: the packet's index in the file (packets inside compressed_packets
// count in order) and the track involved, when there is one.
type CheckError struct {
	Packet int
	Track  uint64
	Name   string // the track's name, when known
	Msg    string
}

func (e *CheckError) Error() string {
	if e.Track != 0 {
		return fmt.Sprintf("packet %d (track %#x %q): %s", e.Packet, e.Track, e.Name, e.Msg)
	}
	return fmt.Sprintf("packet %d: %s", e.Packet, e.Msg)
}

// ErrInvalidTrace is matched (errors.Is) by every error of [CheckValid] that
// is about the trace's content rather than reading it.
var ErrInvalidTrace = errors.New("invalid perfetto trace")

// Is lets errors.Is(err, ErrInvalidTrace) match.
func (e *CheckError) Is(target error) bool { return target == ErrInvalidTrace }

// CheckValid reads a Perfetto trace and checks it against the rules the
// trace processor applies on import (docs/PERFETTO-EXPORT.md lists them):
// sequence ids, timestamps (converted from sequence-scoped and incremental
// clocks through their clock snapshots), trace packet defaults, interning
// per sequence, unique track uuids with
// parents declared first, unique sibling names unless merging is off,
// counter events only on counter tracks, per-track LIFO balance of slices
// after the processor's stable sort by timestamp, depth at most 512, and
// flows that start once and end once, later. It returns nil or the
// errors.Join of at most 100 [*CheckError] values. It holds every track
// event in memory (for the sort), so it is meant for tests and for checking
// a file, not for the writer's hot path.
func CheckValid(r io.Reader) error {
	c := newChecker()
	if err := c.read(bufio.NewReaderSize(r, 1<<16), 0); err != nil {
		return err
	}
	c.finish()
	return c.err()
}

type chkTrack struct {
	uuid, parent uint64
	name         string
	counter      bool
	mergeNone    bool
	events       []chkEvent
}

type chkEvent struct {
	ts     uint64
	typ    pb.TrackEvent_Type
	packet int
}

type chkSeq struct {
	cleared bool
	names   map[uint64]bool
	annots  map[uint64]bool
	// trace_packet_defaults (incremental state: cleared with it)
	defClock uint32
	defTrack uint64
	hasTrack bool
	// sequence-scoped clocks (not incremental state)
	clocks map[uint32]*chkClock
}

// chkClock is a sequence-scoped clock: its offset to BOOTTIME and, when
// incremental, the running value its deltas add to.
type chkClock struct {
	incremental bool
	last        int64
	offset      int64
}

type chkFlow struct {
	outs, ins []uint64 // timestamps of the events naming it in flow_ids, terminating_flow_ids
	packet    int      // first packet naming it
}

type checker struct {
	packets  int
	tracks   map[uint64]*chkTrack
	order    []uint64
	siblings map[uint64]map[string]int // parent -> name -> count of merging siblings
	seqs     map[uint32]*chkSeq
	flows    map[uint64]*chkFlow
	errs     []error
	more     int
	pkt      pb.TracePacket
}

func newChecker() *checker {
	return &checker{
		tracks:   make(map[uint64]*chkTrack),
		siblings: make(map[uint64]map[string]int),
		seqs:     make(map[uint32]*chkSeq),
		flows:    make(map[uint64]*chkFlow),
	}
}

func (c *checker) bad(packet int, track uint64, format string, a ...any) {
	if len(c.errs) >= 100 {
		c.more++
		return
	}
	name := ""
	if t := c.tracks[track]; t != nil {
		name = t.name
	}
	c.errs = append(c.errs, &CheckError{Packet: packet, Track: track, Name: name, Msg: fmt.Sprintf(format, a...)})
}

func (c *checker) err() error {
	if len(c.errs) == 0 {
		return nil
	}
	errs := c.errs
	if c.more > 0 {
		errs = append(errs, fmt.Errorf("and %d more problems: %w", c.more, ErrInvalidTrace))
	}
	return errors.Join(errs...)
}

// read parses a stream of Trace.packet fields. depth > 0 inside
// compressed_packets.
func (c *checker) read(r *bufio.Reader, depth int) error {
	var body []byte
	for {
		tagv, err := readVarint(r)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("check trace: packet %d: read tag: %w", c.packets, err)
		}
		num, typ := protowire.DecodeTag(tagv)
		if num != fTracePacket || typ != protowire.BytesType {
			return fmt.Errorf("check trace: packet %d: field %d wire type %d, want Trace.packet (1, bytes): %w", c.packets, num, typ, ErrInvalidTrace)
		}
		n, err := readVarint(r)
		if err != nil {
			return fmt.Errorf("check trace: packet %d: read length: %w", c.packets, err)
		}
		if n > 1<<28 {
			return fmt.Errorf("check trace: packet %d: length %d: %w", c.packets, n, ErrInvalidTrace)
		}
		body = slices.Grow(body[:0], int(n))[:n]
		if _, err := io.ReadFull(r, body); err != nil {
			return fmt.Errorf("check trace: packet %d: read %d bytes: %w", c.packets, n, err)
		}
		c.pkt.Reset()
		if err := proto.Unmarshal(body, &c.pkt); err != nil {
			return fmt.Errorf("check trace: packet %d: %w: %w", c.packets, err, ErrInvalidTrace)
		}
		if z := c.pkt.GetCompressedPackets(); z != nil {
			if depth > 0 {
				c.bad(c.packets, 0, "compressed_packets nested in compressed_packets")
				continue
			}
			zr, err := zlib.NewReader(bytes.NewReader(z))
			if err != nil {
				return fmt.Errorf("check trace: packet %d: inflate: %w", c.packets, err)
			}
			raw, err := io.ReadAll(zr)
			if err != nil {
				return fmt.Errorf("check trace: packet %d: inflate: %w", c.packets, err)
			}
			c.packets++
			if err := c.read(bufio.NewReader(bytes.NewReader(raw)), depth+1); err != nil {
				return err
			}
			continue
		}
		c.packet(&c.pkt)
		c.packets++
	}
}

func readVarint(r *bufio.Reader) (uint64, error) {
	var v uint64
	for i := 0; i < 10; i++ {
		b, err := r.ReadByte()
		if err != nil {
			if i > 0 && err == io.EOF {
				return 0, io.ErrUnexpectedEOF
			}
			return 0, err
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return v, nil
		}
	}
	return 0, fmt.Errorf("varint longer than 10 bytes: %w", ErrInvalidTrace)
}

func (c *checker) packet(p *pb.TracePacket) {
	i := c.packets
	seqID := p.GetTrustedPacketSequenceId()
	var seq *chkSeq
	if seqID != 0 {
		seq = c.seqs[seqID]
		if seq == nil {
			seq = &chkSeq{names: map[uint64]bool{}, annots: map[uint64]bool{}, clocks: map[uint32]*chkClock{}}
			c.seqs[seqID] = seq
		}
	}
	flags := p.GetSequenceFlags()
	if seq != nil && flags&seqIncrementalClear != 0 {
		seq.cleared = true
		clear(seq.names)
		clear(seq.annots)
		seq.defClock, seq.defTrack, seq.hasTrack = 0, 0, false
	}
	if d := p.GetTracePacketDefaults(); d != nil {
		if seq == nil {
			c.bad(i, 0, "trace_packet_defaults on a packet without a sequence id")
		} else {
			// New defaults replace the old ones whole.
			seq.defClock = d.GetTimestampClockId()
			ted := d.GetTrackEventDefaults()
			seq.defTrack, seq.hasTrack = ted.GetTrackUuid(), ted != nil && ted.TrackUuid != nil
		}
	}
	if id := p.GetInternedData(); id != nil {
		switch {
		case seq == nil:
			c.bad(i, 0, "interned data on a packet without a sequence id")
		case !seq.cleared:
			c.bad(i, 0, "interned data on sequence %d before a packet cleared its incremental state (ignored by the processor)", seqID)
		case flags&seqNeedsIncremental == 0:
			c.bad(i, 0, "interned data without the NEEDS_INCREMENTAL_STATE flag")
		default:
			for _, n := range id.GetEventNames() {
				if n.GetIid() == 0 {
					c.bad(i, 0, "event name %q interned with iid 0", n.GetName())
				}
				seq.names[n.GetIid()] = true
			}
			for _, n := range id.GetDebugAnnotationNames() {
				if n.GetIid() == 0 {
					c.bad(i, 0, "debug annotation name %q interned with iid 0", n.GetName())
				}
				seq.annots[n.GetIid()] = true
			}
		}
	}
	if cs := p.GetClockSnapshot(); cs != nil {
		c.clockSnapshot(i, seq, cs)
	}
	if td := p.GetTrackDescriptor(); td != nil {
		c.descriptor(i, td)
	}
	// Every timestamp is converted, in file order: an incremental clock's
	// deltas add up whatever the packet holds.
	var ts uint64
	tsOK := false
	if p.Timestamp != nil {
		ts, tsOK = c.timestamp(i, seq, p)
	}
	te := p.GetTrackEvent()
	if te == nil {
		return
	}
	track := te.GetTrackUuid()
	if te.TrackUuid == nil {
		if seq == nil || !seq.hasTrack {
			c.bad(i, 0, "track event names no track and its sequence has no default track")
			return
		}
		track = seq.defTrack
	}
	if seqID == 0 {
		c.bad(i, track, "track event without trusted_packet_sequence_id (dropped by the processor)")
		return
	}
	if p.Timestamp == nil {
		c.bad(i, track, "track event without a timestamp")
		return
	}
	if !tsOK {
		return
	}
	usesIID := te.NameIid != nil
	if te.NameIid != nil && (te.GetNameIid() == 0 || !seq.names[te.GetNameIid()]) {
		c.bad(i, track, "name iid %d not interned on sequence %d", te.GetNameIid(), seqID)
	}
	for _, da := range te.GetDebugAnnotations() {
		if da.NameIid != nil {
			usesIID = true
			if da.GetNameIid() == 0 || !seq.annots[da.GetNameIid()] {
				c.bad(i, track, "debug annotation name iid %d not interned on sequence %d", da.GetNameIid(), seqID)
			}
		}
	}
	// The processor looks interned names up whatever the packet's flags;
	// NEEDS_INCREMENTAL_STATE only makes it skip packets after a loss.
	if usesIID && !seq.cleared {
		c.bad(i, track, "uses interned names on a sequence whose incremental state was never cleared")
	}
	t := c.tracks[track]
	if t == nil {
		c.bad(i, track, "event on track %#x with no descriptor before it", track)
		return
	}
	typ := te.GetType()
	switch typ {
	case pb.TrackEvent_TYPE_COUNTER:
		if !t.counter {
			c.bad(i, t.uuid, "counter event on a track without a CounterDescriptor")
		}
		if te.CounterValue == nil && te.DoubleCounterValue == nil {
			c.bad(i, t.uuid, "counter event without a value")
		}
	case pb.TrackEvent_TYPE_SLICE_BEGIN, pb.TrackEvent_TYPE_SLICE_END, pb.TrackEvent_TYPE_INSTANT:
		if t.counter {
			c.bad(i, t.uuid, "%v on a counter track", typ)
		}
		if typ != pb.TrackEvent_TYPE_SLICE_END && te.NameIid == nil && te.Name == nil {
			c.bad(i, t.uuid, "%v without a name", typ)
		}
	default:
		c.bad(i, t.uuid, "track event of type %v", typ)
	}
	if typ == pb.TrackEvent_TYPE_SLICE_BEGIN || typ == pb.TrackEvent_TYPE_SLICE_END {
		t.events = append(t.events, chkEvent{ts: ts, typ: typ, packet: i})
	}
	if len(te.GetFlowIds())+len(te.GetTerminatingFlowIds()) > 0 && typ != pb.TrackEvent_TYPE_SLICE_BEGIN && typ != pb.TrackEvent_TYPE_INSTANT {
		c.bad(i, t.uuid, "flow ids on a %v event", typ)
	}
	for _, id := range te.GetFlowIds() {
		c.flow(i, t.uuid, id, ts, true)
	}
	for _, id := range te.GetTerminatingFlowIds() {
		c.flow(i, t.uuid, id, ts, false)
	}
}

// clockSnapshot registers a snapshot's sequence-scoped clocks, each with
// its offset to BOOTTIME, which the snapshot must hold (the only path to
// trace time the checker follows).
func (c *checker) clockSnapshot(i int, seq *chkSeq, cs *pb.ClockSnapshot) {
	var boot int64
	haveBoot := false
	for _, k := range cs.GetClocks() {
		if k.GetClockId() == clockBoottime {
			boot, haveBoot = int64(k.GetTimestamp()), true
		}
	}
	for _, k := range cs.GetClocks() {
		id := k.GetClockId()
		if id < 64 || id >= 128 {
			if k.GetIsIncremental() {
				c.bad(i, 0, "clock %d is incremental but not sequence-scoped", id)
			}
			continue
		}
		switch {
		case seq == nil:
			c.bad(i, 0, "sequence-scoped clock %d in a snapshot without a sequence id", id)
			continue
		case !haveBoot:
			c.bad(i, 0, "clock %d in a snapshot without BOOTTIME: no path to trace time", id)
			continue
		case k.GetUnitMultiplierNs() > 1:
			c.bad(i, 0, "clock %d has a unit multiplier the checker does not follow", id)
			continue
		}
		ck := seq.clocks[id]
		if ck == nil {
			ck = &chkClock{incremental: k.GetIsIncremental()}
			seq.clocks[id] = ck
		} else if ck.incremental != k.GetIsIncremental() {
			c.bad(i, 0, "clock %d registered again with is_incremental %t", id, k.GetIsIncremental())
		}
		ck.last = int64(k.GetTimestamp())
		ck.offset = boot - ck.last
	}
}

// timestamp converts packet p's timestamp to trace time (BOOTTIME ns),
// stepping its clock when that is incremental; it reports false, after an
// error, when the processor could not convert it.
func (c *checker) timestamp(i int, seq *chkSeq, p *pb.TracePacket) (uint64, bool) {
	raw := p.GetTimestamp()
	id := p.GetTimestampClockId()
	if id == 0 && seq != nil {
		id = seq.defClock
	}
	var ts int64
	switch {
	case id == 0 || id == clockBoottime:
		if raw >= 1<<63 {
			c.bad(i, 0, "timestamp %d not below 2^63", raw)
			return 0, false
		}
		return raw, true
	case id >= 64 && id < 128:
		var ck *chkClock
		if seq != nil {
			ck = seq.clocks[id]
		}
		if ck == nil {
			c.bad(i, 0, "timestamp on clock %d with no clock snapshot on its sequence before it (dropped by the processor)", id)
			return 0, false
		}
		if ck.incremental {
			ck.last += int64(raw) // a delta, possibly negative
			ts = ck.last + ck.offset
		} else {
			ts = int64(raw) + ck.offset
		}
	default:
		c.bad(i, 0, "timestamp on clock %d, which the checker does not follow", id)
		return 0, false
	}
	if ts < 0 {
		c.bad(i, 0, "timestamp %d ns in trace time is negative", ts)
		return 0, false
	}
	return uint64(ts), true
}

func (c *checker) flow(i int, track, id, ts uint64, out bool) {
	f := c.flows[id]
	if f == nil {
		f = &chkFlow{packet: i}
		c.flows[id] = f
	}
	if out {
		f.outs = append(f.outs, ts)
	} else {
		f.ins = append(f.ins, ts)
	}
	if len(f.outs)+len(f.ins) > 2 {
		c.bad(i, track, "flow %d named by more than two events", id)
	}
}

func (c *checker) descriptor(i int, td *pb.TrackDescriptor) {
	u := td.GetUuid()
	if u == 0 {
		c.bad(i, 0, "track descriptor %q with uuid 0", td.GetName())
		return
	}
	if prev := c.tracks[u]; prev != nil {
		c.bad(i, u, "uuid %#x described twice (%q and %q)", u, prev.name, td.GetName())
		return
	}
	t := &chkTrack{uuid: u, parent: td.GetParentUuid(), name: td.GetName(), counter: td.Counter != nil,
		mergeNone: td.GetSiblingMergeBehavior() == pb.TrackDescriptor_SIBLING_MERGE_BEHAVIOR_NONE}
	if t.parent != 0 && c.tracks[t.parent] == nil {
		c.bad(i, u, "parent %#x not described before its child", t.parent)
	}
	if !t.mergeNone {
		m := c.siblings[t.parent]
		if m == nil {
			m = make(map[string]int)
			c.siblings[t.parent] = m
		}
		m[t.name]++
		if m[t.name] > 1 {
			c.bad(i, u, "sibling tracks named %q under %#x would be merged", t.name, t.parent)
		}
	}
	c.tracks[u] = t
	c.order = append(c.order, u)
}

// finish applies the rules that need every event: per-track slice balance
// after a stable sort by timestamp, and flow endpoints.
func (c *checker) finish() {
	for _, u := range c.order {
		t := c.tracks[u]
		slices.SortStableFunc(t.events, func(a, b chkEvent) int { return cmp.Compare(a.ts, b.ts) })
		depth := 0
		for _, e := range t.events {
			switch e.typ {
			case pb.TrackEvent_TYPE_SLICE_BEGIN:
				depth++
				if depth > maxSliceDepth {
					c.bad(e.packet, u, "slice depth %d exceeds %d", depth, maxSliceDepth)
				}
			case pb.TrackEvent_TYPE_SLICE_END:
				if depth == 0 {
					c.bad(e.packet, u, "slice end at %d with no open slice", e.ts)
					continue
				}
				depth--
			}
		}
		if depth != 0 {
			c.bad(c.packets, u, "%d slices never ended", depth)
		}
		t.events = nil
	}
	ids := make([]uint64, 0, len(c.flows))
	for id := range c.flows {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		f := c.flows[id]
		switch {
		case len(f.outs)+len(f.ins) == 1:
			c.bad(f.packet, 0, "flow %d has one end only", id)
		case len(f.ins) == 2:
			c.bad(f.packet, 0, "flow %d is terminated twice and never started", id)
		case len(f.ins) == 1 && len(f.outs) == 1 && f.ins[0] <= f.outs[0]:
			c.bad(f.packet, 0, "flow %d ends at %d, not after its start at %d", id, f.ins[0], f.outs[0])
		case len(f.outs) == 2 && f.outs[0] == f.outs[1]:
			c.bad(f.packet, 0, "flow %d joins two events at the same time %d", id, f.outs[0])
		}
	}
}
