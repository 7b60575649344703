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
	// param returns the value's bytes (little-endian) and whether it is a
	// pointer; an error when the argument is unusable (a closed buffer).
	param() ([]byte, bool, error)
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

func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func (p Ptr) param() ([]byte, bool, error) { return le64(uint64(p)), true, nil }
func (v U32) param() ([]byte, bool, error) { return le32(uint32(v)), false, nil }
func (v I32) param() ([]byte, bool, error) { return le32(uint32(v)), false, nil }
func (v F32) param() ([]byte, bool, error) {
	return le32(math.Float32bits(float32(v))), false, nil
}
func (v U64) param() ([]byte, bool, error) { return le64(uint64(v)), false, nil }
func (v I64) param() ([]byte, bool, error) { return le64(uint64(v)), false, nil }
func (v F64) param() ([]byte, bool, error) {
	return le64(math.Float64bits(float64(v))), false, nil
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
		b, ptr, err := a.param()
		if err != nil {
			return &ConfigError{Kernel: kernel, Field: "args", Msg: fmt.Sprintf("argument %d: %v", i, err)}
		}
		var got ParamKind
		switch {
		case ptr:
			got = ParamPtr
		case len(b) == 4:
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
	offs := make([]uintptr, len(args))
	for i, a := range args {
		if a == nil {
			return nil, nil, fmt.Errorf("pack argument %d: nil", i)
		}
		b, _, err := a.param()
		if err != nil {
			return nil, nil, fmt.Errorf("pack argument %d: %w", i, err)
		}
		for len(blob)%len(b) != 0 {
			blob = append(blob, 0)
		}
		offs[i] = uintptr(len(blob))
		blob = append(blob, b...)
	}
	return blob, offs, nil
}
