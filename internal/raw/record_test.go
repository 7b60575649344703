package raw

import "testing"

// TestTail: the tail word sits right after a slot's capacity records, is
// the slot's last 8 bytes, and reads back what was written.
func TestTail(t *testing.T) {
	for _, tt := range []struct {
		capacity     uint32
		side, lanes  uint32
		wantTailByte int64
	}{
		{1, 0, 0, 72},
		{16, 3, 1, 192},
		{4096, 4097, 32, 64 + 8*4096},
	} {
		if got := TailOffset(tt.capacity); got != tt.wantTailByte || got+RecordSize != Stride(tt.capacity) {
			t.Errorf("TailOffset(%d) = %d, want %d, the slot's last record (stride %d)", tt.capacity, got, tt.wantTailByte, Stride(tt.capacity))
		}
		b := make([]byte, 8)
		EncodeTail(b, tt.side, tt.lanes)
		if s, l := DecodeTail(b); s != tt.side || l != tt.lanes {
			t.Errorf("DecodeTail(EncodeTail(%d, %d)) = %d, %d", tt.side, tt.lanes, s, l)
		}
	}
}
