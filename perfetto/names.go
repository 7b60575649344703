package perfetto

import "github.com/iket-trace/iket/trace"

// Event names are interned per launch sequence, numbered 1, 2, ... in order
// of first use so that an event's name_iid is one or two bytes. A range's
// name carries its payload (the pipeline stage) when the payload is not 0,
// "compute/2", so that the payload costs nothing per event. The variants
// are bounded, maxNameVariants per name and maxPayloadNames per launch;
// past them (a payload that is a tile or loop index) a range shows its
// payload as a debug annotation on the plain name. The bound matters
// beyond the file: the trace processor copies a sequence's interned names
// at every new trace packet default, one per warp. A mark's payload, often
// a value of its own, is an annotation when not 0.
//
// Name keys: range and mark names are name id << 18 | flags << 16 |
// payload (31 bits, flags = trace.RangeUnclosed|RangeTruncated); the
// writer's own names are keyOwn | n.
const (
	keyOwn          = 1 << 31
	keyDrop         = keyOwn | 1
	keyProblem      = keyOwn | 2
	keyViolation    = keyOwn | 64 // + ViolationKind (< 32)
	maxPayloadNames = 64
	maxNameVariants = 8
)

func rangeKey(name uint16, f trace.RangeFlags, payload uint16) uint32 {
	return uint32(name&0x1fff)<<18 | uint32(f&3)<<16 | uint32(payload)
}

// iidTable maps name keys to iids: open addressing over a power-of-two
// table of key+1 (0 = free).
type iidTable struct {
	keys     []uint32 // key + 1, 0 = free
	iids     []uint32
	n        int
	variants int // keys with a payload
	shift    uint
	perName  [1 << 13]uint8 // keys with a payload, per name id (saturating)
}

func (t *iidTable) reset() {
	if t.keys == nil {
		t.keys, t.iids, t.shift = make([]uint32, 64), make([]uint32, 64), 32-6
	}
	clear(t.keys)
	clear(t.perName[:])
	t.n, t.variants = 0, 0
}

// lookup returns the iid of key, or 0 when it has none yet.
func (t *iidTable) lookup(key uint32) uint32 {
	mask := len(t.keys) - 1
	for h := int((key+1)*0x9e3779b1>>t.shift) & mask; ; h = (h + 1) & mask {
		switch t.keys[h] {
		case key + 1:
			return t.iids[h]
		case 0:
			return 0
		}
	}
}

// add gives key (which has none) the next iid and returns it.
func (t *iidTable) add(key uint32) uint32 {
	if 2*(t.n+1) > len(t.keys) {
		t.grow()
	}
	t.n++
	if key < keyOwn && uint16(key) != 0 {
		t.variants++
		if n := &t.perName[key>>18]; *n < 255 {
			*n++
		}
	}
	mask := len(t.keys) - 1
	h := int((key+1)*0x9e3779b1>>t.shift) & mask
	for t.keys[h] != 0 {
		h = (h + 1) & mask
	}
	t.keys[h], t.iids[h] = key+1, uint32(t.n)
	return uint32(t.n)
}

func (t *iidTable) grow() {
	ok, oi := t.keys, t.iids
	t.keys, t.iids = make([]uint32, 2*len(ok)), make([]uint32, 2*len(ok))
	t.shift--
	mask := len(t.keys) - 1
	for i, k := range ok {
		if k == 0 {
			continue
		}
		h := int(k*0x9e3779b1>>t.shift) & mask
		for t.keys[h] != 0 {
			h = (h + 1) & mask
		}
		t.keys[h], t.iids[h] = k, oi[i]
	}
}

// full reports whether key, a new payload variant, must show its payload
// as an annotation instead of in its name.
func (t *iidTable) full(key uint32) bool {
	return t.variants >= maxPayloadNames || t.perName[key>>18] >= maxNameVariants
}
