package attach

import (
	"fmt"
	"math"
	"sort"

	"github.com/iket-trace/iket/trace"
)

// Boundary states what an application launch's time covers.
const Boundary = "one kernel launch inside the application, CUDA events recorded on its own stream right before and after it; " +
	"the GPU drained before it (traced and timed launches run alone), left idle for 20 ms and, unless --no-flush-l2, the L2 flushed; " +
	"with --no-flush-l2, the baseline's launch follows a write of as many bytes as the traced launch's zeroed buffers, the cache otherwise as the application left it; the application's own inputs"

// Pair is one occurrence of a kernel timed in both programs.
type Pair struct {
	Occurrence       uint64  `json:"occurrence"`
	InstrumentedUS   float64 `json:"instrumented_us"`
	UninstrumentedUS float64 `json:"uninstrumented_us"`
	Ratio            float64 `json:"ratio"`
	// prepared: the traced launch's LaunchInfo.PreparedBytes.
	prepared uint64
}

// KernelLatency compares one kernel's traced launches with the same
// occurrences in the baseline program (built without IKET_ENABLE).
type KernelLatency struct {
	Kernel         string          `json:"kernel"`
	Mangled        string          `json:"mangled"`
	Pairs          []Pair          `json:"pairs"`
	Instrumented   trace.Samples   `json:"instrumented"`
	Uninstrumented *trace.Samples  `json:"uninstrumented,omitempty"`
	Ratio          float64         `json:"ratio,omitempty"`        // instrumented median / uninstrumented median
	PairedRatio    float64         `json:"paired_ratio,omitempty"` // median of the pairs' ratios
	Resources      KernelResources `json:"resources"`
	// Unpaired lists the traced occurrences the baseline did not time (it
	// launched the kernel fewer times, or the launch failed there).
	Unpaired []uint64 `json:"unpaired,omitempty"`
	// FlushedBytes were written before each timed launch to flush the L2:
	// the least any of the kernel's traced or paired baseline launches had
	// (0: some ran with the application's cache state, a flush buffer that
	// could not be allocated included).
	FlushedBytes uint64 `json:"flushed_bytes"`
	// PreparedBytes were written right before each timed launch, the
	// least any of the kernel's traced or paired baseline launches had
	// (LaunchInfo.PreparedBytes: a traced launch's zeroed buffers, a
	// baseline launch's write of as many bytes without a flush).
	PreparedBytes uint64 `json:"prepared_bytes"`
	// RecordsL2Bytes is the L2 set aside to keep the records, the least any
	// traced launch had (0: some wrote them through the L2 with the
	// kernel's data; LaunchInfo.RecordsL2Bytes).
	RecordsL2Bytes uint64   `json:"records_l2_bytes"`
	Warnings       []string `json:"warnings,omitempty"`
}

// KernelResources are the two builds' resources, the perturbation tracing
// brings.
type KernelResources struct {
	Instrumented   *trace.Resources `json:"instrumented,omitempty"`
	Uninstrumented *trace.Resources `json:"uninstrumented,omitempty"`
}

// Times lists, for the baseline program, the occurrences of each kernel
// that p traced.
func Times(ps []*Process) map[string][]uint64 {
	t := map[string][]uint64{}
	for _, p := range ps {
		for _, l := range p.Launches {
			if l.Info.Traced && l.Info.Status == "ok" {
				t[l.Info.Kernel] = append(t[l.Info.Kernel], l.Info.Occurrence)
			}
		}
	}
	for k, v := range t {
		sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
		t[k] = dedup(v)
	}
	return t
}

