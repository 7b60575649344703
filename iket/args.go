package iket

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Arg is one kernel parameter: a device pointer ([*Buffer], [Ptr]) or a
// scalar ([U32], [I32], [F32], [U64], [I64], [F64]). Struct parameters are
// not supported.
type Arg interface {
	// param returns the value's bytes (little-endian; size 4 or 8) and
	// whether it is a pointer; an error when the argument is unusable (a
	// closed buffer).
	param() (v [8]byte, size int, ptr bool, err error)
	String() string
}

// Ptr is a raw device address passed as a pointer parameter.
type Ptr uint64

// U32 is an unsigned int parameter.
type U32 uint32

// I32 is an int parameter.
type I32 int32

// F32 is a float parameter.
type F32 float32

// U64 is an unsigned long long parameter.
type U64 uint64

// I64 is a long long parameter.
type I64 int64

// F64 is a double parameter.
type F64 float64

func le32(x uint32) (v [8]byte) { binary.LittleEndian.PutUint32(v[:], x); return v }
func le64(x uint64) (v [8]byte) { binary.LittleEndian.PutUint64(v[:], x); return v }

func (p Ptr) param() ([8]byte, int, bool, error) { return le64(uint64(p)), 8, true, nil }
func (v U32) param() ([8]byte, int, bool, error) { return le32(uint32(v)), 4, false, nil }
func (v I32) param() ([8]byte, int, bool, error) { return le32(uint32(v)), 4, false, nil }
func (v F32) param() ([8]byte, int, bool, error) {
	return le32(math.Float32bits(float32(v))), 4, false, nil
}
func (v U64) param() ([8]byte, int, bool, error) { return le64(uint64(v)), 8, false, nil }
func (v I64) param() ([8]byte, int, bool, error) { return le64(uint64(v)), 8, false, nil }
func (v F64) param() ([8]byte, int, bool, error) {
	return le64(math.Float64bits(float64(v))), 8, false, nil
}

func (p Ptr) String() string { return fmt.Sprintf("ptr 0x%x", uint64(p)) }
func (v U32) String() string { return fmt.Sprintf("u32 %d", uint32(v)) }
func (v I32) String() string { return fmt.Sprintf("i32 %d", int32(v)) }
func (v F32) String() string { return fmt.Sprintf("f32 %g", float32(v)) }
func (v U64) String() string { return fmt.Sprintf("u64 %d", uint64(v)) }
func (v I64) String() string { return fmt.Sprintf("i64 %d", int64(v)) }
func (v F64) String() string { return fmt.Sprintf("f64 %g", float64(v)) }

// ParamKind is the type of a kernel parameter, for checking argument lists
// against a known signature.
type ParamKind int

// Parameter kinds.
const (
	ParamPtr ParamKind = iota // any pointer
	ParamU32                  // 4-byte scalar
	ParamU64                  // 8-byte scalar
)

func (k ParamKind) String() string {
	switch k {
	case ParamPtr:
		return "pointer"
	case ParamU32:
		return "4-byte scalar"
	case ParamU64:
		return "8-byte scalar"
	}
	return fmt.Sprintf("ParamKind(%d)", int(k))
}

// checkArgs checks args against a signature.
func checkArgs(kernel string, sig []ParamKind, args []Arg) error {
	if len(args) != len(sig) {
		return &ConfigError{Kernel: kernel, Field: "args", Msg: fmt.Sprintf("%d arguments, the kernel takes %d (%v)", len(args), len(sig), sig)}
	}
	for i, a := range args {
		if a == nil {
			return &ConfigError{Kernel: kernel, Field: "args", Msg: fmt.Sprintf("argument %d is nil", i)}
		}
		_, size, ptr, err := a.param()
		if err != nil {
			return &ConfigError{Kernel: kernel, Field: "args", Msg: fmt.Sprintf("argument %d: %v", i, err)}
		}
		var got ParamKind
		switch {
		case ptr:
			got = ParamPtr
		case size == 4:
			got = ParamU32
		default:
			got = ParamU64
		}
		if got != sig[i] {
			return &ConfigError{Kernel: kernel, Field: "args", Msg: fmt.Sprintf("argument %d (%v) is a %v, the kernel wants a %v", i, a, got, sig[i])}
		}
	}
	return nil
}

// packArgs lays the arguments out as the driver reads kernelParams: each
// value at an offset aligned to its size. It returns the block and each
// argument's offset.
func packArgs(args []Arg) ([]byte, []uintptr, error) {
	var blob []byte
	if len(args) > 0 {
		blob = make([]byte, 0, 8*len(args))
	}
	offs := make([]uintptr, len(args))
	for i, a := range args {
		if a == nil {
			return nil, nil, fmt.Errorf("pack argument %d: nil", i)
		}
		v, size, _, err := a.param()
		if err != nil {
			return nil, nil, fmt.Errorf("pack argument %d: %w", i, err)
		}
		for len(blob)%size != 0 {
			blob = append(blob, 0)
		}
		offs[i] = uintptr(len(blob))
		blob = append(blob, v[:size]...)
	}
	return blob, offs, nil
}
