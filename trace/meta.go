package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/iket-trace/iket/internal/raw"
)

// Meta is a capture's self-description, stored as JSON after the file header.
type Meta struct {
	Version  int          `json:"version"`
	Tool     string       `json:"tool"`
	Created  time.Time    `json:"created"`
	Host     string       `json:"host,omitempty"`
	Device   *Device      `json:"device,omitempty"`
	Launches []LaunchMeta `json:"launches"`
	// Process is the traced application's process, for captures that
	// `iket run -- CMD` recorded inside an application.
	Process *Process `json:"process,omitempty"`
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
	// RanCapacity is the capacity the launch ran with when the capture
	// stores fewer records per warp (Shrink: every warp's records fit in
	// Capacity); 0: Capacity.
	RanCapacity uint32 `json:"ran_capacity,omitempty"`
	Mode        Mode   `json:"mode"`
	Names       []Name `json:"names"`
	// Offset is the byte offset of the launch's warp buffers in the file;
	// writers fill it in.
	Offset  int64    `json:"offset"`
	Latency *Latency `json:"latency,omitempty"`
	// Application launches (`iket run -- CMD`): the mangled name, which
	// launch of the kernel in the process this was, its resources and the
	// host clocks around it.
	Mangled    string     `json:"mangled,omitempty"`
	Occurrence uint64     `json:"occurrence,omitempty"`
	Resources  *Resources `json:"resources,omitempty"`
	HostClock  *HostClock `json:"host_clock,omitempty"`
	// RecordsL2Bytes is the L2 set aside to keep the launch's records while
	// it ran (a persisting access-policy window over its buffers); 0: they
	// went through the L2 with the kernel's data; nil: not recorded (older
	// captures).
	RecordsL2Bytes *uint64 `json:"records_l2_bytes,omitempty"`
}

// RecordsL2 says where a launch's records went while it ran, given its
// RecordsL2Bytes (the report and `iket run` print it after "records").
func RecordsL2(bytes uint64) string {
	if bytes == 0 {
		return "written through the L2 with the kernel's data"
	}
	return fmt.Sprintf("kept in the L2 (a persisting window over the buffers, %.1f MiB set aside)", float64(bytes)/(1<<20))
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
	// the same rounds (iket run KERNEL), or the baseline program's second
	// run paired with its first (iket run -- CMD --control): what two
	// identical builds differ by in this run.
	Control      *Samples `json:"control,omitempty"`
	Ratio        float64  `json:"ratio"`                   // instrumented median / uninstrumented median
	PairedRatio  float64  `json:"paired_ratio,omitempty"`  // median over rounds of instrumented / uninstrumented
	ControlRatio float64  `json:"control_ratio,omitempty"` // control median / uninstrumented median
	// ControlPairedRatio is the median over rounds of control / uninstrumented.
	ControlPairedRatio float64 `json:"control_paired_ratio,omitempty"`
	// Dormant, with iket run -- CMD --dormant, are the same launches of the
	// program timed untraced (the instrumented build while nobody traces
	// it), paired with the uninstrumented ones as Instrumented is.
	Dormant            *Samples `json:"dormant,omitempty"`
	DormantRatio       float64  `json:"dormant_ratio,omitempty"`        // dormant median / uninstrumented median
	DormantPairedRatio float64  `json:"dormant_paired_ratio,omitempty"` // median over pairs of dormant / uninstrumented
	// UninstrumentedResources are the baseline build's resources, beside
	// the launch's own (LaunchMeta.Resources), when they were read.
	UninstrumentedResources *Resources     `json:"uninstrumented_resources,omitempty"`
	Settings                TimingSettings `json:"settings"`
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
	// Serialized: each timed launch ran alone, the GPU drained before it
	// (launches inside an application).
	Serialized bool `json:"serialized,omitempty"`
}

// Ran returns the capacity the launch ran with (RanCapacity, else
// Capacity).
func (l *LaunchMeta) Ran() uint32 { return max(l.RanCapacity, l.Capacity) }

// BufferText describes the launch's warp buffers for people: "4096
// records per warp, stop mode", and how many the capture keeps when fewer.
func (l *LaunchMeta) BufferText() string {
	t := fmt.Sprintf("%d records per warp, %s mode", l.Ran(), l.Mode)
	if l.RanCapacity > l.Capacity {
		t += fmt.Sprintf(" (the capture keeps %d: every warp's records fit)", l.Capacity)
	}
	return t
}

// Stride returns the bytes one warp slot of this launch takes.
func (l *LaunchMeta) Stride() int64 { return raw.Stride(l.Capacity) }

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

