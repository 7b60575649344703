package attach

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"

	"github.com/iket-trace/iket/trace"
)

// Protocol is the version of the injection protocol this package speaks.
const Protocol = 1

// maxJSON bounds a message's JSON part; a buffer payload may be up to 4 GiB.
const maxJSON = 16 << 20

// Message types.
const (
	msgHello  = 'H' // the process connected
	msgNote   = 'E' // a warning or an error
	msgKernel = 'K' // a kernel seen for the first time; a reply follows
	msgLaunch = 'L' // a traced or timed launch, with its buffers
	msgSkip   = 'S' // a launch that could not be traced, and why
	msgBye    = 'B' // the process is exiting
	msgStart  = 'T' // a traced or timed launch begins: its L or S must follow in time
)

// Hello is what a process says when it connects.
type Hello struct {
	Protocol      int               `json:"protocol"`
	PID           int               `json:"pid"`
	PPID          int               `json:"ppid"`
	Host          string            `json:"host"`
	Exe           string            `json:"exe"`
	DriverVersion int               `json:"driver_version"`
	Env           map[string]string `json:"env"`
}

// Note is a warning or an error from the library.
type Note struct {
	Level  string  `json:"level"`  // "warning" or "error"
	Code   string  `json:"code"`   // cupti_missing, cupti_taken, cupti_error, driver, l2_window, capacity, ...
	Kernel *string `json:"kernel"` // the kernel it is about (mangled), if one
	Msg    string  `json:"msg"`
}

// Text is the note's message, after its kernel's demangled name when it
// names one.
func (n Note) Text() string {
	if n.Kernel == nil {
		return n.Msg
	}
	return Demangle(*n.Kernel) + ": " + n.Msg
}

// KernelQuery describes a function the library saw launched for the first
// time.
type KernelQuery struct {
	Name         string  `json:"name"` // mangled
	Instrumented bool    `json:"instrumented"`
	StateSize    int     `json:"state_size"`
	Version      int     `json:"version"`
	Build        int     `json:"build"`
	Names        *string `json:"names"`
}

// Device is the launch's device as the driver describes it.
type Device struct {
	Ordinal       int    `json:"ordinal"`
	Name          string `json:"name"`
	PCI           string `json:"pci"`
	UUID          string `json:"uuid"`
	SMs           int    `json:"sms"`
	CC            string `json:"cc"`
	MaxClockKHz   int    `json:"max_clock_khz"`
	DriverVersion int    `json:"driver_version"`
}

// LaunchInfo describes one traced or timed launch.
type LaunchInfo struct {
	Kernel      string    `json:"kernel"` // mangled
	Traced      bool      `json:"traced"`
	Family      string    `json:"family"` // the driver entry point
	Index       uint64    `json:"index"`  // among matching launches (traced)
	Occurrence  uint64    `json:"occurrence"`
	Status      string    `json:"status"` // ok, hang, fault, launch_error, copy_error
	Error       string    `json:"error"`
	Grid        [3]uint32 `json:"grid"`
	Block       [3]uint32 `json:"block"`
	Cluster     [3]uint32 `json:"cluster"`
	SharedBytes uint32    `json:"shared_bytes"`
	ElapsedMS   *float64  `json:"elapsed_ms"`
	// FlushedBytes were written to flush the L2 right before the launch
	// (0: none).
	FlushedBytes uint64 `json:"flushed_bytes"`
	// PreparedBytes were written to device memory right before the launch
	// besides the flush: a traced launch's buffers zeroed; without a flush,
	// as many bytes before the baseline's launch, so that both start from
	// the same cache (0: none).
	PreparedBytes uint64          `json:"prepared_bytes"`
	HostNS        trace.HostClock `json:"host_ns"`
	WarpsPerCTA   uint32          `json:"warps_per_cta"`
	Warps         uint64          `json:"warps"`
	Capacity      uint32          `json:"capacity"`
	Version       int             `json:"version"`
	Build         int             `json:"build"`
	Watch         bool            `json:"watch"`
	BufferBytes   uint64          `json:"buffer_bytes"`
	// RecordsL2Bytes is the L2 set aside to keep the launch's records
	// (persisting lines in an access-policy window over its buffers; 0:
	// none, the records went through the L2 with the kernel's data).
	RecordsL2Bytes uint64          `json:"records_l2_bytes"`
	Resources      trace.Resources `json:"resources"`
	Device         Device          `json:"device"`
}

// Skip is a launch that could not be traced.
type Skip struct {
	Kernel *string `json:"kernel"` // nil for a graph launch
	Code   string  `json:"code"`   // graph, stream_capture, too_large, alloc, SkipNoWarp, SkipDormant, ...
	Why    string  `json:"why"`
}

// SkipNoWarp is the code of a kernel of an instrumented module whose first
// traced launch had no warp construct an iket::Warp: it records nothing, is
// not counted against the selection and is not traced again.
const SkipNoWarp = "no_warp"

// SkipDormant is the code of a kernel of a dormant build (iket.cuh, an nvcc
// build without IKET_LIVE) whose module iket could not compile again with
// its events on: it records nothing and is not traced.
const SkipDormant = "dormant"

// Start is a traced or timed launch beginning.
type Start struct {
	Kernel     string `json:"kernel"`
	Occurrence uint64 `json:"occurrence"`
	TimeoutMS  int64  `json:"timeout_ms"`
}

// Bye is a process's counts when it exits. Matching counts the launches
// that matched the selection up to the end of the last --launch range: the
// library examines no launch after it.
type Bye struct {
	Launches      uint64 `json:"launches"`
	Matching      uint64 `json:"matching"`
	Traced        uint64 `json:"traced"`
	Timed         uint64 `json:"timed"`
	Skipped       uint64 `json:"skipped"`
	RuntimeUnseen uint64 `json:"runtime_unseen"`
	// JITLoads counts the module loads whose image iket looked into for a
	// dormant build (trace mode), JITReplaced those it gave PTX with the
	// events on, and JITNs the time that took, ns.
	JITLoads    uint64 `json:"jit_loads"`
	JITReplaced uint64 `json:"jit_replaced"`
	JITNs       uint64 `json:"jit_ns"`
}

// header is a message's framing: the length of what follows it, its type
// and the length of its JSON; the payload is the rest.
type header struct {
	typ     byte
	json    uint32
	payload uint64
}

func readHeader(r io.Reader) (header, error) {
	var b [9]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return header{}, err
	}
	total := uint64(binary.LittleEndian.Uint32(b[0:4]))
	h := header{typ: b[4], json: binary.LittleEndian.Uint32(b[5:9])}
	if total < 5 || uint64(h.json) > total-5 {
		return header{}, fmt.Errorf("message of %d bytes with %d bytes of JSON", total, h.json)
	}
	if h.json > maxJSON {
		return header{}, fmt.Errorf("message JSON of %d bytes, at most %d", h.json, maxJSON)
	}
	h.payload = total - 5 - uint64(h.json)
	return h, nil
}

// decode reads a message's JSON strictly into v.
func decode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
