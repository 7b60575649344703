package attach

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ianlancetaylor/demangle"

	"github.com/iket-trace/iket/internal/raw"
)

// Mode is what the library does with selected launches.
type Mode int

const (
	// ModeTrace gives selected launches of instrumented kernels their
	// buffers and times them.
	ModeTrace Mode = iota
	// ModeTime times the launches named in Options.Times, of any kernel
	// (the program built without tracing).
	ModeTime
)

// Options configure [Run].
type Options struct {
	Args   []string // the program and its arguments
	Dir    string   // working directory ("" = this one)
	Env    []string // its environment (nil = this process's)
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer

	Mode     Mode
	Kernel   *regexp.Regexp // selects kernels by demangled or mangled name; nil = all
	Launches Selection      // which matching launches to trace
	Capacity uint32         // records per warp
	Watch    bool           // host-mapped buffers
	// FlushL2 is how many bytes to write before each traced or timed
	// launch, so it starts with a cold L2 (0: the program's cache state).
	FlushL2 int64
	// LaunchTimeout is how long a traced launch may run before it counts as
	// hung; the hung process is then killed.
	LaunchTimeout time.Duration
	// Times, in ModeTime, lists for each mangled kernel name the
	// occurrences (0-based, among the process's launches of that kernel) to
	// time.
	Times map[string][]uint64

	Library string // the injection library (see [Library])
	CUPTI   string // libcupti path for the library; "" = let it search
}

// Result is what a run of the program produced. Close it to remove the
// spooled buffers.
type Result struct {
	ExitCode int    // the program's exit status; 128+n when killed by signal n
	Signal   string // the signal that ended it, if any
	// Hung is the first launch that did not finish within the timeout; its
	// process was killed.
	Hung      *Launch
	Processes []*Process // in the order they connected
	dir       string
}

// Close removes the spooled buffers; Launch payloads are unreadable after.
func (r *Result) Close() error {
	for _, p := range r.Processes {
		if p.spool != nil {
			p.spool.Close()
		}
	}
	return os.RemoveAll(r.dir)
}

// Process is what one of the program's processes sent.
type Process struct {
	Hello    Hello
	Launches []*Launch
	Skipped  []Skip
	Notes    []Note
	// Refused lists instrumented kernels that matched but cannot be traced
	// by this iket (another header version), with why.
	Refused []string
	// Names holds each instrumented kernel's name table (by mangled name).
	Names map[string]string
	// Instrumented lists the instrumented kernels launched (demangled), in
	// the order first seen, whether selected or not.
	Instrumented []string
	Bye          *Bye
	// Err is a protocol error that ended the connection early.
	Err   error
	spool *os.File
	order int
	// watchdog ends the process when a launch that began (msgStart) sends
	// neither its launch nor its skip in time.
	watchdog *time.Timer
}

// watchGrace is what a traced launch may take beyond the library's own
// timeout, for draining the GPU before it and copying its buffers after.
var watchGrace = 60 * time.Second

// watch starts the watchdog of p's launch st (with s.mu held).
func (s *server) watch(p *Process, st Start) {
	p.unwatch()
	limit := time.Duration(st.TimeoutMS)*time.Millisecond*2 + watchGrace
	pid := p.Hello.PID
	p.watchdog = time.AfterFunc(limit, func() {
		l := &Launch{Kernel: Demangle(st.Kernel), Info: LaunchInfo{Kernel: st.Kernel, Traced: true, Occurrence: st.Occurrence, Status: "hang",
			Error: fmt.Sprintf("the launch, with draining the GPU before it and copying its buffers after, did not end within %v", limit)}}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		p.Launches = append(p.Launches, l)
		s.mu.Unlock()
		select {
		case s.hang <- &hungLaunch{pid: pid, launch: l}:
		default:
		}
	})
}

// unwatch stops p's watchdog (with s.mu held).
func (p *Process) unwatch() {
	if p.watchdog != nil {
		p.watchdog.Stop()
		p.watchdog = nil
	}
}

// Launch is one traced or timed launch.
type Launch struct {
	Info LaunchInfo
	// Kernel is the demangled name without parameters (the mangled one when
	// it does not demangle).
	Kernel string
	// Payload holds the launch's warp buffers as copied from the device
	// (nil when none came back: a timed launch, a fault, a failed copy).
	Payload *io.SectionReader
}

