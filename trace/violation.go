package trace

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// numViolationKinds bounds the kinds, for per-kind counters.
const numViolationKinds = int(SaturatedCount) + 1

// MarshalText returns the kind's name with underscores for hyphens
// ("pop_empty"), so JSON keys of a map by kind are snake_case names.
func (k ViolationKind) MarshalText() ([]byte, error) {
	return []byte(strings.ReplaceAll(k.String(), "-", "_")), nil
}

// UnmarshalText parses what MarshalText writes (or the hyphenated name).
func (k *ViolationKind) UnmarshalText(b []byte) error {
	name := strings.ReplaceAll(string(b), "_", "-")
	for i, n := range violationNames {
		if i > 0 && n == name {
			*k = ViolationKind(i)
			return nil
		}
	}
	return fmt.Errorf("unknown violation kind %q", b)
}

// Error makes a kind usable as an errors.Is target:
// errors.Is(err, trace.PopMismatch) reports whether err holds a pop mismatch.
// It returns the kind's name, like String.
func (k ViolationKind) Error() string { return k.String() }

// Error formats the violation with its location, e.g.
//
//	launch 0 warp 12 (sm 3, cta 7,0,0, warp 1): event 4: pop of "load" closes "store"
func (v Violation) Error() string {
	b := make([]byte, 0, 96+len(v.Detail))
	b = append(b, "launch "...)
	b = strconv.AppendInt(b, int64(v.Launch), 10)
	b = append(b, " warp "...)
	b = strconv.AppendUint(b, v.Slot, 10)
	b = fmt.Appendf(b, " (sm %d, cta %d,%d,%d, warp %d): ", v.SM, v.CTA[0], v.CTA[1], v.CTA[2], v.Warp)
	if v.Index >= 0 {
		b = append(b, "event "...)
		b = strconv.AppendInt(b, int64(v.Index), 10)
		b = append(b, ": "...)
	}
	b = append(b, v.Detail...)
	return string(b)
}

// Is reports whether target is the violation's [ViolationKind].
func (v Violation) Is(target error) bool {
	k, ok := target.(ViolationKind)
	return ok && k == v.Kind
}

// WarpError reports a warp slot whose bytes break the format (a bad magic, a
// header that contradicts its slot, anchors out of order) or could not be
// read. Decoding continues with the next slot.
type WarpError struct {
	Launch int
	Slot   uint64
	Offset int64 // byte offset of the slot (or of the failed read) in the file
	Msg    string
	Err    error // underlying I/O error, if any
}

func (e *WarpError) Error() string {
	s := fmt.Sprintf("launch %d warp %d at offset %d: %s", e.Launch, e.Slot, e.Offset, e.Msg)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying I/O error.
func (e *WarpError) Unwrap() error { return e.Err }

// ErrCorruptWarp is matched (errors.Is) by every [WarpError] that is about
// the content of a slot rather than an I/O failure.
var ErrCorruptWarp = errors.New("corrupt warp buffer")

// Is lets errors.Is(err, ErrCorruptWarp) match content errors.
func (e *WarpError) Is(target error) bool { return target == ErrCorruptWarp && e.Err == nil }

// maxJoined caps the errors Validate and Decoder.Err join.
const maxJoined = 100

// errList collects errors up to maxJoined and counts the rest.
type errList struct {
	errs []error
	more int
}

func (l *errList) add(err error) {
	if len(l.errs) < maxJoined {
		l.errs = append(l.errs, err)
		return
	}
	l.more++
}

func (l *errList) reset() { l.errs, l.more = l.errs[:0], 0 }

func (l *errList) err() error {
	if len(l.errs) == 0 {
		return nil
	}
	errs := append([]error(nil), l.errs...)
	if l.more > 0 {
		errs = append(errs, fmt.Errorf("and %d more problems", l.more))
	}
	return errors.Join(errs...)
}
