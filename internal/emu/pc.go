package emu

import (
	"fmt"

	"github.com/iket-trace/iket/trace"
)

// PCConfig configures [ProducerConsumer].
type PCConfig struct {
	CTAs          int     // CTAs, one per SM; default 4
	Stages        int     // pipeline stages (iterations) per CTA; default 8
	LoadCycles    uint64  // length of each producer "load" range; default 1000
	ComputeCycles uint64  // length of each consumer "compute" range; default 1000
	Overlap       float64 // 0..1, see ProducerConsumer
	// SkewCycles delays CTA i's start by i*SkewCycles.
	SkewCycles uint64
	Capacity   uint32     // default 1024
	Mode       trace.Mode // default stop
	// Async records the producer's loads with range_start/range_end (token
	// "load", payload = stage) instead of push/pop.
	Async bool
}

// PC names: ids 1..5 in this order.
var pcNames = []string{"ROLE producer", "ROLE consumer", "RANGE load", "RANGE compute", "MARK kernel_start"}

// ProducerConsumer builds a warp-specialised launch: CTAs of 64 threads,
// warp 0 the producer (role "producer", push/pop "load" with payload =
// stage) and warp 1 the consumer (role "consumer", push/pop "compute" with
// payload = stage); both mark "kernel_start" (payload = CTA) first.
//
// Schedule, in SM cycles from the CTA's base b = 10_000 + cta*SkewCycles
// (role at b, mark at b+1):
//
//	load i:    [b+10 + i*P, b+10 + i*P + L]        P = L + (1-Overlap)*C
//	compute i: [max(end of load i, end of compute i-1), ... + C]
//
// With LoadCycles >= Overlap*ComputeCycles, each compute starts when its
// load ends and the next load starts (1-Overlap)*C later, so every compute
// but the last overlaps a load for exactly Overlap*ComputeCycles cycles
// (Overlap 0: strictly alternating; 1: fully pipelined).
func ProducerConsumer(cfg PCConfig) (*Launch, error) {
	if cfg.CTAs == 0 {
		cfg.CTAs = 4
	}
	if cfg.Stages == 0 {
		cfg.Stages = 8
	}
	if cfg.LoadCycles == 0 {
		cfg.LoadCycles = 1000
	}
	if cfg.ComputeCycles == 0 {
		cfg.ComputeCycles = 1000
	}
	if cfg.Capacity == 0 {
		cfg.Capacity = 1024
	}
	if cfg.CTAs < 0 || cfg.Stages < 0 || cfg.Stages > 1<<16 || !(cfg.Overlap >= 0 && cfg.Overlap <= 1) {
		return nil, fmt.Errorf("emu producer-consumer: ctas %d, stages %d (max 65536), overlap %g (0..1)", cfg.CTAs, cfg.Stages, cfg.Overlap)
	}
	l := &Launch{
		Kernel: "warp_specialized", Grid: [3]uint32{uint32(cfg.CTAs), 1, 1}, Block: [3]uint32{64, 1, 1},
		Capacity: cfg.Capacity, Mode: cfg.Mode, Names: MustNames(pcNames...), SMs: uint32(max(cfg.CTAs, 1)),
	}
	L, C := cfg.LoadCycles, cfg.ComputeCycles
	P := L + uint64((1-cfg.Overlap)*float64(C)+0.5)
	for cta := 0; cta < cfg.CTAs; cta++ {
		ck := l.Clock(uint32(cta))
		b := ck.Cycle0 + 10_000 + uint64(cta)*cfg.SkewCycles
		prod := l.Warp([3]uint32{uint32(cta), 0, 0}, 0)
		cons := l.Warp([3]uint32{uint32(cta), 0, 0}, 1)
		prod.Role("producer", b).Mark("kernel_start", uint16(cta), b+1)
		cons.Role("consumer", b).Mark("kernel_start", uint16(cta), b+1)
		var compEnd uint64
		for i := 0; i < cfg.Stages; i++ {
			ls := b + 10 + uint64(i)*P
			if cfg.Async {
				prod.Start("load", uint16(i), ls).End("load", uint16(i), ls+L)
			} else {
				prod.Push("load", uint16(i), ls).Pop(ls + L)
			}
			cs := max(ls+L, compEnd)
			cons.Push("compute", uint16(i), cs).Pop(cs + C)
			compEnd = cs + C
		}
	}
	return l, nil
}