// Limits on what a capture's metadata may hold.
const (
	// MaxNameLen bounds the bytes of a name in a name table.
	MaxNameLen = 256
	// maxKernelLen bounds a launch's kernel name (C++ names mangle long).
	maxKernelLen = 4096
	// maxLaunches bounds the launches of one capture.
	maxLaunches = 1 << 16
)

// LaunchError is one problem with a launch's metadata, naming the field.
type LaunchError struct {
	Launch int
	Kernel string
	Field  string // the JSON key, e.g. "warps" or "names[3]"
	Msg    string
}

func (e *LaunchError) Error() string {
	return fmt.Sprintf("launch %d (%s): %s: %s", e.Launch, e.Kernel, e.Field, e.Msg)
}

// validate checks the launch's fields that decoding relies on, against
// each other; it returns every problem, joined.
func (l *LaunchMeta) validate(i int) error {
	kernel := l.Kernel
	if len(kernel) > 64 {
		kernel = kernel[:64] + "..."
	}
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, &LaunchError{Launch: i, Kernel: kernel, Field: field, Msg: fmt.Sprintf(format, a...)})
	}
	if len(l.Kernel) > maxKernelLen {
		bad("kernel", "%d bytes, at most %d", len(l.Kernel), maxKernelLen)
	}
	capOK := true
	switch {
	case l.Capacity == 0 || l.Capacity > raw.MaxCapacity:
		bad("capacity", "%d out of range 1..%d", l.Capacity, raw.MaxCapacity)
		capOK = false
	case l.Mode == ModeWrap && l.Capacity&(l.Capacity-1) != 0:
		bad("capacity", "wrap mode needs a power of two, have %d", l.Capacity)
	}
	if l.RanCapacity != 0 && (l.RanCapacity <= l.Capacity || l.RanCapacity > raw.MaxCapacity || l.Mode != ModeStop) {
		bad("ran_capacity", "%d with capacity %d in %s mode, want 0 or more than the capacity (at most %d), stop mode", l.RanCapacity, l.Capacity, l.Mode, raw.MaxCapacity)
	}
	if l.Mode != ModeStop && l.Mode != ModeWrap {
		bad("mode", "%q, want %q or %q", l.Mode, ModeStop, ModeWrap)
	}
	wpcOK := l.WarpsPerCTA != 0 && l.WarpsPerCTA <= 32
	if !wpcOK {
		bad("warps_per_cta", "%d out of range 1..32", l.WarpsPerCTA)
	}
	zeros := func(d [3]uint32) int {
		n := 0
		for _, v := range d {
			if v == 0 {
				n++
			}
		}
		return n
	}
	if zeros(l.Block) == 0 {
		threads := uint64(l.Block[0]) * uint64(l.Block[1]) * uint64(l.Block[2])
		if want := (threads + 31) / 32; wpcOK && want != uint64(l.WarpsPerCTA) {
			bad("warps_per_cta", "%d, but block %v has %d threads: %d warps", l.WarpsPerCTA, l.Block, threads, want)
		}
	}
	switch {
	case l.Warps > 1<<40:
		bad("warps", "%d is implausible", l.Warps)
	case capOK && l.Warps > uint64(math.MaxInt64/l.Stride()):
		bad("warps", "%d warps of %d bytes overflow a file offset", l.Warps, l.Stride())
	case wpcOK && zeros(l.Grid) == 0:
		ctas := uint64(l.Grid[0]) * uint64(l.Grid[1]) * uint64(l.Grid[2])
		if ctas > 1<<40 || l.Warps < ctas*uint64(l.WarpsPerCTA) {
			bad("warps", "%d slots, but grid %v of %d CTAs x %d warps per CTA needs %d", l.Warps, l.Grid, ctas, l.WarpsPerCTA, ctas*uint64(l.WarpsPerCTA))
		}
	}
	if l.Offset < 0 || l.Offset%8 != 0 {
		bad("offset", "%d is not a non-negative multiple of 8", l.Offset)
	}
	if len(l.Names) > MaxNames {
		bad("names", "%d names, at most %d", len(l.Names), MaxNames)
	}
	seen := make(map[string]int, len(l.Names))
	for j, n := range l.Names {
		if j == MaxNames || len(errs) > 20 {
			break
		}
		field := fmt.Sprintf("names[%d]", j)
		if k, dup := seen[n.Text]; dup {
			bad(field, "%q repeats names[%d]: the names are C++ identifiers of one list, each once", truncName(n.Text), k)
		}
		seen[n.Text] = j
		if int(n.ID) != j+1 {
			bad(field, "%q has id %d, want %d", truncName(n.Text), n.ID, j+1)
		}
		if n.Kind != NameRange && n.Kind != NameMark && n.Kind != NameRole {
			bad(field, "%q has kind %q, want RANGE, MARK or ROLE", truncName(n.Text), truncName(string(n.Kind)))
		}
		if n.Text == "" || len(n.Text) > MaxNameLen {
			bad(field, "name of %d bytes, want 1 to %d", len(n.Text), MaxNameLen)
		}
	}
	if l.Latency != nil {
		for _, f := range []struct {
			name string
			v    float64
		}{{"latency.ratio", l.Latency.Ratio}, {"latency.paired_ratio", l.Latency.PairedRatio}, {"latency.control_ratio", l.Latency.ControlRatio}, {"latency.control_paired_ratio", l.Latency.ControlPairedRatio}} {
			if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
				bad(f.name, "%v, want a finite non-negative number", f.v)
			}
		}
	}
	return errors.Join(errs...)
}

