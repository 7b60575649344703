package raw

import "encoding/binary"

// Record is one raw 8-byte device record.
type Record uint64

// MakeRecord encodes a format-version-1 record of kind k (the values of
// trace.Kind): the tag in the high word, the clock's low word in the low
// word.
func MakeRecord(k uint8, name, payload uint16, clock uint32) Record {
	return Record(uint64(Tag(k, name, payload))<<32 | uint64(clock))
}

// Tag packs a record's kind, name and payload into 32 bits: kind in bits
// 29-31, name in 16-28, payload in 0-15.
func Tag(k uint8, name, payload uint16) uint32 {
	return uint32(k&7)<<29 | uint32(name&0x1fff)<<16 | uint32(payload)
}

// EncodeRecord encodes a record as the device writes it in format version
// (1 or 2) for an event at cycle count cycles. Version 2 adds the tag to the
// clock's high word, so the high word is tag + cycles>>32 (mod 2^32); the
// decoder, which knows each event's full cycle count, subtracts it back.
//
// Kind 0 stands for an unwritten slot: in version 2 it encodes as the
// all-zero record the device leaves there (in version 1, as a record of kind
// 0 with the clock, which the decoder reads as unwritten too).
func EncodeRecord(version int, k uint8, name, payload uint16, cycles uint64) Record {
	if version == 1 {
		return MakeRecord(k, name, payload, uint32(cycles))
	}
	if k == 0 {
		return 0
	}
	return Record(cycles + uint64(Tag(k, name, payload))<<32)
}

// Unpack reads a record of format version (1 or 2) written by a warp whose
// start anchor is start: the event's full cycle count is the first at or
// after start with the record's low word (right for events within 2^32
// cycles of the start, whatever their order in the buffer), and the tag is
// the record's high word less, in version 2, the cycle count's. An all-zero
// record is an unwritten slot: tag 0 (kind 0) at start. The decoder does
// the same inline, unwrapping from the previous event instead.
func Unpack(version int, r Record, start uint64) (tag uint32, cycles uint64) {
	if r == 0 {
		return 0, start
	}
	cycles = start + uint64(r.Clock()-uint32(start))
	tag = uint32(r >> 32)
	if version >= 2 {
		tag -= uint32(cycles >> 32)
	}
	return tag, cycles
}

// Clock returns the low 32 bits of the SM cycle counter at the event (both
// versions).
func (r Record) Clock() uint32 { return uint32(r) }

// Sizes and flags of the device layout.
const (
	RecordSize     = 8
	WarpHeaderSize = 64
	WarpMagic      = 0x57454b49 // "IKEW"
	FlagStarted    = 1
	FlagFinished   = 2
	// FlagLanesDiverged (bit 2, set at exit): lanes that left the kernel
	// together had recorded different numbers of events, so records may
	// have been overwritten.
	FlagLanesDiverged = 4
	// FlagCountSaturated (bit 3, set at exit): the warp's cursor reached
	// its limit, so the count is a lower bound.
	FlagCountSaturated = 8
	FlagRoleShift      = 16     // bits 16-28 of the flags hold the role id
	FlagRoleMask       = 0x1fff // after the shift
	// FormatVersion is the record format this iket's iket.cuh writes (3:
	// lane 0 stores a warp's events and the tail word counts the side
	// events of lanes without it, docs/FORMAT.md section 3); captures and
	// modules of versions 2 (the tag added to the clock's high word, any
	// lane stores) and 1 (the tag in place of the clock's high word) down to
	// MinFormatVersion are read too. docs/FORMAT.md section 4.
	FormatVersion    = 3
	MinFormatVersion = 1
	// StopMask is the wrap mask the runtime gives a stop-mode buffer (all
	// ones: its cursor never wraps).
	StopMask    = 0xffffffff
	MaxCapacity = 1 << 30
)

