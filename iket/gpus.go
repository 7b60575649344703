package iket

import "github.com/iket-trace/iket/trace"

// GPUReading is one GPU as [ReadGPUs] reads it.
type GPUReading struct {
	Driver        string // the driver's version, 580.159.04
	MaxSMClockMHz uint32
	Conditions    *trace.Conditions
}