// truncName shortens a name for an error message.
func truncName(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// decodeMeta parses a capture's JSON metadata strictly: besides fields
// that are unknown, it rejects duplicate keys (encoding/json keeps the last
// silently), keys that are not lower case (encoding/json matches
// "WARPS" to "warps"; every iket key is lower case) and anything after
// the JSON value.
func decodeMeta(b []byte, m *Meta) error {
	if err := checkKeys(b); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(m); err != nil {
		return err
	}
	if rest := bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return fmt.Errorf("%d bytes after the JSON value, at offset %d of the metadata", len(rest), len(b)-len(rest))
	}
	if len(m.Launches) > maxLaunches {
		return fmt.Errorf("%d launches, at most %d", len(m.Launches), maxLaunches)
	}
	return nil
}

// checkKeys walks the JSON in b and reports the first object key that is
// duplicated or not lower case, with its path. Syntax errors are left to
// the decoder, which names their offset.
func checkKeys(b []byte) error {
	type frame struct {
		obj       bool
		keys      map[string]bool
		path, key string
		idx       int
		expectKey bool
	}
	var stack []*frame
	join := func(p, k string) string {
		if p == "" {
			return k
		}
		return p + "." + k
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		var top *frame
		if n := len(stack); n > 0 {
			top = stack[n-1]
		}
		d, isDelim := tok.(json.Delim)
		switch {
		case top != nil && top.obj && top.expectKey && isDelim && d == '}',
			top != nil && !top.obj && isDelim && d == ']':
			stack = stack[:len(stack)-1]
		case top != nil && top.obj && top.expectKey:
			k, _ := tok.(string)
			where := top.path
			if where == "" {
				where = "top level"
			}
			if top.keys[k] {
				return fmt.Errorf("%s: duplicate key %q", where, truncName(k))
			}
			for _, r := range k {
				if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
					return fmt.Errorf("%s: key %q: iket's keys are lower case (a-z, 0-9, _), and a key matching another's case-insensitively would merge with it", where, truncName(k))
				}
			}
			top.keys[k], top.key, top.expectKey = true, k, false
			continue
		default: // a value
			path := ""
			switch {
			case top == nil:
			case top.obj:
				path = join(top.path, top.key)
			default:
				path = fmt.Sprintf("%s[%d]", top.path, top.idx)
			}
			if isDelim && (d == '{' || d == '[') {
				stack = append(stack, &frame{obj: d == '{', keys: map[string]bool{}, path: path, expectKey: d == '{'})
				continue
			}
		}
		// A value ended: the enclosing container moves on.
		if len(stack) == 0 {
			return nil
		}
		if top := stack[len(stack)-1]; top.obj {
			top.expectKey = true
		} else {
			top.idx++
		}
	}
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
	seen := make(map[string]int, len(lines)-1)
	for i, line := range lines[1:] {
		kind, text, ok := strings.Cut(line, " ")
		if !ok || text == "" {
			return nil, fmt.Errorf("parse name table: line %d %q: want \"KIND name\"", i+2, line)
		}
		k := NameKind(kind)
		if k != NameRange && k != NameMark && k != NameRole {
			return nil, fmt.Errorf("parse name table: line %d: kind %q, want RANGE, MARK or ROLE", i+2, kind)
		}
		if len(text) > MaxNameLen {
			return nil, fmt.Errorf("parse name table: line %d: name of %d bytes, at most %d", i+2, len(text), MaxNameLen)
		}
		if len(names) == MaxNames {
			return nil, fmt.Errorf("parse name table: more than %d names", MaxNames)
		}
		if j, dup := seen[text]; dup {
			return nil, fmt.Errorf("parse name table: line %d: %q repeats line %d", i+2, text, j+2)
		}
		seen[text] = i
		names = append(names, Name{ID: uint16(i + 1), Kind: k, Text: text})
	}
	return names, nil
}

// MaxNames bounds a launch's name table: name ids are 13 bits, 0 is none.
const MaxNames = 8191

const nameTableHeader = "iket-names 1"
