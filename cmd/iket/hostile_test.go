package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/internal/raw"
	"github.com/iket-trace/iket/trace"
)

var update = flag.Bool("update", false, "rewrite testdata/hostile from hostileInputs")

const hostileDir = "testdata/hostile"

// Limits every run of the hostile corpus must keep to. The time limit
// catches a hang or a walk over a huge declared capacity, not a speed: a
// run takes well under a second alone, and up to ten times that beside the
// other packages' tests on a 2-core machine (2.4 s seen for the 2^27-slot
// input). The allocation limit catches reading what is only declared.
const (
	hostileTime  = 10 * time.Second
	hostileAlloc = 64 << 20 // bytes allocated by the run, all told
)

// hostileBase returns a small valid capture and its parts: the metadata
// JSON and the warp buffers.
func hostileBase(t *testing.T, ls ...*emu.Launch) (good []byte, meta string, data []byte, m []trace.LaunchMeta) {
	t.Helper()
	if len(ls) == 0 {
		l, err := emu.ProducerConsumer(emu.PCConfig{CTAs: 2, Stages: 2, Capacity: 16})
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	good, err := emu.Capture(ls...)
	if err != nil {
		t.Fatal(err)
	}
	c, err := emu.Read(good)
	if err != nil {
		t.Fatal(err)
	}
	for i := range c.NumLaunches() {
		m = append(m, *c.Launch(i).Meta)
	}
	mlen := binary.LittleEndian.Uint64(good[16:])
	meta = string(good[24 : 24+mlen])
	end := m[len(m)-1].Offset + m[len(m)-1].Size()
	return good, meta, good[m[0].Offset:end], m
}

// withOffsets rewrites the launches' offsets in meta (the writer's order)
// so that they follow the metadata back to back, as version 3 wants.
func withOffsets(meta string, m []trace.LaunchMeta) string {
	for range 3 {
		off := (24 + int64(len(meta)) + 7) &^ 7
		for i := range m {
			key := fmt.Sprintf(`"offset":%d`, m[i].Offset)
			meta = strings.Replace(meta, key, fmt.Sprintf(`"offset":%d`, off), 1)
			m[i].Offset = off
			off += m[i].Size()
		}
	}
	return meta
}

// sealed lays out a version 3 capture of meta (offsets fixed) and data.
func sealed(meta string, data []byte, m []trace.LaunchMeta) []byte {
	mm := append([]trace.LaunchMeta(nil), m...)
	meta = withOffsets(meta, mm)
	var warps uint64
	for _, l := range mm {
		warps += l.Warps
	}
	return emu.RawCapture(raw.FormatVersion, []byte(meta), data, warps, mm[0].Stride())
}

// unchecked lays out a version 2 capture (no checksum table) as given,
// its metadata saying record format 2 (what file version 2 wrote; the
// emulated buffers hold no side events, so formats 2 and 3 lay them out
// alike).
func unchecked(meta string, data []byte) []byte {
	meta = strings.Replace(meta, fmt.Sprintf(`"version":%d`, raw.FormatVersion), `"version":2`, 1)
	b := make([]byte, 24)
	copy(b, trace.Magic)
	binary.LittleEndian.PutUint32(b[8:], 2)
	binary.LittleEndian.PutUint64(b[16:], uint64(len(meta)))
	b = append(b, meta...)
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	return append(b, data...)
}

func patch(b []byte, off int, v ...byte) []byte {
	b = bytes.Clone(b)
	copy(b[off:], v)
	return b
}

// hostileInputs builds the committed corpus: file name to bytes.
func hostileInputs(t *testing.T) map[string][]byte {
	good, meta, data, m := hostileBase(t)
	rep := func(old, new string) string {
		if !strings.Contains(meta, old) {
			t.Fatalf("metadata lacks %q", old)
		}
		return strings.Replace(meta, old, new, 1)
	}
	in := map[string][]byte{
		"empty.iket":            nil,
		"text.iket":             []byte("hello, world: not a capture\n"),
		"file-version-9.iket":   patch(good, 8, 9),
		"record-format-9.iket":  patch(good, 12, 9),
		"record-format-1.iket":  patch(good, 12, 1),
		"meta-length.iket":      patch(good, 16, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f),
		"junk-after-meta.iket":  sealed(meta+` {"x":1}`, data, m),
		"duplicate-key.iket":    sealed(rep(`"warps":4,`, `"warps":4,"warps":4,`), data, m),
		"case-duplicate.iket":   sealed(rep(`"warps":4,`, `"WARPS":4,"warps":4,`), data, m),
		"unknown-key.iket":      sealed(rep(`"warps":4,`, `"warps":4,"extra":1,`), data, m),
		"too-few-warps.iket":    sealed(rep(`"warps":4,`, `"warps":3,`), data[:3*m[0].Stride()], []trace.LaunchMeta{{Warps: 3, Capacity: m[0].Capacity, Offset: m[0].Offset}}),
		"warps-per-cta.iket":    sealed(rep(`"warps_per_cta":2,`, `"warps_per_cta":3,`), data, m),
		"long-name.iket":        sealed(rep(`"name":"producer"`, `"name":"`+strings.Repeat("p", 300)+`"`), data, m),
		"capacity-0.iket":       sealed(rep(fmt.Sprintf(`"capacity":%d,`, m[0].Capacity), `"capacity":0,`), data, m),
		"bad-mode.iket":         sealed(rep(`"mode":"stop"`, `"mode":"loop"`), data, m),
		"trillion-warps.iket":   sealed(rep(`"warps":4,`, `"warps":1000000000000,`), data, m),
		"truncated.iket":        good[:len(good)-8],
		"junk-after-table.iket": append(bytes.Clone(good), "junk"...),
		"warp-flipped.iket":     patch(good, int(m[0].Offset+m[0].Stride()+70), good[m[0].Offset+m[0].Stride()+70]^0x40),
		"meta-flipped.iket":     []byte(strings.Replace(string(good), `"tool":"iket-emu"`, `"tool":"iket-emv"`, 1)),
		"table-flipped.iket":    patch(good, len(good)-9, good[len(good)-9]^1),
		"old-unchecked.iket":    unchecked(strings.Replace(meta, fmt.Sprintf(`"offset":%d`, m[0].Offset), fmt.Sprintf(`"offset":%d`, (24+len(meta)+7)&^7), 1), data),
	}
	// Two launches whose buffers alias, in an unchecked capture.
	two := strings.Replace(meta, `"launches":[`, `"launches":[`+launchJSON(t, meta)+`,`, 1)
	off := (24 + int64(len(two)) + 7) &^ 7
	for range 2 {
		two = strings.ReplaceAll(two, fmt.Sprintf(`"offset":%d`, m[0].Offset), fmt.Sprintf(`"offset":%d`, off))
		m[0].Offset = off
		off = (24 + int64(len(two)) + 7) &^ 7
	}
	in["aliased-launches.iket"] = unchecked(two, data)
	// A warp whose header breaks the format, with good checksums: lenient
	// commands leave it out and say so.
	bad := bytes.Clone(data)
	bad[m[0].Stride()] = 0x42
	_, meta2, _, m2 := hostileBase(t)
	in["bad-warp-header.iket"] = sealed(meta2, bad, m2)
	// A warp whose tail word (format 3: side events and their lanes) says
	// 7 lanes stored none, with good checksums.
	tail := bytes.Clone(data)
	tail[m[0].Stride()+raw.WarpHeaderSize+raw.RecordSize*int64(m[0].Capacity)+4] = 7
	in["bad-tail-word.iket"] = sealed(meta2, tail, m2)
	// Names that would drive a terminal.
	l, err := emu.ProducerConsumer(emu.PCConfig{CTAs: 1, Stages: 1, Capacity: 16})
	if err != nil {
		t.Fatal(err)
	}
	l.Kernel = "evil\x1b[2J\x1b[31m"
	esc, _, _, _ := hostileBase(t, l)
	in["escape-names.iket"] = esc
	// Two launches: commands that cover one need --launch.
	l1, err := emu.ProducerConsumer(emu.PCConfig{CTAs: 1, Stages: 1, Capacity: 16})
	if err != nil {
		t.Fatal(err)
	}
	l2, err := emu.ProducerConsumer(emu.PCConfig{CTAs: 2, Stages: 1, Capacity: 16})
	if err != nil {
		t.Fatal(err)
	}
	multi, _, _, _ := hostileBase(t, l1, l2)
	in["two-launches.iket"] = multi
	in["spec-dev-zero.yaml"] = []byte("kernel: /dev/zero\nentry: k\ngrid: 1\nblock: 32\nargs:\n  - name: x\n    scalar: {dtype: u32, value: 1}\n")
	in["spec-huge-shape.yaml"] = []byte("kernel: k.cu\nentry: k\ngrid: 1\nblock: 32\nargs:\n  - name: x\n    buffer: {dtype: f32, shape: [1000000000000], output: true}\n")
	in["spec-missing-files.yaml"] = []byte("kernel: missing.cu\nentry: k\ngrid: 1\nblock: 32\nargs:\n  - name: x\n    buffer: {dtype: f32, shape: [4], init: {kind: file, file: missing.bin}}\n")
	return in
}

// launchJSON returns the first launch object of meta.
func launchJSON(t *testing.T, meta string) string {
	i := strings.Index(meta, `"launches":[`) + len(`"launches":[`)
	depth := 0
	for j := i; j < len(meta); j++ {
		switch meta[j] {
		case '{':
			depth++
		case '}':
			if depth--; depth == 0 {
				return meta[i : j+1]
			}
		}
	}
	t.Fatal("no launch in metadata")
	return ""
}

// generated builds the inputs too large to commit (sparse files) in dir.
func generated(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	const capacity = 1 << 27
	for _, tc := range []struct {
		name     string
		mode     string
		finished bool
		sealed   bool
	}{
		{"sparse-2p27-records.iket", "stop", true, true},
		{"sparse-2p27-unchecked.iket", "stop", true, false},
		{"sparse-2p27-hung-wrap.iket", "wrap", false, true},
	} {
		st := raw.Stride(capacity)
		meta := fmt.Sprintf(`{"version":2,"tool":"hostile","created":"2026-01-02T03:04:05Z","launches":[{"kernel":"sparse","grid":[1,1,1],"block":[32,1,1],"warps_per_cta":1,"warps":1,"capacity":%d,"mode":"%s","names":[{"id":1,"kind":"MARK","name":"m"}],"offset":%d}]}`,
			capacity, tc.mode, (24+len(`{"version":2,"tool":"hostile","created":"2026-01-02T03:04:05Z","launches":[{"kernel":"sparse","grid":[1,1,1],"block":[32,1,1],"warps_per_cta":1,"warps":1,"capacity":134217728,"mode":"stop","names":[{"id":1,"kind":"MARK","name":"m"}],"offset":32}]}`)+7)&^7)
		hdr := make([]byte, raw.WarpHeaderSize)
		binary.LittleEndian.PutUint32(hdr[0:], raw.WarpMagic)
		binary.LittleEndian.PutUint64(hdr[24:], 1e9)
		binary.LittleEndian.PutUint64(hdr[32:], 1e9)
		flags := uint32(raw.FlagStarted)
		if tc.finished {
			flags |= raw.FlagFinished
			binary.LittleEndian.PutUint64(hdr[40:], 2e9)
			binary.LittleEndian.PutUint64(hdr[48:], 3e9)
			binary.LittleEndian.PutUint32(hdr[56:], capacity)
		}
		binary.LittleEndian.PutUint32(hdr[60:], flags)
		var head []byte
		if tc.sealed {
			head = emu.RawCapture(2, []byte(meta), nil, 0, st)
			head = head[:len(head)-(16+4*2+4)] // keep header and metadata; the table follows the buffers
		} else {
			head = unchecked(meta, nil)
		}
		p := filepath.Join(dir, tc.name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(head)
		f.Write(hdr)
		if err := f.Truncate(int64(len(head)) + st); err != nil {
			t.Fatal(err)
		}
		if tc.sealed {
			tab := crc32.MakeTable(crc32.Castagnoli)
			c := crc32.Checksum(hdr, tab)
			zero := make([]byte, 1<<20)
			for left := st - int64(len(hdr)); left > 0; left -= int64(len(zero)) {
				c = crc32.Update(c, tab, zero[:min(left, int64(len(zero)))])
			}
			mb := head[24:]
			sums := []uint32{crc32.Checksum(head[:24], tab), crc32.Checksum(mb, tab), c}
			t0 := []byte("IKETSUM\x00")
			t0 = binary.LittleEndian.AppendUint64(t0, 3)
			for _, s := range sums {
				t0 = binary.LittleEndian.AppendUint32(t0, s)
			}
			t0 = binary.LittleEndian.AppendUint32(t0, crc32.Checksum(t0, tab))
			if _, err := f.WriteAt(t0, int64(len(head))+st); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		out[tc.name] = p
	}
	// A kernel that is a link to a device.
	k := filepath.Join(dir, "zero.cu")
	if err := os.Symlink("/dev/zero", k); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "spec-link-to-dev-zero.yaml")
	if err := os.WriteFile(spec, []byte("kernel: zero.cu\nentry: k\ngrid: 1\nblock: 32\nargs:\n  - name: x\n    scalar: {dtype: u32, value: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out["spec-link-to-dev-zero.yaml"] = spec
	return out
}

// A manifest line: file, exit code, a fragment the output must hold, and
// the command's arguments, tab-separated. In the arguments {} is the
// input's path, {dir} a fresh folder, {link} a symbolic link in it to the
// input, {capdir} a folder whose trace.iket is a copy of the input. A file
// named gen:NAME is built by generated, not committed.
type hostileRun struct {
	line       int
	file, frag string
	code       int
	args       []string
}

func readManifest(t *testing.T) []hostileRun {
	t.Helper()
	f, err := os.Open(filepath.Join(hostileDir, "MANIFEST"))
	if err != nil {
		t.Fatalf("%v (run go test -run TestHostileCorpus -update)", err)
	}
	defer f.Close()
	var runs []hostileRun
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Split(line, "\t")
		if len(fs) != 4 {
			t.Fatalf("MANIFEST:%d: %d fields, want file, exit, fragment, args", n, len(fs))
		}
		code, err := strconv.Atoi(fs[1])
		if err != nil {
			t.Fatalf("MANIFEST:%d: exit %q", n, fs[1])
		}
		runs = append(runs, hostileRun{line: n, file: fs[0], code: code, frag: fs[2], args: strings.Fields(fs[3])})
	}
	return runs
}

// TestHostileCorpus runs every line of testdata/hostile/MANIFEST through
// the command line in process: each must exit as listed, say the fragment,
// finish within hostileTime and hostileAlloc, print no raw escape byte,
// and leave its input as it was.
func TestHostileCorpus(t *testing.T) {
	if *update {
		if err := os.MkdirAll(hostileDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range hostileInputs(t) {
			if err := os.WriteFile(filepath.Join(hostileDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		for name, b := range hostileInputs(t) {
			got, err := os.ReadFile(filepath.Join(hostileDir, name))
			if err != nil || !bytes.Equal(got, b) {
				t.Errorf("%s is missing or stale (%v): run go test -run TestHostileCorpus -update", name, err)
			}
		}
	}
	gen := generated(t, t.TempDir())
	runs := readManifest(t)
	files := map[string]bool{}
	for _, r := range runs {
		files[r.file] = true
		t.Run(fmt.Sprintf("%d:%s", r.line, r.file), func(t *testing.T) {
			path := filepath.Join(hostileDir, r.file)
			if name, ok := strings.CutPrefix(r.file, "gen:"); ok {
				if path, ok = gen[name]; !ok {
					t.Fatalf("no generated input %s", name)
				}
			}
			before, _ := os.Lstat(path)
			var content []byte
			if before != nil && before.Size() < 1<<20 {
				content, _ = os.ReadFile(path)
			}
			dir := t.TempDir()
			var capCopy string
			args := make([]string, len(r.args))
			for i, a := range r.args {
				switch {
				case strings.Contains(a, "{link}"):
					link := filepath.Join(dir, "link.out")
					if err := os.Symlink(path, link); err != nil {
						t.Fatal(err)
					}
					a = strings.ReplaceAll(a, "{link}", link)
				case a == "{capdir}":
					capCopy = filepath.Join(dir, captureFile)
					if err := os.WriteFile(capCopy, content, 0o644); err != nil {
						t.Fatal(err)
					}
					a = dir
				}
				a = strings.ReplaceAll(a, "{dir}", dir)
				args[i] = strings.ReplaceAll(a, "{}", path)
			}
			var ms0, ms1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms0)
			start := time.Now()
			code, out, errs := runCLI(t, args...)
			took := time.Since(start)
			runtime.ReadMemStats(&ms1)
			all := out + errs
			if code != r.code {
				t.Errorf("%v: exit %d, want %d\n%s", r.args, code, r.code, all)
			}
			if !strings.Contains(all, r.frag) {
				t.Errorf("%v: output lacks %q:\n%s", r.args, r.frag, all)
			}
			if strings.ContainsRune(all, 0x1b) {
				t.Errorf("%v: output holds a raw escape byte", r.args)
			}
			if took > hostileTime {
				t.Errorf("%v: took %v, more than %v", r.args, took, hostileTime)
			}
			if a := ms1.TotalAlloc - ms0.TotalAlloc; a > hostileAlloc {
				t.Errorf("%v: allocated %d MB, more than %d MB", r.args, a>>20, hostileAlloc>>20)
			}
			after, err := os.Lstat(path)
			if before != nil && (err != nil || after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime())) {
				t.Errorf("%v: the input changed", r.args)
			}
			if content != nil {
				if b, _ := os.ReadFile(path); !bytes.Equal(b, content) {
					t.Errorf("%v: the input's bytes changed", r.args)
				}
			}
			if capCopy != "" {
				if b, _ := os.ReadFile(capCopy); !bytes.Equal(b, content) {
					t.Errorf("%v: the capture in the output folder changed", r.args)
				}
			}
		})
	}
	for name := range hostileInputs(t) {
		if !files[name] {
			t.Errorf("%s is in the corpus but no MANIFEST line runs it", name)
		}
	}
	t.Logf("%d inputs (%d generated), %d runs", len(files), len(gen), len(runs))
}
