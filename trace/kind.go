package trace

import "fmt"

// Kind is the kind of an event, as its record encodes it (3 bits).
type Kind uint8

// Record kinds, as numbered in docs/FORMAT.md.
const (
	KindInvalid Kind = 0 // an unwritten slot
	KindMark    Kind = 1
	KindPush    Kind = 2
	KindPop     Kind = 3
	KindStart   Kind = 4
	KindEnd     Kind = 5
	KindRole    Kind = 6
	// KindNext (format version 2) closes the innermost open push and
	// opens a push of its name at the same instant: range_next.
	KindNext Kind = 7
)

var kindNames = [...]string{"invalid", "mark", "push", "pop", "start", "end", "role", "next"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}
