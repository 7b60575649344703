package perfetto

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/iket-trace/iket/trace"
)

// Options select what the [Writer] emits.
type Options struct {
	// Compress wraps packets in compressed_packets (zlib-framed deflate at
	// its fastest level), in chunks of about 1 MiB: files shrink about 6x;
	// the viewer inflates them on load.
	Compress bool
	// Flows draws arrows from a producer warp's range to the consumer range
	// of the same pipeline stage in the same CTA (docs/PERFETTO-EXPORT.md
	// gives the matching rule).
	Flows bool
	// Counters adds per-CTA counter tracks: warps of each role inside each
	// range, dropped events (about 20 bytes per change of a count).
	Counters bool
	// NoSummary leaves out the launch summary tracks: the mean number of
	// warps running, and of each role inside each range, over time bins,
	// on top of the launch (a few kB per launch).
	NoSummary bool
	// SummaryBins is the number of time bins of each launch summary track
	// (0 means 256). Memory per summary track is 16 bytes per bin.
	SummaryBins int
	// RawCycles adds each range's start_cycles and end_cycles, and each
	// mark's cycles, as debug annotations: the SM clock readings the
	// timestamps were placed from (about 8 bytes per event).
	RawCycles bool
}

// LaunchInfo is what the writer shows about a launch beyond its metadata.
type LaunchInfo struct {
	// Clocks are the launch's per-SM clock fits, summarised in the launch
	// track's description.
	Clocks []trace.ClockFit
	// Window is the launch's common recorded window (wrap mode).
	Window trace.Window
	// Notes are extra lines for the launch track's description.
	Notes []string
}

// Stats counts what a [Writer] wrote.
type Stats struct {
	Launches      int
	Warps         int   // warps with a track of their own (started warps, less the idle ones)
	IdleWarps     int   // started warps with no event but their role, folded (see [Writer.AddWarp])
	Tracks        int   // track descriptors
	Slices        int64 // slice begin/end pairs
	Instants      int64
	CounterEvents int64
	Flows         int64
	// SkippedRanges counts ranges left out: nesting deeper than 512 or more
	// than 256 concurrent async ranges in one warp.
	SkippedRanges int64
	Bytes         int64 // bytes written to the output
}

// ErrClosed is returned by a [Writer] used after [Writer.Close].
var ErrClosed = errors.New("perfetto writer closed")

// ErrOrder is matched (errors.Is) by the errors of calls made out of order:
// a warp outside a launch, warps out of slot order, a launch index reused.
var ErrOrder = errors.New("perfetto writer call out of order")

// Writer streams a Perfetto trace. Call [Writer.BeginLaunch], then
// [Writer.AddWarp] for the launch's warps in slot order, then
// [Writer.EndLaunch]; repeat per launch; then [Writer.Close]. It buffers one
// CTA's warps (to compute its counters and flows) and about 1 MiB of output.
// A Writer is not safe for concurrent use. After an error every call returns
// that error.
type Writer struct {
	out io.Writer
	opt Options
	err error

	buf   []byte // framed packets waiting to be written
	chunk []byte // framed packets waiting to be compressed (Compress)
	zbuf  bytes.Buffer
	zw    *zlib.Writer
	pk    []byte // scratch packet body
	sc    []byte // scratch strings
	desc  []byte // scratch track descriptions

	gpus     map[uint64]string   // GPU track uuids written, with their device uuid
	overflow map[uint64]struct{} // uuids of tracks hashed by overflowTrack
	launches map[int]struct{}
	stats    Stats
	closed   bool
	nextFlow uint64

	// current launch
	in       bool
	li       int
	lm       *trace.LaunchMeta
	seq      uint32
	seqField []byte // trusted_packet_sequence_id field of the launch
	names    iidTable
	annSeen  uint16 // debug annotation names interned, by iid bit
	launchID uint64
	gpuID    uint64
	haveSlot bool
	lastSlot uint64
	smTracks map[uint32]uint64 // SM id -> track uuid, for the SMs written
	launchT0 int64             // earliest time seen in the launch
	haveT0   bool
	problems []string
	more     int // problems past maxProblems, counted only

	cta  ctaBuf
	bd   builder
	sum  summary
	lane []uint64 // lane track uuids of the current warp
	tmpl warpTemplate
	ts   tsDelta
	// hold defers flushing the output while a warp is written, so that a
	// warp whose model fails its check writes nothing.
	hold bool
	// place is where the next launch goes in a merged trace (merge.go);
	// the zero value is a single capture's layout.
	place placement
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer, opt Options) *Writer {
	if opt.SummaryBins <= 0 {
		opt.SummaryBins = 256
	}
	return &Writer{
		out: w, opt: opt,
		buf:      make([]byte, 0, defaultFlushBytes+defaultFlushBytes/4),
		gpus:     make(map[uint64]string),
		launches: make(map[int]struct{}),
		nextFlow: 1,
	}
}

