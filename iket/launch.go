package iket

import (
	"fmt"
)

// LaunchConfig is one kernel launch's geometry. A zero Cluster launches
// without thread-block clusters.
type LaunchConfig struct {
	Kernel      string
	Grid        [3]uint32
	Block       [3]uint32
	Cluster     [3]uint32
	SharedBytes uint32 // dynamic shared memory per CTA
}

func (c LaunchConfig) String() string {
	s := fmt.Sprintf("grid (%d,%d,%d) block (%d,%d,%d)", c.Grid[0], c.Grid[1], c.Grid[2], c.Block[0], c.Block[1], c.Block[2])
	if c.Cluster != [3]uint32{} {
		s += fmt.Sprintf(" cluster (%d,%d,%d)", c.Cluster[0], c.Cluster[1], c.Cluster[2])
	}
	if c.SharedBytes != 0 {
		s += fmt.Sprintf(" shared %d B", c.SharedBytes)
	}
	return s
}

// Threads returns the threads per CTA.
func (c LaunchConfig) Threads() uint64 {
	return uint64(c.Block[0]) * uint64(c.Block[1]) * uint64(c.Block[2])
}

// CTAs returns the number of CTAs in the grid.
func (c LaunchConfig) CTAs() uint64 {
	return uint64(c.Grid[0]) * uint64(c.Grid[1]) * uint64(c.Grid[2])
}

// WarpsPerCTA returns ceil(threads per CTA / 32), the device state's
// warps_per_cta.
func (c LaunchConfig) WarpsPerCTA() uint32 { return uint32((c.Threads() + 31) / 32) }

// Warps returns the number of warp slots a traced launch needs.
func (c LaunchConfig) Warps() uint64 { return c.CTAs() * uint64(c.WarpsPerCTA()) }

// Limits are the device limits a launch configuration is checked against.
type Limits struct {
	MaxThreadsPerBlock uint32
	MaxBlock           [3]uint32
	MaxGrid            [3]uint32
	MaxSharedOptin     uint32 // dynamic + static shared bytes per CTA with opt-in
	MaxClusterSize     uint32 // CTAs per cluster (8 is portable); 0: no clusters
}

// DefaultLimits are compute capability 9.0's (H100/H200) limits, used to
// check configurations when no device is open.
var DefaultLimits = Limits{
	MaxThreadsPerBlock: 1024,
	MaxBlock:           [3]uint32{1024, 1024, 64},
	MaxGrid:            [3]uint32{1<<31 - 1, 65535, 65535},
	MaxSharedOptin:     227 << 10,
	MaxClusterSize:     8,
}

// Validate checks c against l and returns a *ConfigError naming the first
// field that is out of range.
func (c LaunchConfig) Validate(l Limits) error {
	bad := func(field, format string, a ...any) error {
		return &ConfigError{Kernel: c.Kernel, Field: field, Msg: fmt.Sprintf(format, a...)}
	}
	if c.Kernel == "" {
		return bad("kernel", "no kernel name")
	}
	axes := "xyz"
	for i := 0; i < 3; i++ {
		if c.Grid[i] == 0 {
			return bad("grid", "%s dimension is 0 in (%d,%d,%d); every dimension must be at least 1", axes[i:i+1], c.Grid[0], c.Grid[1], c.Grid[2])
		}
		if c.Grid[i] > l.MaxGrid[i] {
			return bad("grid", "%s dimension %d exceeds the device's %d", axes[i:i+1], c.Grid[i], l.MaxGrid[i])
		}
		if c.Block[i] == 0 {
			return bad("block", "%s dimension is 0 in (%d,%d,%d); every dimension must be at least 1", axes[i:i+1], c.Block[0], c.Block[1], c.Block[2])
		}
		if c.Block[i] > l.MaxBlock[i] {
			return bad("block", "%s dimension %d exceeds the device's %d", axes[i:i+1], c.Block[i], l.MaxBlock[i])
		}
	}
	if t := c.Threads(); t > uint64(l.MaxThreadsPerBlock) {
		return bad("block", "(%d,%d,%d) is %d threads, at most %d per CTA", c.Block[0], c.Block[1], c.Block[2], t, l.MaxThreadsPerBlock)
	}
	if c.Cluster != [3]uint32{} {
		if l.MaxClusterSize == 0 {
			return bad("cluster", "the device does not support thread-block clusters")
		}
		size := uint64(1)
		for i := 0; i < 3; i++ {
			if c.Cluster[i] == 0 {
				return bad("cluster", "%s dimension is 0 in (%d,%d,%d); use (0,0,0) for no clusters", axes[i:i+1], c.Cluster[0], c.Cluster[1], c.Cluster[2])
			}
			if c.Grid[i]%c.Cluster[i] != 0 {
				return bad("cluster", "grid %s dimension %d is not a multiple of the cluster's %d", axes[i:i+1], c.Grid[i], c.Cluster[i])
			}
			size *= uint64(c.Cluster[i])
		}
		if size > uint64(l.MaxClusterSize) {
			return bad("cluster", "(%d,%d,%d) is %d CTAs, at most %d", c.Cluster[0], c.Cluster[1], c.Cluster[2], size, l.MaxClusterSize)
		}
	}
	if l.MaxSharedOptin != 0 && c.SharedBytes > l.MaxSharedOptin {
		return bad("shared_bytes", "%d bytes of dynamic shared memory, the device allows %d per CTA", c.SharedBytes, l.MaxSharedOptin)
	}
	return nil
}
