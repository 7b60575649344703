package trace

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Meta is a capture's self-description, stored as JSON after the file header.
type Meta struct {
	Version  int          `json:"version"`
	Tool     string       `json:"tool"`
	Created  time.Time    `json:"created"`
	Host     string       `json:"host,omitempty"`
	Device   *Device      `json:"device,omitempty"`
	Launches []LaunchMeta `json:"launches"`
}

// Device records the GPU and the conditions around the run.
type Device struct {
	Name          string      `json:"name"`
	UUID          string      `json:"uuid,omitempty"`
	Driver        string      `json:"driver,omitempty"`
	CUDA          string      `json:"cuda,omitempty"`
	ComputeCap    string      `json:"compute_capability,omitempty"`
	SMs           int         `json:"sms,omitempty"`
	MaxSMClockMHz uint32      `json:"max_sm_clock_mhz,omitempty"`
	Before        *Conditions `json:"before,omitempty"`
	After         *Conditions `json:"after,omitempty"`
}

// Conditions is one reading of the device's clocks, temperature and power.
type Conditions struct {
	SMClockMHz      uint32   `json:"sm_clock_mhz"`
	MemClockMHz     uint32   `json:"mem_clock_mhz"`
	TemperatureC    uint32   `json:"temperature_c"`
	PowerW          float64  `json:"power_w"`
	PowerLimitW     float64  `json:"power_limit_w,omitempty"`
	ThrottleReasons []string `json:"throttle_reasons,omitempty"`
}

// LaunchMeta describes one traced launch and where its buffers are.
type LaunchMeta struct {
	Kernel      string    `json:"kernel"`
	Source      string    `json:"source,omitempty"`
	Grid        [3]uint32 `json:"grid"`
	Block       [3]uint32 `json:"block"`
	Cluster     [3]uint32 `json:"cluster,omitempty"`
	SharedBytes uint32    `json:"shared_bytes,omitempty"`
	WarpsPerCTA uint32    `json:"warps_per_cta"`
	Warps       uint64    `json:"warps"`
	Capacity    uint32    `json:"capacity"`
	Mode        Mode      `json:"mode"`
	Names       []Name    `json:"names"`
	// Offset is the byte offset of the launch's warp buffers in the file;
	// writers fill it in.
	Offset  int64    `json:"offset"`
	Latency *Latency `json:"latency,omitempty"`
}

// Mode is what a warp's buffer does when it is full.
type Mode string

// Buffer modes.
const (
	ModeStop Mode = "stop" // keep the first events, count the rest as drops
	ModeWrap Mode = "wrap" // keep the newest events
)

// NameKind is the declared kind of a name.
type NameKind string

// Name kinds, as written in the kernel's IKET_NAMES list.
const (
	NameRange NameKind = "RANGE"
	NameMark  NameKind = "MARK"
	NameRole  NameKind = "ROLE"
)

// Name is one entry of a module's name table.
type Name struct {
	ID   uint16   `json:"id"`
	Kind NameKind `json:"kind"`
	Text string   `json:"name"`
}

// Latency is the CUDA-event latency comparison of the two builds, with the
// control's timing when one was taken.
type Latency struct {
	Uninstrumented Samples `json:"uninstrumented"`
	Instrumented   Samples `json:"instrumented"`
	// Control, when timed, is a second load of the uninstrumented binary in
	// the same rounds: what two identical builds differ by in this run.
	Control      *Samples `json:"control,omitempty"`
	Ratio        float64  `json:"ratio"`                   // instrumented median / uninstrumented median
	PairedRatio  float64  `json:"paired_ratio,omitempty"`  // median over rounds of instrumented / uninstrumented
	ControlRatio float64  `json:"control_ratio,omitempty"` // control median / uninstrumented median
	// ControlPairedRatio is the median over rounds of control / uninstrumented.
	ControlPairedRatio float64        `json:"control_paired_ratio,omitempty"`
	Settings           TimingSettings `json:"settings"`
}

// Samples are the per-round times of one build, in microseconds.
type Samples struct {
	MedianUS float64   `json:"median_us"`
	MinUS    float64   `json:"min_us"`
	MaxUS    float64   `json:"max_us"`
	RoundsUS []float64 `json:"rounds_us"`
}

