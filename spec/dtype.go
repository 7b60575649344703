package spec

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
)

// DType is an element type.
type DType string

// Element types.
const (
	F64  DType = "f64"
	F32  DType = "f32"
	F16  DType = "f16"
	BF16 DType = "bf16"
	I64  DType = "i64"
	I32  DType = "i32"
	U32  DType = "u32"
	U8   DType = "u8"
)

var dtypes = []DType{F64, F32, F16, BF16, I64, I32, U32, U8}

// intRange is the representable range of each integer type.
var intRange = map[DType][2]float64{
	I64: {-(1 << 63), 1<<63 - 1}, I32: {math.MinInt32, math.MaxInt32},
	U32: {0, math.MaxUint32}, U8: {0, 255},
}

func (d DType) check(field string) error {
	if d == "" {
		return fieldErr(field, "missing: want one of %s", dtypeList())
	}
	if d.Size() == 0 {
		return fieldErr(field, "%q: want one of %s", string(d), dtypeList())
	}
	return nil
}

func dtypeList() string {
	s := make([]string, len(dtypes))
	for i, d := range dtypes {
		s[i] = string(d)
	}
	return strings.Join(s, ", ")
}

// Size returns the bytes of one element, 0 for an unknown type.
func (d DType) Size() int {
	switch d {
	case F64, I64:
		return 8
	case F32, I32, U32:
		return 4
	case F16, BF16:
		return 2
	case U8:
		return 1
	}
	return 0
}

// Float reports whether d is a floating-point type.
func (d DType) Float() bool { return d == F64 || d == F32 || d == F16 || d == BF16 }

func (d DType) checkValue(v float64) error {
	if d.Float() {
		return nil
	}
	if v != math.Trunc(v) {
		return fmt.Errorf("%g is not an integer, as %s needs", v, d)
	}
	r := intRange[d]
	lo, hi := r[0], r[1]
	if v < lo || v > hi {
		return fmt.Errorf("%g is out of %s's range %g..%g", v, d, lo, hi)
	}
	return nil
}

// Put writes v as one element of type d into b (len >= d.Size()).
func (d DType) Put(b []byte, v float64) {
	le := binary.LittleEndian
	switch d {
	case F64:
		le.PutUint64(b, math.Float64bits(v))
	case F32:
		le.PutUint32(b, math.Float32bits(float32(v)))
	case F16:
		le.PutUint16(b, f32ToF16(float32(v)))
	case BF16:
		le.PutUint16(b, f32ToBF16(float32(v)))
	case I64:
		le.PutUint64(b, uint64(int64(v)))
	case I32:
		le.PutUint32(b, uint32(int32(v)))
	case U32:
		le.PutUint32(b, uint32(v))
	case U8:
		b[0] = uint8(v)
	}
}

// Get reads one element of type d from b.
func (d DType) Get(b []byte) float64 {
	le := binary.LittleEndian
	switch d {
	case F64:
		return math.Float64frombits(le.Uint64(b))
	case F32:
		return float64(math.Float32frombits(le.Uint32(b)))
	case F16:
		return float64(f16ToF32(le.Uint16(b)))
	case BF16:
		return float64(math.Float32frombits(uint32(le.Uint16(b)) << 16))
	case I64:
		return float64(int64(le.Uint64(b)))
	case I32:
		return float64(int32(le.Uint32(b)))
	case U32:
		return float64(le.Uint32(b))
	case U8:
		return float64(b[0])
	}
	return math.NaN()
}

// f32ToBF16 rounds to nearest even; NaN stays NaN.
func f32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if f != f {
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// f32ToF16 converts with round to nearest even, handling subnormals,
// overflow to infinity and NaN.
func f32ToF16(f float32) uint16 {
	u := math.Float32bits(f)
	sign := uint16(u>>16) & 0x8000
	exp := int32(u>>23) & 0xff
	mant := u & 0x7fffff
	switch {
	case exp == 0xff:
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp-127 > 15:
		return sign | 0x7c00
	case exp-127 >= -14:
		e := uint32(exp-127+15) << 10
		m := mant >> 13
		r := mant & 0x1fff
		h := uint32(sign) | e | m
		if r > 0x1000 || (r == 0x1000 && m&1 == 1) {
			h++ // may carry into the exponent, which is correct rounding
		}
		return uint16(h)
	case exp-127 >= -25:
		mant |= 0x800000
		shift := uint32(-(exp - 127) - 14 + 13)
		m := mant >> shift
		rem := mant & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && m&1 == 1) {
			m++
		}
		return sign | uint16(m)
	}
	return sign
}

func f16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		f := float32(mant) / 1024 / 16384 // 2^-24 * mant
		if sign != 0 {
			return -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}
