// Package trace decodes iket captures: the raw per-warp device buffers that
// kernels/include/iket.cuh writes (docs/FORMAT.md), placed on one nanosecond
// timeline, validated and analysed.
//
// After golang.org/x/exp/trace, a validated layer over an unvalidated one:
// the raw records and warp headers, exactly as the device wrote them, are
// internal (docs/FORMAT.md describes them); a [Decoder] turns one launch
// into [Warp] values warp by warp, with cycles unwrapped and
// converted to ns by a per-SM [ClockFit], ranges paired ([Range]), marks
// ([Mark]), drops counted and every pairing problem reported as a
// [Violation]. The flags the device sets at a warp's exit (its lanes
// recorded different numbers of events, its event counter saturated) are
// data on the [Warp] and in the [Summary], and violations in strict mode.
// Memory stays proportional to one warp's buffer plus a small per-SM index,
// whatever the capture's size.
//
// Typical use:
//
//	d, err := trace.NewDecoder(c.Launch(0), trace.Options{Strict: true})
//	...
//	var w trace.Warp // reused: no allocation per event once warmed up
//	for {
//		err := d.Next(&w)
//		if err == io.EOF {
//			break
//		}
//		var we *trace.WarpError
//		if errors.As(err, &we) {
//			continue // a corrupt slot; the others still decode
//		} else if err != nil {
//			return err
//		}
//		... use w.Ranges, w.Marks, w.Violations ...
//	}
//	sum, problems := d.Summary(), d.Err()
//
// [Decoder.Each] writes that loop once: it calls a function per warp and
// another per corrupt slot. [Validate] does that pass and returns the joined
// violations. Violations
// match their kind with errors.Is (errors.Is(err, trace.PopMismatch)).
package trace