// Stats returns what the writer wrote so far.
func (w *Writer) Stats() Stats { return w.stats }

func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return err
}

// Debug annotation name iids, interned on a sequence when first used. The
// track says a warp's SM, CTA and warp index; none is repeated per event.
const (
	daPayload = iota + 1
	daStartCycles
	daEndCycles
	daCycles
	daIncomplete
	daDropped
	daAttempted
	daStored
	daDetail
)

var annotNames = [...]string{"", "payload", "start_cycles", "end_cycles",
	"cycles", "incomplete", "dropped", "attempted", "stored", "detail"}

// BeginLaunch starts launch launchIndex of meta, described by l (usually
// &meta.Launches[launchIndex]). It writes the GPU track (once per device),
// the launch track and the sequence's first packet.
func (w *Writer) BeginLaunch(meta *trace.Meta, launchIndex int, l *trace.LaunchMeta, info LaunchInfo) error {
	if err := w.ready(); err != nil {
		return err
	}
	if w.in {
		return fmt.Errorf("begin launch %d: launch %d not ended: %w", launchIndex, w.li, ErrOrder)
	}
	if l == nil {
		return fmt.Errorf("begin launch %d: no launch metadata", launchIndex)
	}
	if _, dup := w.launches[launchIndex]; dup || launchIndex < 0 || launchIndex >= 1<<31-1 {
		return fmt.Errorf("begin launch %d: index already written or out of range: %w", launchIndex, ErrOrder)
	}
	w.launches[launchIndex] = struct{}{}
	w.in, w.li, w.lm = true, launchIndex, l
	w.seq = uint32(launchIndex) + 1
	w.seqField = appendVarintField(w.seqField[:0], fPktSequenceID, uint64(w.seq))
	w.names.reset()
	w.annSeen = 0
	w.ts = tsDelta{last: -w.place.shift}
	w.haveSlot, w.haveT0 = false, false
	w.launchT0 = emptyT0(l, info, w.place)
	w.smTracks = make(map[uint32]uint64)
	w.problems, w.more = w.problems[:0], 0
	w.cta.reset()
	w.sum.reset(w.opt.SummaryBins)
	w.sum.floor = -w.place.shift
	w.stats.Launches++

	// First packet: clears incremental state, makes the sequence's
	// timestamps deltas on an incremental clock (clockIncremental, from 0)
	// and gives that clock BOOTTIME's origin.
	w.pk = w.pk[:0]
	w.pk = appendVarintField(w.pk, fPktSequenceID, uint64(w.seq))
	w.pk = appendVarintField(w.pk, fPktSequenceFlags, seqIncrementalClear|seqNeedsIncremental)
	w.pk = appendVarintField(w.pk, fPktFirstOnSequence, 1)
	w.pk = appendDefaults(w.pk, 0)
	w.pk = appendClockSnapshot(w.pk)
	w.emitPacket()

	var dev *trace.Device
	devUUID := "\x00none"
	if meta != nil && meta.Device != nil {
		dev, devUUID = meta.Device, meta.Device.UUID
	}
	key, label := gpuKey(dev), launchIndex
	if w.place.on {
		key, devUUID = w.place.gpu(key, devUUID)
		label = w.place.local
	}
	w.gpuID = gpuTrack(key)
	if u, ok := w.gpus[w.gpuID]; !ok {
		w.gpus[w.gpuID] = devUUID
		name, desc := describeGPU(dev)
		if w.place.on {
			name, desc = w.place.name, w.place.desc+"\n"+desc
		}
		w.track(w.gpuID, 0, int32(w.place.capture), true, true, false, []byte(name), desc)
	} else if u != devUUID {
		return w.fail(fmt.Errorf("begin launch %d: devices %q and %q hash to one GPU track uuid %#x", launchIndex, u, devUUID, w.gpuID))
	}
	w.launchID = w.launchTrack(bLaunch, 0)
	w.track(w.launchID, w.gpuID, int32(label), true, true, false,
		[]byte(fmt.Sprintf("launch %d · %s", label, l.Kernel)), describeLaunch(l, &info))
	return w.err
}

