package iket

import (
	"bytes"
	"fmt"
	"math"
	"time"

	"github.com/iket-trace/iket/iket/internal/cuda"
	"github.com/iket-trace/iket/internal/raw"
	"github.com/iket-trace/iket/trace"
)

// Defaults of [TimingOptions].
const (
	DefaultRounds           = 5
	DefaultCallsPerRound    = 20
	DefaultMaxWarmupBatches = 20
	DefaultFlushBytes       = 256 << 20
	DefaultTimingTimeout    = 60 * time.Second
	// warmupTolerance: warm-up ends when two consecutive batch means of each
	// build differ by less than this fraction.
	warmupTolerance = 0.02
)

// TimingOptions configure [Time].
type TimingOptions struct {
	// Warmup is the number of untimed calls of each build before measuring.
	// 0 warms up until stable: batches of CallsPerRound calls per build
	// until two consecutive batch means of each build differ by less than
	// 2%, at most MaxWarmupBatches batches. Negative: no warm-up.
	Warmup           int
	MaxWarmupBatches int // default 20
	Rounds           int // default 5
	CallsPerRound    int // default 20
	// SkipL2Flush turns off the L2 flush: by default a FlushBytes buffer is
	// written with cuMemsetD8Async before each timed call, outside its
	// events, so every call starts with a cold L2.
	SkipL2Flush bool
	FlushBytes  int64 // default 256 MiB
	// Capacity and Mode size the instrumented build's warp buffers, which it
	// writes during timing as it would when traced (defaults as TraceOptions).
	Capacity uint32
	Mode     trace.Mode
	Timeout  time.Duration // per batch of calls; default 60 s
	// Control, when set, is a third build timed in every round: the
	// uninstrumented build's image loaded a second time ([Module.Reload]),
	// so the result shows what two identical builds differ by in the same
	// run ([trace.Latency.ControlRatio]) and the ratio can be read against
	// it. The rounds then take the three builds in an order that rotates
	// from round to round. (To time another kernel version against this
	// one, kernels/bench has --control.)
	Control *Module
}

func (o *TimingOptions) defaults() error {
	if o.Rounds <= 0 {
		o.Rounds = DefaultRounds
	}
	if o.CallsPerRound <= 0 {
		o.CallsPerRound = DefaultCallsPerRound
	}
	if o.MaxWarmupBatches <= 0 {
		o.MaxWarmupBatches = DefaultMaxWarmupBatches
	}
	if o.FlushBytes <= 0 {
		o.FlushBytes = DefaultFlushBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimingTimeout
	}
	t := TraceOptions{Capacity: o.Capacity, Mode: o.Mode}
	if err := t.defaults(); err != nil {
		return err
	}
	o.Capacity, o.Mode = t.Capacity, t.Mode
	return nil
}

// Boundary texts recorded in trace.TimingSettings.
const (
	boundaryFlushed   = "one kernel launch on one stream, L2 flushed before each call, events around the launch only"
	boundaryUnflushed = "one kernel launch on one stream, L2 not flushed, events around the launch only"
)

// timer runs batches of timed calls of one build (d.mu held).
type timer struct {
	d      *Device
	events []cuda.Event
	flush  cuda.DevicePtr
	nflush uint64
	opt    *TimingOptions
	cfg    LaunchConfig
}

// batch queues n calls (n <= len(events)/2), each: L2 flush, start event,
// launch, end event; waits for the last; returns each call's µs.
func (t *timer) batch(p *prepared, n int) ([]float64, error) {
	c, d := t.d.ctx, t.d
	for i := 0; i < n; i++ {
		if t.nflush > 0 {
			if err := c.MemsetAsync(t.flush, byte(i+1), t.nflush, d.stream); err != nil {
				return nil, fmt.Errorf("time %s: flush L2: %w", t.cfg.Kernel, err)
			}
		}
		if err := c.Record(t.events[2*i], d.stream); err != nil {
			return nil, fmt.Errorf("time %s: %w", t.cfg.Kernel, err)
		}
		if err := d.launch(p); err != nil {
			d.fault(err)
			return nil, &KernelError{Kernel: t.cfg.Kernel, Config: t.cfg, Code: codeOf(err), Err: err}
		}
		if err := c.Record(t.events[2*i+1], d.stream); err != nil {
			return nil, fmt.Errorf("time %s: %w", t.cfg.Kernel, err)
		}
	}
	last := t.events[2*n-1]
	done, err := d.poll(last, t.opt.Timeout)
	if !done {
		// The events stay with the hung kernel: the caller's releases park
		// them, and the last one tells usable() when the kernel ended.
		d.hung = &hangState{kernel: t.cfg.Kernel, since: time.Now(), done: last, borrowed: true}
		return nil, &HangError{Kernel: t.cfg.Kernel, Config: t.cfg, Timeout: t.opt.Timeout}
	}
	if err != nil {
		d.fault(err)
		return nil, &KernelError{Kernel: t.cfg.Kernel, Config: t.cfg, Code: codeOf(err), Err: err}
	}
	if p.dims.Window.Bytes != 0 {
		// its records kept in the L2 (keepRecords): normal lines again
		_ = c.ResetPersistingL2()
	}
	us := make([]float64, n)
	for i := range us {
		ms, err := c.Elapsed(t.events[2*i], t.events[2*i+1])
		if err != nil {
			return nil, fmt.Errorf("time %s: call %d: %w", t.cfg.Kernel, i, err)
		}
		us[i] = float64(ms) * 1000
	}
	return us, nil
}