// ErrInjectionTaken is returned when the environment already names an
// injection library: another CUDA tool (Nsight Systems, Nsight Compute) is
// attached.
var ErrInjectionTaken = errors.New("CUDA_INJECTION64_PATH is already set: another CUDA tool is attached")

// ProgramError reports a program that could not be started.
type ProgramError struct {
	Program string
	Err     error
}

func (e *ProgramError) Error() string { return fmt.Sprintf("start %s: %v", e.Program, e.Err) }
func (e *ProgramError) Unwrap() error { return e.Err }

// Demangle returns the demangled name of a kernel without its parameters,
// or name itself.
func Demangle(name string) string {
	if s, err := demangle.ToString(name, demangle.NoParams); err == nil {
		return s
	}
	return name
}

// Run starts the program with the injection library, serves its processes
// until it exits and returns what they sent. It blocks. Cancelling ctx sends
// the program SIGTERM (SIGKILL 5 s later). The program's stdin, stdout and
// stderr are the given ones; its exit status is in the Result, not an
// error: the error is for what kept the program from running.
func Run(ctx context.Context, o Options) (*Result, error) {
	if len(o.Args) == 0 {
		return nil, &ProgramError{Program: "(none)", Err: errors.New("no program given")}
	}
	if o.Library == "" {
		return nil, errors.New("attach: no injection library")
	}
	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "CUDA_INJECTION64_PATH="); ok && v != "" {
			return nil, fmt.Errorf("%w (to %s): iket cannot attach beside it", ErrInjectionTaken, v)
		}
	}
	path, err := exec.LookPath(o.Args[0])
	if err != nil {
		return nil, &ProgramError{Program: o.Args[0], Err: err}
	}
	dir, err := os.MkdirTemp("", "iket-run-")
	if err != nil {
		return nil, fmt.Errorf("attach: %w", err)
	}
	res := &Result{dir: dir}
	sock := filepath.Join(dir, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("attach: listen: %w", err)
	}
	defer ln.Close()

	capacity := o.Capacity
	if capacity == 0 {
		capacity = 4096
	}
	timeout := o.LaunchTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	mode := "trace"
	if o.Mode == ModeTime {
		mode = "time"
	}
	env = append(append([]string{}, env...),
		"CUDA_INJECTION64_PATH="+o.Library,
		"IKET_SOCKET="+sock,
		"IKET_MODE="+mode,
		"IKET_CAPACITY="+strconv.FormatUint(uint64(capacity), 10),
		"IKET_LAUNCHES="+o.Launches.env(),
		"IKET_TIMEOUT_MS="+strconv.FormatInt(timeout.Milliseconds(), 10),
	)
	if o.Watch {
		env = append(env, "IKET_WATCH=1")
	}
	if o.FlushL2 > 0 {
		env = append(env, "IKET_FLUSH_L2="+strconv.FormatInt(o.FlushL2, 10))
	}
	if o.CUPTI != "" {
		env = append(env, "IKET_CUPTI_LIB="+o.CUPTI)
	}
	cmd := exec.CommandContext(ctx, path, o.Args[1:]...)
	cmd.Args[0] = o.Args[0]
	cmd.Dir = o.Dir
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = o.Stdin, o.Stdout, o.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second

	s := &server{o: o, res: res, hang: make(chan *hungLaunch, 64)}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, &ProgramError{Program: o.Args[0], Err: err}
	}
	var wg sync.WaitGroup
	var connMu sync.Mutex
	var conns []net.Conn
	acceptDone := make(chan struct{})
	go func() {
		defer close(acceptDone)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			connMu.Lock()
			conns = append(conns, c)
			connMu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.serve(c)
			}()
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	var kill <-chan time.Time // the program's end after a hang
wait:
	for {
		select {
		case werr = <-done:
			break wait
		case h := <-s.hang:
			// Every hung process is killed; the program gets a while to
			// end after the first.
			if res.Hung == nil {
				res.Hung = h.launch
				kill = time.After(5 * time.Second)
			}
			if h.pid > 0 {
				syscall.Kill(h.pid, syscall.SIGKILL)
			} else {
				cmd.Process.Kill()
			}
		case <-kill:
			cmd.Process.Kill()
			kill = nil
		}
	}
	// A process may have connected and exited before its connection was
	// accepted: take what is queued, then stop.
	ln.SetDeadline(time.Now().Add(200 * time.Millisecond))
	<-acceptDone
	ln.Close()
	// Every process's messages were sent before it exited; a descendant
	// that outlives the program gets a short while to finish.
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(3 * time.Second):
		connMu.Lock()
		for _, c := range conns {
			c.Close()
		}
		connMu.Unlock()
		<-finished
	}
	// No watchdog may fire into the result once it is returned.
	s.mu.Lock()
	s.closed = true
	for _, p := range res.Processes {
		p.unwatch()
	}
	s.mu.Unlock()
	res.ExitCode, res.Signal = exitStatus(cmd, werr)
	sort.SliceStable(res.Processes, func(i, j int) bool { return res.Processes[i].order < res.Processes[j].order })
	return res, nil
}

