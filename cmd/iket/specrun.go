package main

import "github.com/iket-trace/iket/spec"

// specRunOptions applies the spec's trace settings to the run's options,
// flags given on the command line winning.
func specRunOptions(s *spec.Spec, o runOptions, setCapacity, setMode, setArch bool) runOptions {
	if !setCapacity && s.Trace.Capacity != 0 {
		o.capacity = s.Trace.Capacity
	}
	if !setMode && s.Trace.Mode != "" {
		o.mode = s.Trace.Mode
	}
	if !setArch && s.Arch != "" {
		o.arch = s.Arch
	}
	return o
}