// TimingSettings records how latency was measured.
type TimingSettings struct {
	Warmup         int    `json:"warmup_calls"`
	Rounds         int    `json:"rounds"`
	CallsPerRound  int    `json:"calls_per_round"`
	FlushL2        bool   `json:"flush_l2"`
	FlushBytes     int64  `json:"flush_bytes,omitempty"`
	Interleaved    bool   `json:"interleaved"`
	Order          string `json:"order,omitempty"` // how the builds take turns
	Boundary       string `json:"boundary"`
	WarmupStableAt int    `json:"warmup_stable_after,omitempty"`
}

// Stride returns the bytes one warp slot of this launch takes.
func (l *LaunchMeta) Stride() int64 { return Stride(l.Capacity) }

// Size returns the bytes of the launch's warp buffers.
func (l *LaunchMeta) Size() int64 { return int64(l.Warps) * l.Stride() }

// NameText returns the text of name id, or "#id" when the table lacks it.
func (l *LaunchMeta) NameText(id uint16) string {
	if i := int(id) - 1; i >= 0 && i < len(l.Names) && l.Names[i].ID == id {
		return l.Names[i].Text
	}
	for _, n := range l.Names {
		if n.ID == id {
			return n.Text
		}
	}
	return fmt.Sprintf("#%d", id)
}

// validate checks the launch's fields that decoding relies on.
func (l *LaunchMeta) validate(i int) error {
	where := fmt.Sprintf("launch %d (%s)", i, l.Kernel)
	switch {
	case l.Capacity == 0 || l.Capacity > MaxCapacity:
		return fmt.Errorf("%s: capacity %d out of range 1..%d", where, l.Capacity, MaxCapacity)
	case l.Mode != ModeStop && l.Mode != ModeWrap:
		return fmt.Errorf("%s: mode %q, want %q or %q", where, l.Mode, ModeStop, ModeWrap)
	case l.Mode == ModeWrap && l.Capacity&(l.Capacity-1) != 0:
		return fmt.Errorf("%s: wrap mode needs a power-of-two capacity, have %d", where, l.Capacity)
	case l.WarpsPerCTA == 0 || l.WarpsPerCTA > 32:
		return fmt.Errorf("%s: warps_per_cta %d out of range 1..32", where, l.WarpsPerCTA)
	case l.Warps > 1<<40:
		return fmt.Errorf("%s: %d warps is implausible", where, l.Warps)
	case l.Warps > uint64(math.MaxInt64/l.Stride()):
		return fmt.Errorf("%s: %d warps of %d bytes overflow a file offset", where, l.Warps, l.Stride())
	case l.Offset < 0 || l.Offset%8 != 0:
		return fmt.Errorf("%s: offset %d is not a non-negative multiple of 8", where, l.Offset)
	}
	for j, n := range l.Names {
		if int(n.ID) != j+1 {
			return fmt.Errorf("%s: name %d (%q) has id %d, want %d", where, j, n.Text, n.ID, j+1)
		}
		if n.Kind != NameRange && n.Kind != NameMark && n.Kind != NameRole {
			return fmt.Errorf("%s: name %q has kind %q", where, n.Text, n.Kind)
		}
	}
	return nil
}

// ParseNameTable parses the module's iket_name_table string (docs/FORMAT.md
// section 1). Trailing NUL bytes are ignored.
func ParseNameTable(s string) ([]Name, error) {
	s = strings.TrimRight(s, "\x00")
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) == 0 || lines[0] != nameTableHeader {
		first := ""
		if len(lines) > 0 {
			first = lines[0]
		}
		return nil, fmt.Errorf("parse name table: first line %q, want %q", first, nameTableHeader)
	}
	names := make([]Name, 0, len(lines)-1)
	for i, line := range lines[1:] {
		kind, text, ok := strings.Cut(line, " ")
		if !ok || text == "" {
			return nil, fmt.Errorf("parse name table: line %d %q: want \"KIND name\"", i+2, line)
		}
		k := NameKind(kind)
		if k != NameRange && k != NameMark && k != NameRole {
			return nil, fmt.Errorf("parse name table: line %d: kind %q, want RANGE, MARK or ROLE", i+2, kind)
		}
		if len(names) == MaxNames {
			return nil, fmt.Errorf("parse name table: more than %d names", MaxNames)
		}
		names = append(names, Name{ID: uint16(i + 1), Kind: k, Text: text})
	}
	return names, nil
}
