package spec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
)

// Elements returns the number of elements of the buffer.
func (b *Buffer) Elements() uint64 {
	n := uint64(1)
	for _, d := range b.Shape {
		n *= d
	}
	return n
}

// Bytes returns the buffer's size in bytes.
func (b *Buffer) Bytes() uint64 { return b.Elements() * uint64(b.DType.Size()) }

// HostData builds the initial contents of argument i's buffer: its init, or
// the poison pattern for an output without one. Files are read relative to
// the spec's folder; their size must match the buffer exactly.
func (s *Spec) HostData(i int) ([]byte, error) {
	a := &s.Args[i]
	b := a.Buffer
	if b == nil {
		return nil, fmt.Errorf("host data: args[%d] (%s) is not a buffer", i, a.Name)
	}
	field := fmt.Sprintf("args[%d].buffer.init", i)
	out := make([]byte, b.Bytes())
	if b.Init == nil {
		Poison(b.DType, out)
		return out, nil
	}
	in := b.Init
	sz := b.DType.Size()
	n := int(b.Elements())
	switch in.Kind {
	case "file":
		data, err := os.ReadFile(s.Path(in.File))
		if err != nil {
			return nil, fieldErr(field+".file", "%v", err)
		}
		if len(data) != len(out) {
			return nil, fieldErr(field+".file", "%s has %d bytes; the buffer (%v %s) needs %d", in.File, len(data), b.Shape, b.DType, len(out))
		}
		return data, nil
	case "constant":
		for j := 0; j < n; j++ {
			b.DType.Put(out[j*sz:], in.Value)
		}
	case "arange":
		for j := 0; j < n; j++ {
			b.DType.Put(out[j*sz:], in.Start+float64(j)*in.Step)
		}
	case "uniform", "normal":
		rng := rand.New(rand.NewPCG(in.Seed, 0x69b7e7)) // fixed stream per seed
		for j := 0; j < n; j++ {
			var v float64
			if in.Kind == "uniform" {
				v = in.Low + (in.High-in.Low)*rng.Float64()
			} else {
				v = in.Mean + in.Std*rng.NormFloat64()
			}
			if !b.DType.Float() {
				v = math.Round(v)
			}
			b.DType.Put(out[j*sz:], v)
		}
	default:
		return nil, fieldErr(field+".kind", "%q: want uniform, normal, arange, constant or file", in.Kind)
	}
	return out, nil
}

// Poison fills b with a value no kernel writes by accident: NaN for float
// types, 0xA5 bytes otherwise.
func Poison(d DType, b []byte) {
	sz := d.Size()
	if !d.Float() || sz == 0 {
		for i := range b {
			b[i] = 0xa5
		}
		return
	}
	for i := 0; i+sz <= len(b); i += sz {
		d.Put(b[i:], math.NaN())
	}
}

// Mismatch is one element that failed a comparison.
type Mismatch struct {
	Index          int
	Got, Want, Tol float64
}

// CompareError reports an output that differs from the expected values.
type CompareError struct {
	Arg        string
	Mismatches int // total
	First      []Mismatch
	Elements   int
}

func (e *CompareError) Error() string {
	s := fmt.Sprintf("output %s: %d of %d elements differ", e.Arg, e.Mismatches, e.Elements)
	for _, m := range e.First {
		s += fmt.Sprintf("; [%d] got %g want %g (tolerance %g)", m.Index, m.Got, m.Want, m.Tol)
	}
	return s
}

// Compare checks got against want element-wise: |got-want| <= atol +
// rtol*|want|; NaN never passes (so an unwritten, poisoned element fails).
// It returns a *CompareError listing the first few mismatches.
func Compare(arg string, d DType, got, want []byte, rtol, atol float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("compare %s: %d bytes against %d expected", arg, len(got), len(want))
	}
	sz := d.Size()
	if sz == 0 {
		return fmt.Errorf("compare %s: unknown dtype %q", arg, d)
	}
	e := &CompareError{Arg: arg, Elements: len(got) / sz}
	for i := 0; i < e.Elements; i++ {
		g, w := d.Get(got[i*sz:]), d.Get(want[i*sz:])
		tol := atol + rtol*math.Abs(w)
		if math.Abs(g-w) <= tol { // false for NaN
			continue
		}
		e.Mismatches++
		if len(e.First) < 5 {
			e.First = append(e.First, Mismatch{Index: i, Got: g, Want: w, Tol: tol})
		}
	}
	if e.Mismatches > 0 {
		return e
	}
	return nil
}
