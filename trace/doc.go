// Package trace decodes iket captures: the raw per-warp device buffers that
// kernels/include/iket.cuh writes (docs/FORMAT.md), placed on one nanosecond
// timeline, validated and analysed.
//
// Two layers, after golang.org/x/exp/trace: [Record] and [WarpHeader] are the
// unvalidated low level, exactly as the device wrote them; a [Decoder] turns
// one launch into [Warp] values warp by warp, with cycles unwrapped and
// converted to ns by a per-SM [ClockFit], ranges paired ([Range]), marks
// ([Mark]), drops counted and every pairing problem reported as a
// [Violation]. Memory stays proportional to one warp's buffer plus a small
// per-warp index, whatever the capture's size.
package trace