// Time measures the kernel in both builds with CUDA events around each
// launch: after warm-up, Rounds rounds, each running CallsPerRound calls of
// one build then of the other, alternating which goes first (with a
// Control, of each of the three, in an order rotating from round to round).
// Each round's sample is the mean of its calls; the result keeps every
// round's sample and their median, min and max, Ratio = instrumented median
// / uninstrumented median, and PairedRatio, the median of the rounds'
// ratios. The instrumented build writes real warp buffers (Capacity, Mode),
// kept in the L2 as Trace keeps them.
// base must be uninstrumented and inst instrumented, on the same device.
// Time blocks for the whole measurement.
func Time(base, inst *Module, cfg LaunchConfig, args []Arg, opt TimingOptions) (*trace.Latency, error) {
	if base == nil || inst == nil {
		return nil, fmt.Errorf("time %s: need both builds", cfg.Kernel)
	}
	if base.d != inst.d {
		return nil, fmt.Errorf("time %s: the two builds are on different devices", cfg.Kernel)
	}
	if base.instrumented {
		return nil, fmt.Errorf("time %s: the baseline module %s is instrumented", cfg.Kernel, base.src.Path)
	}
	if !inst.instrumented {
		return nil, fmt.Errorf("time %s: the instrumented module %s records no events", cfg.Kernel, inst.src.Path)
	}
	if ctl := opt.Control; ctl != nil {
		switch {
		case ctl.d != base.d:
			return nil, fmt.Errorf("time %s: the control is on another device", cfg.Kernel)
		case ctl.instrumented:
			return nil, fmt.Errorf("time %s: the control module %s is instrumented", cfg.Kernel, moduleName(ctl.src))
		case ctl == base:
			return nil, fmt.Errorf("time %s: the control is the baseline module itself: load it again (Module.Reload)", cfg.Kernel)
		case !bytes.Equal(ctl.image, base.image):
			return nil, fmt.Errorf("time %s: the control %s is not the baseline's image loaded again (Module.Reload), so it would not show what identical builds differ by", cfg.Kernel, moduleName(ctl.src))
		}
	}
	if opt.Mode == "" {
		opt.Mode = inst.Mode() // a build records in one mode
	}
	if err := opt.defaults(); err != nil {
		return nil, err
	}
	if err := inst.checkMode(cfg.Kernel, opt.Mode); err != nil {
		return nil, err
	}
	d := inst.d
	d.mu.Lock()
	defer d.mu.Unlock()
	pb, err := base.prepare(cfg, args)
	if err != nil {
		return nil, err
	}
	pi, err := inst.prepare(cfg, args)
	if err != nil {
		return nil, err
	}
	builds := []*prepared{pb, pi}
	if opt.Control != nil {
		pc, err := opt.Control.prepare(cfg, args)
		if err != nil {
			return nil, fmt.Errorf("time %s: prepare the control: %w", cfg.Kernel, err)
		}
		builds = append(builds, pc)
	}
	c := d.ctx
	var held []*resource
	restoreL2 := func() {}
	defer func() {
		switch {
		case d.broken == nil && d.hung == nil:
			_ = inst.setState(0, 0, raw.StopMask, 1)
			restoreL2()
		case d.broken == nil:
			d.hung.after = restoreL2 // once the kernel has ended
		}
		for _, r := range held {
			d.release(r)
		}
	}()

	t := &timer{d: d, opt: &opt, cfg: cfg}
	if !opt.SkipL2Flush {
		t.nflush = uint64(opt.FlushBytes)
		t.flush, err = c.Alloc(t.nflush)
		if err != nil {
			return nil, fmt.Errorf("time %s: allocate the L2 flush buffer: %w", cfg.Kernel, err)
		}
		fp := t.flush
		held = append(held, d.track("L2 flush buffer", func() error { return c.Free(fp) }))
	}
	to := TraceOptions{Capacity: opt.Capacity, Mode: opt.Mode}
	_ = to.defaults()
	meta := inst.launchMeta(cfg, to)
	size := uint64(meta.Size())
	raw, bufs, err := allocWindow(c, size)
	if err != nil {
		return nil, fmt.Errorf("time %s: allocate %d bytes of warp buffers: %w", cfg.Kernel, size, err)
	}
	held = append(held, d.track("warp buffers", func() error { return c.Free(raw) }))
	if err := c.Memset(bufs, 0, size); err != nil {
		return nil, fmt.Errorf("time %s: zero warp buffers: %w", cfg.Kernel, err)
	}
	if err := inst.setState(uint64(bufs), to.Capacity, to.wrapMask(), meta.WarpsPerCTA); err != nil {
		return nil, fmt.Errorf("time %s: %w", cfg.Kernel, err)
	}
	// The instrumented build's records kept in the L2 as Trace keeps them;
	// after each batch its persisting lines are made normal again, so that
	// no build's calls run with them in the L2.
	pi.dims.Window, _, restoreL2 = d.keepRecords(bufs, size)
	for i := 0; i < 2*opt.CallsPerRound; i++ {
		e, err := c.NewEvent(true)
		if err != nil {
			return nil, fmt.Errorf("time %s: %w", cfg.Kernel, err)
		}
		t.events = append(t.events, e)
		held = append(held, d.track("event", func() error { return c.DestroyEvent(e) }))
	}

	settings := trace.TimingSettings{
		Rounds:        opt.Rounds,
		CallsPerRound: opt.CallsPerRound,
		FlushL2:       !opt.SkipL2Flush,
		Interleaved:   true,
		Boundary:      boundaryUnflushed,
	}
	if !opt.SkipL2Flush {
		settings.FlushBytes = opt.FlushBytes
		settings.Boundary = boundaryFlushed
	}

	// Warm-up.
	switch {
	case opt.Warmup > 0:
		for left := opt.Warmup; left > 0; left -= opt.CallsPerRound {
			n := min(left, opt.CallsPerRound)
			for _, p := range builds {
				if _, err := t.batch(p, n); err != nil {
					return nil, err
				}
			}
		}
		settings.Warmup = opt.Warmup
	case opt.Warmup == 0:
		prev := make([]float64, len(builds))
		for b := 1; b <= opt.MaxWarmupBatches; b++ {
			cur := make([]float64, len(builds))
			stable := b > 1
			for j, p := range builds {
				us, err := t.batch(p, opt.CallsPerRound)
				if err != nil {
					return nil, err
				}
				cur[j] = mean(us)
				stable = stable && within(prev[j], cur[j], warmupTolerance)
			}
			settings.Warmup += opt.CallsPerRound
			if stable {
				settings.WarmupStableAt = b
				break
			}
			prev = cur
		}
	}

	// rounds[j] holds build j's samples: uninstrumented, instrumented,
	// control. Round r runs them starting at build r mod n.
	rounds := make([][]float64, len(builds))
	for r := 0; r < opt.Rounds; r++ {
		for k := range builds {
			j := (r + k) % len(builds)
			us, err := t.batch(builds[j], opt.CallsPerRound)
			if err != nil {
				return nil, err
			}
			rounds[j] = append(rounds[j], mean(us))
		}
	}
	settings.Order = orderAlternating
	if len(builds) == 3 {
		settings.Order = orderRotating
	}
	lat := newLatency(rounds[0], rounds[1], settings)
	if len(builds) == 3 {
		var ctl trace.Samples
		ctl, lat.ControlRatio, lat.ControlPairedRatio = trace.Compare(rounds[0], rounds[2])
		lat.Control = &ctl
	}
	return lat, nil
}

// How Time's rounds take turns, in the bench's words for the same orders,
// so captures from both read alike.
const (
	orderAlternating = "uninstrumented and instrumented, alternating"
	orderRotating    = "uninstrumented, instrumented, control, rotating each round"
)

// newLatency is the comparison of the two builds' rounds (rb and ri, round
// i of each timed together); see [trace.Compare].
func newLatency(rb, ri []float64, settings trace.TimingSettings) *trace.Latency {
	lat := &trace.Latency{Uninstrumented: trace.NewSamples(rb), Settings: settings}
	lat.Instrumented, lat.Ratio, lat.PairedRatio = trace.Compare(rb, ri)
	return lat
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// within reports whether a and b differ by less than tol of the larger.
func within(a, b, tol float64) bool {
	m := math.Max(math.Abs(a), math.Abs(b))
	return m == 0 || math.Abs(a-b) < tol*m
}