// Stride returns the bytes one warp slot takes for a capacity.
func Stride(capacity uint32) int64 {
	return WarpHeaderSize + RecordSize*(int64(capacity)+1)
}

// TailOffset returns the byte offset of a warp slot's tail word (after
// its header and capacity records) for a capacity.
func TailOffset(capacity uint32) int64 {
	return WarpHeaderSize + RecordSize*int64(capacity)
}

// DecodeTail decodes a tail word (format 3): the side events a warp
// recorded without lane 0, and how many lanes stored them.
func DecodeTail(b []byte) (side, lanes uint32) {
	return binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
}

// EncodeTail writes a tail word into b[:8]; the emulator uses it.
func EncodeTail(b []byte, side, lanes uint32) {
	binary.LittleEndian.PutUint32(b, side)
	binary.LittleEndian.PutUint32(b[4:], lanes)
}

// WarpHeader is a warp slot's 64-byte header as the device wrote it.
type WarpHeader struct {
	Magic            uint32
	SM               uint32
	CTA              [3]uint32
	Warp             uint32 // within the CTA
	StartGlobaltimer uint64
	StartClock       uint64
	EndGlobaltimer   uint64
	EndClock         uint64
	Count            uint32 // events attempted: stored + dropped
	Flags            uint32
}

// Started reports whether the warp ran its tracer's constructor.
func (h *WarpHeader) Started() bool { return h.Magic == WarpMagic && h.Flags&FlagStarted != 0 }

// Role returns the role id the header's flags hold (0 = none set).
func (h *WarpHeader) Role() uint16 { return uint16(h.Flags>>FlagRoleShift) & FlagRoleMask }

// Finished reports whether the warp left the kernel normally.
func (h *WarpHeader) Finished() bool { return h.Flags&FlagFinished != 0 }

// LanesDiverged reports whether the lanes that left the kernel together had
// recorded different numbers of events ([FlagLanesDiverged]).
func (h *WarpHeader) LanesDiverged() bool { return h.Flags&FlagLanesDiverged != 0 }

// CountSaturated reports whether the warp's event counter saturated, so
// Count is a lower bound ([FlagCountSaturated]).
func (h *WarpHeader) CountSaturated() bool { return h.Flags&FlagCountSaturated != 0 }

// DecodeWarpHeader decodes b, which must hold at least 64 bytes.
func DecodeWarpHeader(b []byte, h *WarpHeader) {
	_ = b[63]
	le := binary.LittleEndian
	h.Magic = le.Uint32(b[0:])
	h.SM = le.Uint32(b[4:])
	h.CTA = [3]uint32{le.Uint32(b[8:]), le.Uint32(b[12:]), le.Uint32(b[16:])}
	h.Warp = le.Uint32(b[20:])
	h.StartGlobaltimer = le.Uint64(b[24:])
	h.StartClock = le.Uint64(b[32:])
	h.EndGlobaltimer = le.Uint64(b[40:])
	h.EndClock = le.Uint64(b[48:])
	h.Count = le.Uint32(b[56:])
	h.Flags = le.Uint32(b[60:])
}

// EncodeWarpHeader writes h into b[:64]; the emulator and tests use it.
func EncodeWarpHeader(b []byte, h *WarpHeader) {
	_ = b[63]
	le := binary.LittleEndian
	le.PutUint32(b[0:], h.Magic)
	le.PutUint32(b[4:], h.SM)
	le.PutUint32(b[8:], h.CTA[0])
	le.PutUint32(b[12:], h.CTA[1])
	le.PutUint32(b[16:], h.CTA[2])
	le.PutUint32(b[20:], h.Warp)
	le.PutUint64(b[24:], h.StartGlobaltimer)
	le.PutUint64(b[32:], h.StartClock)
	le.PutUint64(b[40:], h.EndGlobaltimer)
	le.PutUint64(b[48:], h.EndClock)
	le.PutUint32(b[56:], h.Count)
	le.PutUint32(b[60:], h.Flags)
}
