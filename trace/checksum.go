package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// The checksum table ends a version 3 capture (docs/FORMAT.md section 5):
// sumMagic, a u64 entry count N, N CRC-32C values (the file header, the
// metadata with its padding, then every warp slot of every launch in order)
// and the CRC-32C of the table before it.
const (
	sumMagic      = "IKETSUM\x00"
	sumHeaderSize = 16
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrChecksum is matched (errors.Is) by every [ChecksumError].
var ErrChecksum = errors.New("checksum mismatch")

// ChecksumError reports a section of a capture whose CRC-32C does not match
// the one its checksum table stores: the bytes changed after iket wrote
// them.
type ChecksumError struct {
	Path     string // file, when known
	Section  string // "file header", "metadata", "checksum table", "launch 0 warp 12"
	Offset   int64  // where the section starts in the file
	Size     int64  // the section's length in bytes
	Stored   uint32 // the table's value
	Computed uint32 // the bytes' value
}

func (e *ChecksumError) Error() string {
	p := e.Path
	if p == "" {
		p = "capture"
	}
	return fmt.Sprintf("%s: offset %d: %s (%d bytes) fails its checksum: CRC-32C %#08x, the table says %#08x (the file was changed or damaged after it was written)",
		p, e.Offset, e.Section, e.Size, e.Computed, e.Stored)
}

// Is makes errors.Is(err, ErrChecksum) true.
func (e *ChecksumError) Is(target error) bool { return target == ErrChecksum }

// encodeTable returns the checksum table of sums.
func encodeTable(sums []uint32) []byte {
	b := make([]byte, sumHeaderSize+4*len(sums)+4)
	copy(b, sumMagic)
	binary.LittleEndian.PutUint64(b[8:], uint64(len(sums)))
	for i, s := range sums {
		binary.LittleEndian.PutUint32(b[sumHeaderSize+4*i:], s)
	}
	n := len(b) - 4
	binary.LittleEndian.PutUint32(b[n:], crc32.Checksum(b[:n], castagnoli))
	return b
}

// copyWarps copies warps slots of stride bytes from r to w through buf,
// appending each slot's CRC-32C to sums.
func copyWarps(w io.Writer, r io.Reader, warps uint64, stride int64, buf []byte, sums []uint32) ([]uint32, error) {
	for k := uint64(0); k < warps; k++ {
		var crc uint32
		for left := stride; left > 0; {
			n := int(min(left, int64(len(buf))))
			if _, err := io.ReadFull(r, buf[:n]); err != nil {
				if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
					return sums, fmt.Errorf("short by %d bytes at warp %d of %d", int64(warps-k)*stride-(stride-left), k, warps)
				}
				return sums, err
			}
			crc = crc32.Update(crc, castagnoli, buf[:n])
			if _, err := w.Write(buf[:n]); err != nil {
				return sums, err
			}
			left -= int64(n)
		}
		sums = append(sums, crc)
	}
	return sums, nil
}