func gpuKey(d *trace.Device) uint64 {
	if d == nil {
		return 0
	}
	h := uint64(14695981039346656037)
	for i := 0; i < len(d.UUID); i++ {
		h = (h ^ uint64(d.UUID[i])) * 1099511628211
	}
	return h
}

func (w *Writer) ready() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return ErrClosed
	}
	return nil
}

// AddWarp adds a decoded warp of the current launch. Warps must come in slot
// order (a CTA's warps are consecutive slots). wp is copied: the caller may
// reuse it at once. Warps that never started get no track.
func (w *Writer) AddWarp(wp *trace.Warp) error {
	if err := w.ready(); err != nil {
		return err
	}
	if !w.in {
		return fmt.Errorf("add warp %d: no launch begun: %w", wp.Slot, ErrOrder)
	}
	if wp.Launch != w.li {
		return fmt.Errorf("add warp %d: it belongs to launch %d, not the current launch %d: %w", wp.Slot, wp.Launch, w.li, ErrOrder)
	}
	if w.haveSlot && wp.Slot <= w.lastSlot {
		return fmt.Errorf("add warp %d of launch %d: after warp %d; warps must come in slot order: %w", wp.Slot, w.li, w.lastSlot, ErrOrder)
	}
	w.haveSlot, w.lastSlot = true, wp.Slot
	if !wp.Started {
		return nil
	}
	if w.cta.n > 0 && wp.CTALinear != w.cta.linear {
		if err := w.flushCTA(); err != nil {
			return w.fail(err)
		}
	}
	w.cta.add(wp)
	return nil
}

// emptyT0 is where a launch's own events go until a warp gives its
// earliest time (all of them, for a launch with no warp to show): at its
// host clock's realtime_before in a merged trace, else at its first SM's
// clock reference, and never before the trace's time 0.
func emptyT0(l *trace.LaunchMeta, info LaunchInfo, p placement) int64 {
	var t int64
	switch {
	case p.align && l.HostClock != nil:
		t = l.HostClock.RealtimeBefore - p.shift
	case len(info.Clocks) > 0:
		t = info.Clocks[0].RefNs
	}
	if t+p.shift < 0 { // the shift is 0 but in a merged trace
		t = -p.shift
	}
	return t
}

// maxProblems bounds the problems a launch track shows; one more instant
// counts the rest.
const maxProblems = 100

// AddProblem records a problem of the current launch (such as a corrupt warp
// slot); the problems appear as instants on the launch track, the first
// maxProblems of them, then one that counts the others.
func (w *Writer) AddProblem(msg string) {
	if len(w.problems) < maxProblems {
		w.problems = append(w.problems, msg)
		return
	}
	w.more++
}

// EndLaunch writes the launch's last CTA, its problems and summary tracks.
func (w *Writer) EndLaunch() error {
	if err := w.ready(); err != nil {
		return err
	}
	if !w.in {
		return fmt.Errorf("end launch: no launch begun: %w", ErrOrder)
	}
	if w.cta.n > 0 {
		if err := w.flushCTA(); err != nil {
			return w.fail(err)
		}
	}
	if w.more > 0 {
		w.problems = append(w.problems, fmt.Sprintf("and %d more problems", w.more))
	}
	if len(w.problems) > 0 {
		t := w.launchT0
		for _, p := range w.problems {
			w.pk = w.pk[:0]
			w.pk = w.packetHead(w.pk, t)
			var iid uint64
			w.pk, iid = w.internKey(w.pk, keyProblem, 1<<daDetail, func(b []byte) []byte { return append(b, "problem"...) })
			var at int
			w.pk, at = openLen(w.pk, fPktTrackEvent)
			w.pk = appendVarintField(w.pk, fTEType, typeInstant)
			w.pk = appendVarintField(w.pk, fTETrackUUID, w.launchID)
			w.pk = appendVarintField(w.pk, fTENameIID, iid)
			w.pk = appendAnnotString(w.pk, daDetail, p)
			w.pk = closeLen(w.pk, at)
			w.emitPacket()
			w.stats.Instants++
		}
	}
	if !w.opt.NoSummary {
		w.writeSummary()
	}
	w.in = false
	w.flushOut(true)
	return w.err
}