func dedup(v []uint64) []uint64 {
	out := v[:0]
	for i, x := range v {
		if i == 0 || x != v[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// MatchProcesses pairs each traced process with the baseline's process of
// the same rank, or when ranks are absent, of the same position among the
// processes that launched kernels.
func MatchProcesses(traced, base []*Process) map[*Process]*Process {
	m := map[*Process]*Process{}
	byRank := map[int]*Process{}
	var unranked []*Process
	for _, b := range base {
		if r := b.Rank(); r >= 0 {
			byRank[r] = b
		} else if len(b.Launches) > 0 {
			unranked = append(unranked, b)
		}
	}
	i := 0
	for _, t := range traced {
		if r := t.Rank(); r >= 0 {
			if b, ok := byRank[r]; ok {
				m[t] = b
			}
			continue
		}
		if len(t.Launches) == 0 {
			continue
		}
		if i < len(unranked) {
			m[t] = unranked[i]
			i++
		}
	}
	return m
}

// Compare returns the latency of each kernel p traced, paired with base's
// timed launches when base is not nil.
func Compare(p, base *Process) []KernelLatency {
	return compare(p, base, func(l *Launch) bool { return l.Info.Traced })
}

// CompareTimed is Compare for the launches p timed without tracing them
// (a run in ModeTime): the build with tracing run dormant, or the baseline
// run again as a control, paired with base's.
func CompareTimed(p, base *Process) []KernelLatency {
	return compare(p, base, func(l *Launch) bool { return !l.Info.Traced })
}

// compare pairs p's timed launches that pick takes with base's.
func compare(p, base *Process, pick func(*Launch) bool) []KernelLatency {
	var out []KernelLatency
	idx := map[string]int{}
	for _, l := range p.Launches {
		if !pick(l) || l.Info.Status != "ok" || l.Info.ElapsedMS == nil {
			continue
		}
		i, ok := idx[l.Info.Kernel]
		if !ok {
			i = len(out)
			idx[l.Info.Kernel] = i
			res := l.Info.Resources
			out = append(out, KernelLatency{Kernel: l.Kernel, Mangled: l.Info.Kernel, Resources: KernelResources{Instrumented: &res}})
		}
		k := &out[i]
		if !ok {
			k.FlushedBytes = l.Info.FlushedBytes
			k.PreparedBytes = l.Info.PreparedBytes
			k.RecordsL2Bytes = l.Info.RecordsL2Bytes
		}
		k.FlushedBytes = min(k.FlushedBytes, l.Info.FlushedBytes)
		k.PreparedBytes = min(k.PreparedBytes, l.Info.PreparedBytes)
		k.RecordsL2Bytes = min(k.RecordsL2Bytes, l.Info.RecordsL2Bytes)
		k.Pairs = append(k.Pairs, Pair{Occurrence: l.Info.Occurrence, InstrumentedUS: *l.Info.ElapsedMS * 1000, prepared: l.Info.PreparedBytes})
	}
	timed := map[string]map[uint64]*Launch{}
	if base != nil {
		for _, l := range base.Launches {
			if l.Info.Status != "ok" || l.Info.ElapsedMS == nil {
				continue
			}
			if timed[l.Info.Kernel] == nil {
				timed[l.Info.Kernel] = map[uint64]*Launch{}
			}
			timed[l.Info.Kernel][l.Info.Occurrence] = l
		}
	}
	for i := range out {
		k := &out[i]
		var inst, un, ratios []float64
		var unequal []uint64 // occurrences whose baseline launch followed other writes
		kept := k.Pairs[:0]
		for _, pr := range k.Pairs {
			inst = append(inst, pr.InstrumentedUS)
			b, ok := timed[k.Mangled][pr.Occurrence]
			if !ok {
				if base != nil {
					k.Unpaired = append(k.Unpaired, pr.Occurrence)
				}
				pr.UninstrumentedUS = math.NaN()
				if base == nil {
					kept = append(kept, pr)
				}
				continue
			}
			k.FlushedBytes = min(k.FlushedBytes, b.Info.FlushedBytes)
			k.PreparedBytes = min(k.PreparedBytes, b.Info.PreparedBytes)
			if b.Info.FlushedBytes == 0 && b.Info.PreparedBytes != pr.prepared {
				unequal = append(unequal, pr.Occurrence)
			}
			if k.Resources.Uninstrumented == nil {
				res := b.Info.Resources
				k.Resources.Uninstrumented = &res
			}
			pr.UninstrumentedUS = *b.Info.ElapsedMS * 1000
			if pr.UninstrumentedUS > 0 {
				pr.Ratio = pr.InstrumentedUS / pr.UninstrumentedUS
				ratios = append(ratios, pr.Ratio)
			}
			un = append(un, pr.UninstrumentedUS)
			kept = append(kept, pr)
		}
		k.Pairs = kept
		k.Instrumented = trace.NewSamples(inst)
		if len(un) > 0 {
			s := trace.NewSamples(un)
			k.Uninstrumented = &s
			if s.MedianUS > 0 {
				k.Ratio = k.Instrumented.MedianUS / s.MedianUS
			}
			k.PairedRatio = trace.NewSamples(ratios).MedianUS
		}
		if base == nil {
			// Keep the JSON valid: no NaN when there is no baseline.
			for j := range k.Pairs {
				k.Pairs[j].UninstrumentedUS = 0
			}
		}
		k.Warnings = trace.Perturbation(k.Resources.Instrumented, k.Resources.Uninstrumented)
		if len(unequal) > 0 {
			k.Warnings = append(k.Warnings, fmt.Sprintf("without an L2 flush, %d of the baseline's launches (occurrence %d first) followed other writes than the launches they are paired with (a traced launch's zeroed buffers, or as many bytes): the two started from different caches", len(unequal), unequal[0]))
		}
		if n := len(ratios); n > 0 && n < fewPairs {
			k.Warnings = append(k.Warnings, fmt.Sprintf("the ratio rests on %d pair(s): a launch's time moves by a few percent from run to run; trace more launches (--launch 0-9) and add --control to see by how much", n))
		}
	}
	return out
}

// fewPairs is the least number of pairs a comparison's ratio is reported
// without a warning that it rests on too few.
const fewPairs = 5

// Latency is the comparison in the capture's form, for the launch's
// metadata; nil without a baseline.
func (k *KernelLatency) Latency() *trace.Latency {
	if k.Uninstrumented == nil {
		return nil
	}
	return &trace.Latency{
		Uninstrumented:          *k.Uninstrumented,
		Instrumented:            k.Instrumented,
		Ratio:                   k.Ratio,
		PairedRatio:             k.PairedRatio,
		UninstrumentedResources: k.Resources.Uninstrumented,
		Settings: trace.TimingSettings{
			Rounds:        len(k.Pairs),
			CallsPerRound: 1,
			Order:         "the traced program, then the baseline program",
			Boundary:      Boundary,
			Serialized:    true,
			FlushL2:       k.FlushedBytes > 0,
			FlushBytes:    int64(k.FlushedBytes),
		},
	}
}
