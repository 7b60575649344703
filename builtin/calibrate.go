package builtin

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/iket-trace/iket/iket"
)

// The calibrate program: one CTA of 4 warps per SM meets at a grid-wide
// barrier CalibrateRounds times; every warp marks after_barrier at each
// release (see kernels/examples/calibrate.cu and docs/CLOCKS.md).
const (
	CalibrateRounds      = 32
	calibrateThreads     = 128
	calibrateWarpsPerCTA = calibrateThreads / 32
	// calibrateCausalSlackNs is how far a round's earliest release may read
	// before the previous round's latest one on %globaltimer before the
	// output counts as wrong. The barrier orders them, so only the timer's
	// own disagreement between SMs (a few ticks of 32 ns) can reverse them.
	calibrateCausalSlackNs = 1000
)

func init() {
	register(&iket.Program{
		Name:        "calibrate",
		Entry:       "calibrate",
		Description: "clock calibration: one CTA of 4 warps per SM meets at a grid-wide barrier 32 times and every warp marks after_barrier at each release (iket calibrate reads the spread)",
		Params:      []iket.ParamKind{iket.ParamPtr, iket.ParamPtr, iket.ParamPtr, iket.ParamU32},
		ConfigFor: func(sms int) iket.LaunchConfig {
			return iket.LaunchConfig{
				Kernel: "calibrate",
				Grid:   [3]uint32{uint32(max(sms, 1)), 1, 1},
				Block:  [3]uint32{calibrateThreads, 1, 1},
			}
		},
		Setup: setupCalibrate,
	}, "calibrate.cu")
}

func setupCalibrate(d *iket.Device, cfg iket.LaunchConfig) (*iket.Workload, error) {
	ctas := int(cfg.CTAs())
	warps := int(cfg.WarpsPerCTA())
	if warps != calibrateWarpsPerCTA || cfg.Grid[1] != 1 || cfg.Grid[2] != 1 {
		return nil, fmt.Errorf("set up calibrate: launch %s: want a 1-D grid of %d-thread CTAs", cfg, calibrateThreads)
	}
	n := uint64(ctas*warps*CalibrateRounds) * 8
	w := &iket.Workload{Buffers: map[string]*iket.Buffer{}}
	for _, b := range []struct {
		name string
		size uint64
	}{{"out", n}, {"counters", 8 * CalibrateRounds}, {"failed", 4}} {
		buf, err := d.Alloc(b.size)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("set up calibrate: %s: %w", b.name, err)
		}
		w.Buffers[b.name] = buf
	}
	out, counters, failed := w.Buffers["out"], w.Buffers["counters"], w.Buffers["failed"]
	// The counters must start at a multiple of the grid (the kernel keeps
	// them so); zero them now, so a Verify before any Poison is meaningful.
	for _, b := range []*iket.Buffer{counters, failed} {
		if err := b.Fill(0); err != nil {
			w.Close()
			return nil, fmt.Errorf("set up calibrate: %w", err)
		}
	}
	w.Args = []iket.Arg{out, counters, failed, iket.U32(CalibrateRounds)}
	w.Poison = func() error {
		// Zero the counters too: a launch cut short (timeout) leaves them
		// off a multiple of the grid.
		for _, b := range []*iket.Buffer{counters, failed} {
			if err := b.Fill(0); err != nil {
				return err
			}
		}
		return out.Fill(0xff)
	}
	w.Verify = func() error {
		flag := make([]byte, 4)
		if err := failed.Read(flag); err != nil {
			return fmt.Errorf("read calibrate failure flag: %w", err)
		}
		got := make([]byte, n)
		if err := out.Read(got); err != nil {
			return fmt.Errorf("read calibrate output: %w", err)
		}
		return verifyCalibrate(got, binary.LittleEndian.Uint32(flag), ctas, warps, CalibrateRounds)
	}
	return w, nil
}

// CalibrateError says what is wrong with the calibrate program's output.
type CalibrateError struct {
	CTA, Warp, Round int // -1 when not about one warp or round
	Msg              string
}

func (e *CalibrateError) Error() string {
	loc := ""
	if e.CTA >= 0 {
		loc = fmt.Sprintf("CTA %d warp %d ", e.CTA, e.Warp)
	}
	if e.Round >= 0 {
		loc += fmt.Sprintf("round %d", e.Round)
	}
	if loc == "" {
		return "calibrate output: " + e.Msg
	}
	return fmt.Sprintf("calibrate output: %s: %s", loc, e.Msg)
}

// ErrBarrierGaveUp is wrapped by the error of a launch whose barrier gave up
// waiting (the CTAs were not all co-resident, or one never arrived).
var ErrBarrierGaveUp = errors.New("grid barrier gave up waiting: not every CTA was resident (is the GPU shared?)")

// verifyCalibrate checks the calibrate program's output: out holds, per warp
// per round, the %globaltimer read right after the round's release. Every
// value must be written, each warp's values must not go back in time, and
// no round may start (its earliest release) more than a microsecond before
// the previous round ended (its latest release): the barrier orders them.
func verifyCalibrate(out []byte, failed uint32, ctas, warps, rounds int) error {
	if failed != 0 {
		return fmt.Errorf("calibrate output: failure flag %d: %w", failed, ErrBarrierGaveUp)
	}
	if want := ctas * warps * rounds * 8; len(out) != want {
		return &CalibrateError{CTA: -1, Round: -1, Msg: fmt.Sprintf("%d bytes, want %d (%d CTAs x %d warps x %d rounds x 8)", len(out), want, ctas, warps, rounds)}
	}
	const poison = ^uint64(0)
	lo := make([]uint64, rounds) // earliest release per round
	hi := make([]uint64, rounds) // latest
	unwritten, first := 0, (*CalibrateError)(nil)
	for cta := range ctas {
		for wp := range warps {
			base := (cta*warps + wp) * rounds
			var prev uint64
			for r := range rounds {
				t := binary.LittleEndian.Uint64(out[8*(base+r):])
				if t == poison || t == 0 {
					unwritten++
					if first == nil {
						first = &CalibrateError{CTA: cta, Warp: wp, Round: r, Msg: fmt.Sprintf("not written (0x%x)", t)}
					}
					continue
				}
				if t < prev {
					return &CalibrateError{CTA: cta, Warp: wp, Round: r, Msg: fmt.Sprintf("globaltimer %d is %d ns before the previous round's %d", t, prev-t, prev)}
				}
				prev = t
				if lo[r] == 0 || t < lo[r] {
					lo[r] = t
				}
				hi[r] = max(hi[r], t)
			}
		}
	}
	if unwritten > 0 {
		first.Msg = fmt.Sprintf("%s; %d of %d values unwritten", first.Msg, unwritten, ctas*warps*rounds)
		return first
	}
	for r := 1; r < rounds; r++ {
		if lo[r]+calibrateCausalSlackNs < hi[r-1] {
			return &CalibrateError{CTA: -1, Round: r, Msg: fmt.Sprintf("earliest release at %d ns is %d ns before round %d's latest at %d ns; the barrier did not hold", lo[r], hi[r-1]-lo[r], r-1, hi[r-1])}
		}
	}
	return nil
}