// verifyChecksums checks a version 3 capture's table against its bytes:
// the table's own checksum, then the header h, the metadata and padding
// mb, and every warp slot, in file order. It reads the file once, a chunk
// at a time, and holds a chunk of the table at a time.
func verifyChecksums(r io.ReaderAt, size int64, path string, h, mb []byte, ls []LaunchMeta) error {
	bad := func(off int64, format string, a ...any) error {
		return &FormatError{Path: path, Offset: off, Msg: fmt.Sprintf(format, a...)}
	}
	table := int64(fileHeaderSize + len(mb))
	var n uint64 = 2
	for i := range ls {
		table += ls[i].Size()
		n += ls[i].Warps
	}
	want := table + sumHeaderSize + 4*int64(n) + 4
	switch {
	case size < table+sumHeaderSize:
		return bad(table, "checksum table missing: the file ends at %d, where the table should start", size)
	}
	var th [sumHeaderSize]byte
	if err := readAt(r, th[:], table); err != nil {
		return fmt.Errorf("read checksum table: %w", err)
	}
	if string(th[:8]) != sumMagic {
		return bad(table, "checksum table magic %q, want %q", th[:8], sumMagic)
	}
	if got := binary.LittleEndian.Uint64(th[8:]); got != n {
		return bad(table+8, "checksum table has %d entries, the metadata's %d warps need %d", got, n-2, n)
	}
	if size != want {
		return bad(min(size, want), "file is %d bytes, but its checksum table ends at offset %d (junk or truncation)", size, want)
	}
	buf := make([]byte, 1<<20)
	// The table first: its entries are what the rest is checked against.
	crc := crc32.Checksum(th[:], castagnoli)
	for off := table + sumHeaderSize; off < want-4; {
		k := int(min(int64(len(buf)), want-4-off))
		if err := readAt(r, buf[:k], off); err != nil {
			return fmt.Errorf("read checksum table: %w", err)
		}
		crc = crc32.Update(crc, castagnoli, buf[:k])
		off += int64(k)
	}
	var tail [4]byte
	if err := readAt(r, tail[:], want-4); err != nil {
		return fmt.Errorf("read checksum table: %w", err)
	}
	if stored := binary.LittleEndian.Uint32(tail[:]); stored != crc {
		return &ChecksumError{Path: path, Section: "checksum table", Offset: table, Size: want - 4 - table, Stored: stored, Computed: crc}
	}
	// entry returns table entry i, reading the table a page at a time.
	var page [4096]byte
	pageFirst := int64(-1)
	entry := func(i int64) (uint32, error) {
		if p := i / (len64(page[:]) / 4); p != pageFirst {
			off := table + sumHeaderSize + p*len64(page[:])
			k := min(len64(page[:]), want-4-off)
			if err := readAt(r, page[:k], off); err != nil {
				return 0, fmt.Errorf("read checksum table: %w", err)
			}
			pageFirst = p
		}
		return binary.LittleEndian.Uint32(page[(i%(len64(page[:])/4))*4:]), nil
	}
	check := func(i int64, section string, off, size int64, got uint32) error {
		stored, err := entry(i)
		if err != nil {
			return err
		}
		if stored != got {
			return &ChecksumError{Path: path, Section: section, Offset: off, Size: size, Stored: stored, Computed: got}
		}
		return nil
	}
	if err := check(0, "file header", 0, fileHeaderSize, crc32.Checksum(h, castagnoli)); err != nil {
		return err
	}
	if err := check(1, "metadata", fileHeaderSize, len64(mb), crc32.Checksum(mb, castagnoli)); err != nil {
		return err
	}
	e := int64(2)
	for li := range ls {
		l := &ls[li]
		st := l.Stride()
		// Read many small slots per chunk, or a large slot in chunks.
		for k := uint64(0); k < l.Warps; {
			off := l.Offset + int64(k)*st
			if st <= len64(buf) {
				per := min(uint64(len64(buf)/st), l.Warps-k)
				chunk := buf[:int64(per)*st]
				if err := readAt(r, chunk, off); err != nil {
					return fmt.Errorf("read launch %d warps at offset %d: %w", li, off, err)
				}
				for j := uint64(0); j < per; j++ {
					c := crc32.Checksum(chunk[int64(j)*st:int64(j+1)*st], castagnoli)
					if err := check(e, fmt.Sprintf("launch %d warp %d", li, k+j), off+int64(j)*st, st, c); err != nil {
						return err
					}
					e++
				}
				k += per
				continue
			}
			var c uint32
			for done := int64(0); done < st; {
				m := min(len64(buf), st-done)
				if err := readAt(r, buf[:m], off+done); err != nil {
					return fmt.Errorf("read launch %d warp %d at offset %d: %w", li, k, off+done, err)
				}
				c = crc32.Update(c, castagnoli, buf[:m])
				done += m
			}
			if err := check(e, fmt.Sprintf("launch %d warp %d", li, k), off, st, c); err != nil {
				return err
			}
			e++
			k++
		}
	}
	return nil
}

func len64(b []byte) int64 { return int64(len(b)) }