// Close ends an open launch, writes what is buffered and returns the first
// error. It does not close the underlying writer.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	if w.err == nil && w.in {
		w.EndLaunch()
	}
	if w.err == nil {
		w.flushChunk()
		w.flushOut(true)
	}
	w.closed = true
	return w.err
}

// appendIntern appends one interned entry (EventName or DebugAnnotationName).
func appendIntern(b []byte, field protowire.Number, iid uint64, name string) []byte {
	b = protowire.AppendTag(b, field, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(1+protowire.SizeVarint(iid)+1+protowire.SizeVarint(uint64(len(name)))+len(name)))
	b = appendVarintField(b, fInternIID, iid)
	return appendStringField(b, fInternName, name)
}

// packetHead appends a packet's timestamp (a delta on the sequence's
// incremental clock) and sequence id.
func (w *Writer) packetHead(b []byte, ts int64) []byte {
	b = appendVarintField(b, fPktTimestamp, w.ts.delta(ts))
	return appendVarintField(b, fPktSequenceID, uint64(w.seq))
}

// internKey returns the iid of name key and b, to which it appended
// interned_data defining it when the sequence has not defined it yet, with
// the debug annotation names of mask ann the sequence lacks; name appends
// the name's text.
func (w *Writer) internKey(b []byte, key uint32, ann uint16, name func([]byte) []byte) ([]byte, uint64) {
	iid := uint64(w.names.lookup(key))
	if iid != 0 {
		if ann&^w.annSeen == 0 {
			return b, iid
		}
		return w.intern(b, 0, ann, nil), iid
	}
	iid = uint64(w.names.add(key))
	return w.intern(b, iid, ann, name), iid
}

// intern appends the one interned_data of a packet, defining event name
// iid (unless 0) and the debug annotation names of mask ann that the
// sequence has not defined yet, and the NEEDS_INCREMENTAL_STATE flag that a
// packet defining iids carries. Annotation names are interned when first
// used, not up front: the trace processor copies a sequence's interned data
// at every new trace packet default, which each warp sets (see
// [Writer.trackDesc]), so the sequence keeps only names it uses.
func (w *Writer) intern(b []byte, iid uint64, ann uint16, name func([]byte) []byte) []byte {
	ann &^= w.annSeen
	w.annSeen |= ann
	var at, at2 int
	b = appendVarintField(b, fPktSequenceFlags, seqNeedsIncremental)
	b, at = openLen(b, fPktInternedData)
	if iid != 0 {
		w.sc = name(w.sc[:0])
		b, at2 = openLen(b, fIDEventNames)
		b = appendVarintField(b, fInternIID, iid)
		b = protowire.AppendTag(b, fInternName, protowire.BytesType)
		b = protowire.AppendBytes(b, w.sc)
		b = closeLen(b, at2)
	}
	for i := 1; ann != 0 && i < len(annotNames); i++ {
		if ann&(1<<i) != 0 {
			b = appendIntern(b, fIDDebugAnnotNames, uint64(i), annotNames[i])
			ann &^= 1 << i
		}
	}
	return closeLen(b, at)
}

// track writes a track descriptor packet.
func (w *Writer) track(uuid, parent uint64, rank int32, hasRank, explicit, counter bool, name []byte, desc string) {
	var f tdFlags
	if parent == 0 {
		f = tdNoMerge
	}
	w.trackDesc(uuid, parent, rank, hasRank, explicit, counter, name, desc, nil, f)
}

// tdFlags are options of [Writer.trackDesc].
type tdFlags uint8

