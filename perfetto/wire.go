package perfetto

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of iket's Perfetto schema (internal/pb/iket_perfetto.proto).
// The hot path appends with protowire; a test pins them against the
// generated descriptors.
const (
	fTracePacket = 1

	fPktTimestamp        = 8
	fPktSequenceID       = 10
	fPktTrackEvent       = 11
	fPktInternedData     = 12
	fPktSequenceFlags    = 13
	fPktCompressed       = 50
	fPktTrackDescriptor  = 60
	fPktFirstOnSequence  = 87
	fPktDefaults         = 59
	fPktClockSnapshot    = 6
	fDefTimestampClock   = 58
	fDefTrackEvent       = 11
	fTEDefTrackUUID      = 11
	fCSClocks            = 1
	fClockID             = 1
	fClockTimestamp      = 2
	fClockIncremental    = 3
	clockBoottime        = 6
	clockIncremental     = 64 // the first sequence-scoped clock id
	fTEDebugAnnotations  = 4
	fTEType              = 9
	fTENameIID           = 10
	fTETrackUUID         = 11
	fTECounterValue      = 30
	fTEDoubleCounter     = 44
	fTEFlowIDs           = 47
	fTETerminatingFlows  = 48
	fDANameIID           = 1
	fDAUintValue         = 3
	fDAStringValue       = 6
	fIDEventNames        = 2
	fIDDebugAnnotNames   = 3
	fInternIID           = 1
	fInternName          = 2
	fTDUUID              = 1
	fTDName              = 2
	fTDParentUUID        = 5
	fTDCounter           = 8
	fTDChildOrdering     = 11
	fTDSiblingOrderRank  = 12
	fTDDescription       = 14
	fTDSiblingMerge      = 15
	fCDUnit              = 3
	fCDUnitName          = 6
	seqIncrementalClear  = 1
	seqNeedsIncremental  = 2
	orderingExplicit     = 3
	mergeNone            = 2
	unitCount            = 2
	typeSliceBegin       = 1
	typeSliceEnd         = 2
	typeInstant          = 3
	typeCounter          = 4
	maxTimestamp         = math.MaxInt64 // timestamps must stay below 2^63
	maxSliceDepth        = 512           // the trace processor's stack limit
	defaultFlushBytes    = 128 << 10
	defaultCompressChunk = 1 << 20
)

func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendStringField(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendBytesField(b []byte, num protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func appendFixed64Field(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, v)
}

func appendDoubleField(b []byte, num protowire.Number, v float64) []byte {
	return appendFixed64Field(b, num, math.Float64bits(v))
}

// openLen starts a length-delimited field whose length is not known yet: it
// appends the tag and reserves one length byte, returning the position of
// that byte. closeLen writes the length, moving the body when it needs more
// than one byte.
func openLen(b []byte, num protowire.Number) ([]byte, int) {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return append(b, 0), len(b)
}

func closeLen(b []byte, at int) []byte {
	n := len(b) - at - 1
	if n < 0x80 {
		b[at] = byte(n)
		return b
	}
	k := protowire.SizeVarint(uint64(n))
	b = append(b, make([]byte, k-1)...)
	copy(b[at+k:], b[at+1:at+1+n])
	protowire.AppendVarint(b[at:at], uint64(n))
	return b
}

// appendAnnotUint appends a debug annotation with an interned name and an
// unsigned value.
func appendAnnotUint(b []byte, nameIID, v uint64) []byte {
	b = protowire.AppendTag(b, fTEDebugAnnotations, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(1+protowire.SizeVarint(nameIID)+1+protowire.SizeVarint(v)))
	b = appendVarintField(b, fDANameIID, nameIID)
	return appendVarintField(b, fDAUintValue, v)
}

// appendAnnotString appends a debug annotation with an interned name and a
// string value.
func appendAnnotString(b []byte, nameIID uint64, s string) []byte {
	b, at := openLen(b, fTEDebugAnnotations)
	b = appendVarintField(b, fDANameIID, nameIID)
	b = appendStringField(b, fDAStringValue, s)
	return closeLen(b, at)
}

// appendDefaults appends trace_packet_defaults: timestamps on the
// incremental clock and, when track is not 0, track as the track of track
// events that name none. A packet's defaults replace the sequence's
// previous ones, without touching its interned names.
func appendDefaults(b []byte, track uint64) []byte {
	b, at := openLen(b, fPktDefaults)
	b = append(b, fDefTimestampClock<<3&0x7f|0x80, fDefTimestampClock>>4, clockIncremental)
	if track != 0 {
		b = protowire.AppendTag(b, fDefTrackEvent, protowire.BytesType)
		b = append(b, byte(1+protowire.SizeVarint(track)))
		b = appendVarintField(b, fTEDefTrackUUID, track)
	}
	return closeLen(b, at)
}

// appendClockSnapshot appends the clock snapshot that starts the
// sequence's incremental clock at 0 together with BOOTTIME at 0: packet
// timestamps are then deltas whose running sum is BOOTTIME (globaltimer)
// ns. A delta may be negative (two's complement, ten bytes), which the
// trace processor adds as a signed number.
func appendClockSnapshot(b []byte) []byte {
	b, at := openLen(b, fPktClockSnapshot)
	b = protowire.AppendTag(b, fCSClocks, protowire.BytesType)
	b = append(b, 6, fClockID<<3, clockIncremental, fClockTimestamp<<3, 0, fClockIncremental<<3, 1)
	b = protowire.AppendTag(b, fCSClocks, protowire.BytesType)
	b = append(b, 4, fClockID<<3, clockBoottime, fClockTimestamp<<3, 0)
	return closeLen(b, at)
}