func exitStatus(cmd *exec.Cmd, err error) (int, string) {
	st := cmd.ProcessState
	if st == nil {
		return -1, ""
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), ws.Signal().String()
	}
	return st.ExitCode(), ""
}

type hungLaunch struct {
	pid    int
	launch *Launch
}

// server holds the state shared by the connections of one run.
type server struct {
	o    Options
	res  *Result
	mu   sync.Mutex
	n    int
	hang chan *hungLaunch
	// closed: Run is returning; a watchdog that fires late does nothing.
	closed bool
}

// serve reads one process's messages until it disconnects. A launch that
// began and never ended when the connection closed is not watched further:
// the process can no longer report it, and the program's exit says the rest.
func (s *server) serve(c net.Conn) {
	defer c.Close()
	p := &Process{Names: map[string]string{}}
	s.mu.Lock()
	p.order = s.n
	s.n++
	s.res.Processes = append(s.res.Processes, p)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		p.unwatch()
		s.mu.Unlock()
	}()
	for {
		h, err := readHeader(c)
		if err == io.EOF {
			return
		}
		if err != nil {
			s.fail(p, fmt.Errorf("read message: %w", err))
			return
		}
		js := make([]byte, h.json)
		if _, err := io.ReadFull(c, js); err != nil {
			s.fail(p, fmt.Errorf("read message: %w", err))
			return
		}
		if err := s.handle(c, p, h, js); err != nil {
			s.fail(p, err)
			return
		}
	}
}

func (s *server) fail(p *Process, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.Err == nil {
		p.Err = err
	}
}

