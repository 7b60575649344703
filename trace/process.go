package trace

import "fmt"

// Process describes the application process a capture was recorded in.
type Process struct {
	PID  int      `json:"pid"`
	PPID int      `json:"ppid,omitempty"`
	Exe  string   `json:"exe,omitempty"`
	Args []string `json:"args,omitempty"`
	Host string   `json:"host,omitempty"`
	// Env holds the launcher's variables that name the process's place in
	// a job, as NAME=value (RANK, LOCAL_RANK, WORLD_SIZE,
	// OMPI_COMM_WORLD_RANK, ...).
	Env []string `json:"env,omitempty"`
	// Rank is the process's rank from Env, -1 when none says.
	Rank int `json:"rank"`
}

// Resources are what a kernel takes of an SM, as the driver reports them
// for the launched function.
type Resources struct {
	Registers          int    `json:"registers"`
	StaticSharedBytes  int    `json:"static_shared_bytes"`
	DynamicSharedBytes uint32 `json:"dynamic_shared_bytes"`
	LocalBytes         int    `json:"local_bytes"`
	MaxThreadsPerBlock int    `json:"max_threads_per_block"`
	MaxActiveCTAsPerSM int    `json:"max_active_ctas_per_sm"`
	// SASSInstructions is the kernel's instruction count in its cubin, 0
	// when unknown (a module loaded as PTX or a damaged image, or a name two
	// loaded cubins give different counts).
	SASSInstructions int `json:"sass_instructions,omitempty"`
}

// HostClock holds the host's clocks read right before a launch was issued
// and right after it was seen complete, in ns: the launch's GPU interval
// lies between them.
type HostClock struct {
	RealtimeBefore  int64 `json:"realtime_before"`
	RealtimeAfter   int64 `json:"realtime_after"`
	MonotonicBefore int64 `json:"monotonic_before"`
	MonotonicAfter  int64 `json:"monotonic_after"`
}

// String is what the kernel takes of an SM, in a line.
func (r *Resources) String() string {
	s := fmt.Sprintf("%d registers per thread, %d + %d B shared memory, %d B local memory per thread, %d CTAs per SM at most",
		r.Registers, r.StaticSharedBytes, r.DynamicSharedBytes, r.LocalBytes, r.MaxActiveCTAsPerSM)
	if r.SASSInstructions > 0 {
		s += fmt.Sprintf(", %d SASS instructions", r.SASSInstructions)
	}
	return s
}

// Perturbation warns where the traced build (inst) takes an SM differently
// from the uninstrumented one (base): its occupancy or its local memory
// (spills). Where the traced build also takes more registers, the
// occupancy warning says so and what may win some of it back. Nil when
// either is unknown or nothing differs.
func Perturbation(inst, base *Resources) []string {
	if inst == nil || base == nil {
		return nil
	}
	var w []string
	if inst.MaxActiveCTAsPerSM != base.MaxActiveCTAsPerSM {
		s := fmt.Sprintf("occupancy differs: %d CTAs per SM traced, %d uninstrumented", inst.MaxActiveCTAsPerSM, base.MaxActiveCTAsPerSM)
		if inst.MaxActiveCTAsPerSM < base.MaxActiveCTAsPerSM && inst.Registers > base.Registers {
			s += fmt.Sprintf(" (%d registers per thread against %d; a register cap on the instrumented build, __launch_bounds__(threads per CTA, %d) under #if IKET_ENABLE, may win much of it back; nvcc -maxrregcount=%d may not hold a kernel that has __launch_bounds__: docs/OVERHEAD.md)",
				inst.Registers, base.Registers, base.MaxActiveCTAsPerSM, base.Registers)
		}
		w = append(w, s)
	}
	if inst.LocalBytes != base.LocalBytes {
		w = append(w, fmt.Sprintf("local memory (spills) differs: %d bytes per thread traced, %d uninstrumented", inst.LocalBytes, base.LocalBytes))
	}
	return w
}
