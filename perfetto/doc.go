// Package perfetto writes decoded iket launches as a Perfetto trace
// (.pftrace, the protobuf trace format that ui.perfetto.dev opens) and as
// Chrome trace-event JSON.
//
// The [Writer] streams: packets are encoded with protowire into a reused
// buffer and written as they are produced, so memory stays bounded by one
// CTA's warps whatever the number of warps or events. Each launch gets its
// own packet sequence (interning is per sequence) and a track tree
//
//	GPU > launch > SM > CTA > warp > async lanes
//
// with deterministic track uuids derived from (launch, SM, CTA, warp slot,
// lane), unique by construction so that no set of them is kept, and small,
// explicit numeric ordering and no sibling merging. Push/pop ranges are
// nested slices on the warp track, start/end ranges slices on one child track
// per lane, marks instants; warps that recorded nothing but their role fold
// into one track per role and CTA. Timestamps are deltas on an incremental
// clock and a warp's events go to the sequence's default track, so an event
// takes about 11 bytes. Launch summary tracks average the warps of each
// role inside each range over time; optional per-CTA counter tracks count
// them, and optional flows link a producer's range to the consumer range of
// the same pipeline stage. [ExportMerged] writes several captures (processes
// and GPUs of one run) as one trace, each under a track of its own, their
// times moved onto the host's CLOCK_REALTIME ([trace.AlignHost]).
// docs/PERFETTO-EXPORT.md describes the layout and rules.
//
// [CheckValid] reads a written trace back and checks it against the import
// rules of Perfetto's trace processor; the Writer checks the model of every
// warp against the same rules before encoding it.
package perfetto