func (s *server) handle(c net.Conn, p *Process, h header, js []byte) error {
	if h.typ != msgLaunch && h.payload != 0 {
		return fmt.Errorf("message %q carries %d bytes it should not", h.typ, h.payload)
	}
	if h.typ == msgLaunch {
		return s.launch(c, p, h, js)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch h.typ {
	case msgHello:
		if err := decode(js, &p.Hello); err != nil {
			return fmt.Errorf("hello: %w", err)
		}
		if p.Hello.Protocol != Protocol {
			return fmt.Errorf("the injection library speaks protocol %d, this iket %d", p.Hello.Protocol, Protocol)
		}
	case msgNote:
		var n Note
		if err := decode(js, &n); err != nil {
			return fmt.Errorf("note: %w", err)
		}
		p.Notes = append(p.Notes, n)
	case msgSkip:
		var k Skip
		if err := decode(js, &k); err != nil {
			return fmt.Errorf("skip: %w", err)
		}
		p.Skipped = append(p.Skipped, k)
		p.unwatch()
	case msgStart:
		var st Start
		if err := decode(js, &st); err != nil {
			return fmt.Errorf("start: %w", err)
		}
		s.watch(p, st)
	case msgBye:
		var b Bye
		if err := decode(js, &b); err != nil {
			return fmt.Errorf("bye: %w", err)
		}
		p.Bye = &b
	case msgKernel:
		var q KernelQuery
		if err := decode(js, &q); err != nil {
			return fmt.Errorf("kernel query: %w", err)
		}
		reply := s.decide(p, &q)
		if _, err := io.WriteString(c, reply+"\n"); err != nil {
			return fmt.Errorf("reply: %w", err)
		}
	default:
		return fmt.Errorf("unknown message type %q", h.typ)
	}
	return nil
}

// launch receives a launch and its buffers (copied to the spool outside
// the lock, so other processes are not held up).
func (s *server) launch(c net.Conn, p *Process, h header, js []byte) error {
	l := &Launch{}
	if err := decode(js, &l.Info); err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	l.Kernel = Demangle(l.Info.Kernel)
	if h.payload > 0 {
		if l.Info.BufferBytes != h.payload {
			return fmt.Errorf("launch of %s: %d bytes of buffers, its description says %d", l.Kernel, h.payload, l.Info.BufferBytes)
		}
		sec, err := p.store(s.res.dir, c, int64(h.payload))
		if err != nil {
			return fmt.Errorf("launch of %s: %w", l.Kernel, err)
		}
		l.Payload = sec
	}
	s.mu.Lock()
	p.Launches = append(p.Launches, l)
	p.unwatch()
	s.mu.Unlock()
	if l.Info.Status == "hang" {
		select {
		case s.hang <- &hungLaunch{pid: p.Hello.PID, launch: l}:
		default:
		}
	}
	return nil
}

// decide answers a kernel query: "0", or "1" (trace: a matching
// instrumented kernel), or in time mode "1 occ occ ...".
func (s *server) decide(p *Process, q *KernelQuery) string {
	if q.Names != nil {
		p.Names[q.Name] = *q.Names
	}
	if q.Instrumented {
		p.Instrumented = append(p.Instrumented, Demangle(q.Name))
	}
	if s.o.Mode == ModeTime {
		occ, ok := s.o.Times[q.Name]
		if !ok {
			return "0"
		}
		if len(occ) == 0 {
			return "0"
		}
		// The library reads a reply of at most 64 KiB; past that it times
		// every occurrence, and the ones not traced stay unpaired.
		if r := occurrenceRanges(occ); len(r) < maxReply {
			return "1 " + r
		}
		return "1 *"
	}
	if !q.Instrumented || !s.matches(q.Name) {
		return "0"
	}
	if q.StateSize != 32 || q.Version < raw.MinFormatVersion || q.Version > raw.FormatVersion {
		p.Refused = append(p.Refused, fmt.Sprintf("%s: built against another iket header (iket_state of %d bytes, record format %d; this iket reads formats %d to %d and a 32-byte state)",
			Demangle(q.Name), q.StateSize, q.Version, raw.MinFormatVersion, raw.FormatVersion))
		return "0"
	}
	return "1"
}

// maxReply bounds a reply line (the library's buffer is 64 KiB).
const maxReply = 60000

// occurrenceRanges writes sorted occurrences as runs: "0-4 7 9-12".
func occurrenceRanges(occ []uint64) string {
	var parts []string
	for i := 0; i < len(occ); {
		j := i
		for j+1 < len(occ) && occ[j+1] == occ[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.FormatUint(occ[i], 10))
		} else {
			parts = append(parts, strconv.FormatUint(occ[i], 10)+"-"+strconv.FormatUint(occ[j], 10))
		}
		i = j + 1
	}
	return strings.Join(parts, " ")
}

func (s *server) matches(mangled string) bool {
	if s.o.Kernel == nil {
		return true
	}
	if s.o.Kernel.MatchString(mangled) || s.o.Kernel.MatchString(Demangle(mangled)) {
		return true
	}
	full, err := demangle.ToString(mangled)
	return err == nil && s.o.Kernel.MatchString(full)
}

// store appends n bytes from r to the process's spool file.
func (p *Process) store(dir string, r io.Reader, n int64) (*io.SectionReader, error) {
	if p.spool == nil {
		f, err := os.CreateTemp(dir, "spool-")
		if err != nil {
			return nil, err
		}
		p.spool = f
	}
	off, err := p.spool.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, err
	}
	if _, err := io.CopyN(p.spool, r, n); err != nil {
		return nil, fmt.Errorf("receive buffers: %w", err)
	}
	return io.NewSectionReader(p.spool, off, n), nil
}