const (
	// tdDefault makes the track the sequence's default for track events
	// that name none (a warp's own events).
	tdDefault tdFlags = 1 << iota
	// tdNoMerge sets sibling_merge_behavior = NONE, for tracks whose name
	// is not unique among their siblings by construction: GPUs (two of
	// one model) and CTAs (a grid's coordinates are not checked). Every
	// other name carries an index that no sibling shares, so the
	// processor's default merging by name merges nothing.
	tdNoMerge
)

// trackDesc is track with the description given as a string or, when that
// is empty, as bytes (built in a scratch buffer, so it does not allocate).
func (w *Writer) trackDesc(uuid, parent uint64, rank int32, hasRank, explicit, counter bool, name []byte, desc string, descB []byte, f tdFlags) {
	if w.err != nil {
		return
	}
	w.stats.Tracks++
	w.pk = w.pk[:0]
	w.pk = appendVarintField(w.pk, fPktSequenceID, uint64(w.seq))
	if f&tdDefault != 0 {
		w.pk = appendDefaults(w.pk, uuid)
	}
	var at int
	w.pk, at = openLen(w.pk, fPktTrackDescriptor)
	w.pk = appendVarintField(w.pk, fTDUUID, uuid)
	w.pk = protowire.AppendTag(w.pk, fTDName, protowire.BytesType)
	w.pk = protowire.AppendBytes(w.pk, name)
	if parent != 0 {
		w.pk = appendVarintField(w.pk, fTDParentUUID, parent)
	}
	if counter {
		w.pk = appendBytesField(w.pk, fTDCounter, []byte{fCDUnit << 3, unitCount})
	}
	if explicit {
		w.pk = appendVarintField(w.pk, fTDChildOrdering, orderingExplicit)
	}
	if hasRank {
		w.pk = appendVarintField(w.pk, fTDSiblingOrderRank, uint64(int64(rank)))
	}
	if desc != "" {
		w.pk = appendStringField(w.pk, fTDDescription, desc)
	} else if len(descB) > 0 {
		w.pk = appendBytesField(w.pk, fTDDescription, descB)
	}
	if f&tdNoMerge != 0 {
		w.pk = appendVarintField(w.pk, fTDSiblingMerge, mergeNone)
	}
	w.pk = closeLen(w.pk, at)
	w.emitPacket()
}

// emitPacket frames w.pk as one Trace.packet.
func (w *Writer) emitPacket() {
	if w.opt.Compress {
		w.chunk = appendBytesField(w.chunk, fTracePacket, w.pk)
		if len(w.chunk) >= defaultCompressChunk {
			w.flushChunk()
		}
		return
	}
	w.buf = appendBytesField(w.buf, fTracePacket, w.pk)
	if len(w.buf) >= defaultFlushBytes {
		w.flushOut(false)
	}
}

// flushChunk compresses the pending packets into one compressed_packets
// packet.
func (w *Writer) flushChunk() {
	if len(w.chunk) == 0 || w.err != nil {
		return
	}
	w.zbuf.Reset()
	if w.zw == nil {
		w.zw, _ = zlib.NewWriterLevel(&w.zbuf, zlib.BestSpeed) // the level is valid
	} else {
		w.zw.Reset(&w.zbuf)
	}
	if _, err := w.zw.Write(w.chunk); err != nil {
		w.fail(fmt.Errorf("compress packets: %w", err))
		return
	}
	if err := w.zw.Close(); err != nil {
		w.fail(fmt.Errorf("compress packets: %w", err))
		return
	}
	w.chunk = w.chunk[:0]
	w.pk = w.pk[:0]
	w.pk = appendBytesField(w.pk, fPktCompressed, w.zbuf.Bytes())
	w.buf = appendBytesField(w.buf, fTracePacket, w.pk)
	if len(w.buf) >= defaultFlushBytes {
		w.flushOut(false)
	}
}

func (w *Writer) flushOut(force bool) {
	if w.err != nil || len(w.buf) == 0 || (!force && (w.hold || len(w.buf) < defaultFlushBytes)) {
		return
	}
	n, err := w.out.Write(w.buf)
	w.stats.Bytes += int64(n)
	if err != nil {
		w.fail(fmt.Errorf("write pftrace: %w", err))
	}
	w.buf = w.buf[:0]
}

// appendUint is strconv.AppendUint in base 10.
func appendUint(b []byte, v uint64) []byte { return strconv.AppendUint(b, v, 10) }
