package iket

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/iket-trace/iket/iket/internal/cuda"
	"github.com/iket-trace/iket/trace"
)

// Resources returns what cfg's kernel takes of an SM in this build, as the
// driver reports it for the compiled function, with the SASS instruction
// count when the module was loaded from a cubin.
func (m *Module) Resources(cfg LaunchConfig) (*trace.Resources, error) {
	m.d.mu.Lock()
	defer m.d.mu.Unlock()
	p, err := m.prepare(cfg, nil)
	if err != nil {
		return nil, fmt.Errorf("resources of %s: %w", cfg.Kernel, err)
	}
	c := m.d.ctx
	attr := func(a int) int {
		v, _ := c.FuncAttr(p.fn, a)
		return v
	}
	r := &trace.Resources{
		Registers:          attr(cuda.FuncAttrNumRegs),
		StaticSharedBytes:  attr(cuda.FuncAttrSharedSizeBytes),
		DynamicSharedBytes: cfg.SharedBytes,
		LocalBytes:         attr(cuda.FuncAttrLocalSizeBytes),
		MaxThreadsPerBlock: attr(cuda.FuncAttrMaxThreadsPerBlock),
	}
	r.MaxActiveCTAsPerSM, _ = c.Occupancy(p.fn, int(cfg.Threads()), cfg.SharedBytes)
	r.SASSInstructions = SASSInstructions(m.image, cfg.Kernel)
	return r, nil
}

// sassInstructionBytes is the size of one instruction from Volta (sm_70)
// on.
const sassInstructionBytes = 16

// SASSInstructions counts the instructions of kernel in a cubin image (its
// .text.KERNEL section, 16 bytes an instruction): 0 when image is not an
// ELF64 cubin (PTX, a fatbin) or has no such kernel. It reads the section
// headers itself: debug/elf refuses a cubin's ELF version byte.
func SASSInstructions(image []byte, kernel string) int {
	le := binary.LittleEndian
	if len(image) < 64 || !bytes.HasPrefix(image, []byte("\x7fELF\x02\x01")) {
		return 0
	}
	shoff, shentsize := le.Uint64(image[0x28:]), uint64(le.Uint16(image[0x3a:]))
	shnum, shstrndx := uint64(le.Uint16(image[0x3c:])), uint64(le.Uint16(image[0x3e:]))
	n := uint64(len(image))
	if shentsize < 64 || shstrndx >= shnum || shoff > n || shnum > (n-shoff)/shentsize {
		return 0
	}
	header := func(i uint64) []byte { return image[shoff+i*shentsize:] }
	strs := header(shstrndx)
	strOff, strSize := le.Uint64(strs[0x18:]), le.Uint64(strs[0x20:])
	if strOff > n || strSize > n-strOff {
		return 0
	}
	names := image[strOff : strOff+strSize]
	want := ".text." + kernel
	for i := uint64(0); i < shnum; i++ {
		h := header(i)
		off := uint64(le.Uint32(h[0:]))
		if off >= uint64(len(names)) {
			continue
		}
		end := bytes.IndexByte(names[off:], 0)
		if end < 0 || string(names[off:off+uint64(end)]) != want {
			continue
		}
		if le.Uint32(h[4:]) == 8 { // SHT_NOBITS
			return 0
		}
		return int(le.Uint64(h[0x20:]) / sassInstructionBytes)
	}
	return 0
}
