package attach

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/iket-trace/iket/trace"
)

// rankVars are the launchers' variables that give a process's rank, most
// specific first.
var rankVars = []string{"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}

// Rank returns the process's rank from its launcher's variables, or -1.
func (p *Process) Rank() int {
	for _, v := range rankVars {
		if s, ok := p.Hello.Env[v]; ok {
			if r, err := strconv.Atoi(s); err == nil && r >= 0 {
				return r
			}
		}
	}
	return -1
}

// Traced returns the launches that came back with buffers, in order.
func (p *Process) Traced() []*Launch {
	var out []*Launch
	for _, l := range p.Launches {
		if l.Info.Traced && l.Payload != nil {
			out = append(out, l)
		}
	}
	return out
}

// Capture describes launches (of p's, with buffers; nil = p.Traced()) for
// trace.WriteCapture: the metadata (tool names the writer, args the
// program's command line when p is the program itself) and each launch's
// buffers. Launches whose module's name table does not parse are left out,
// each with why. It returns an error when no launch is left.
func (p *Process) Capture(tool string, args []string, launches []*Launch) (trace.Meta, []io.Reader, []string, error) {
	if launches == nil {
		launches = p.Traced()
	}
	meta := trace.Meta{Tool: tool, Created: time.Now().UTC(), Host: p.Hello.Host}
	meta.Process = &trace.Process{
		PID: p.Hello.PID, PPID: p.Hello.PPID, Exe: p.Hello.Exe, Args: args, Host: p.Hello.Host,
		Env: envList(p.Hello.Env), Rank: p.Rank(),
	}
	var bufs []io.Reader
	var left []string
	for _, l := range launches {
		in := l.Info
		table, ok := p.Names[in.Kernel]
		if !ok {
			left = append(left, fmt.Sprintf("%s launch %d: its module's name table never arrived", l.Kernel, in.Occurrence))
			continue
		}
		names, err := trace.ParseNameTable(table)
		if err != nil {
			left = append(left, fmt.Sprintf("%s launch %d: %v", l.Kernel, in.Occurrence, err))
			continue
		}
		if meta.Version == 0 {
			meta.Version = in.Version
		} else if meta.Version != in.Version {
			left = append(left, fmt.Sprintf("%s launch %d: record format %d beside format %d in one process", l.Kernel, in.Occurrence, in.Version, meta.Version))
			continue
		}
		mode := trace.ModeStop
		if in.Build&1 != 0 {
			mode = trace.ModeWrap
		}
		lm := trace.LaunchMeta{
			Kernel:      l.Kernel,
			Source:      "application " + p.Hello.Exe,
			Grid:        in.Grid,
			Block:       in.Block,
			SharedBytes: in.SharedBytes,
			WarpsPerCTA: in.WarpsPerCTA,
			Warps:       in.Warps,
			Capacity:    in.Capacity,
			Mode:        mode,
			Names:       names,
			Mangled:     in.Kernel,
			Occurrence:  in.Occurrence,
			Resources:   &in.Resources,
			HostClock:   &in.HostNS,
			// the library's launch report always has it
			RecordsL2Bytes: &in.RecordsL2Bytes,
		}
		if in.Cluster != [3]uint32{1, 1, 1} {
			lm.Cluster = in.Cluster
		}
		if meta.Device == nil {
			meta.Device = deviceOf(in.Device)
		}
		// Stored with as many records per warp as its fullest warp used,
		// when every warp's fit (trace.Shrink).
		rd, err := trace.Shrink(meta.Version, &lm, l.Payload)
		if err != nil {
			left = append(left, fmt.Sprintf("%s launch %d: %v", l.Kernel, in.Occurrence, err))
			continue
		}
		meta.Launches = append(meta.Launches, lm)
		bufs = append(bufs, rd)
	}
	if len(meta.Launches) == 0 {
		return meta, nil, left, fmt.Errorf("process %d: no traced launch to write", p.Hello.PID)
	}
	return meta, bufs, left, nil
}

// envList is env as sorted NAME=value strings.
func envList(env map[string]string) []string {
	var out []string
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func deviceOf(d Device) *trace.Device {
	return &trace.Device{
		Name:          d.Name,
		UUID:          d.UUID,
		CUDA:          fmt.Sprintf("%d.%d", d.DriverVersion/1000, d.DriverVersion%1000/10),
		ComputeCap:    d.CC,
		SMs:           d.SMs,
		MaxSMClockMHz: uint32(d.MaxClockKHz / 1000),
	}
}
