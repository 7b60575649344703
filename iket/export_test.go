package iket

// Internals the external tests (package iket_test: the GPU tests, which run
// the built-in programs of package builtin) read.

var (
	BuildImage  = buildImage
	RecordFault = recordFault
	CodeOf      = codeOf
)

const (
	FaultMsg         = faultMsg
	OrderAlternating = orderAlternating
	OrderRotating    = orderRotating
)

// LiveCount returns the number of resources d has not yet freed.
func LiveCount(d *Device) int { return d.liveCount() }
