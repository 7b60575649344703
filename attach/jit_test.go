package attach

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

var jitcheck struct {
	once      sync.Once
	path, err string
}

// buildJitcheck compiles testdata/jit/jitcheck.c (lib/iket_jit.h's
// jit_image on a file) with $CC or cc, once; the test skips without a C
// compiler unless IKET_REQUIRE_CC=1.
func buildJitcheck(t *testing.T) string {
	t.Helper()
	jitcheck.once.Do(func() {
		cc := os.Getenv("CC")
		if cc == "" {
			cc = "cc"
		}
		if _, err := exec.LookPath(strings.Fields(cc)[0]); err != nil {
			jitcheck.err = "no C compiler: " + err.Error()
			return
		}
		dir, err := os.MkdirTemp("", "iket-jitcheck-")
		if err != nil {
			jitcheck.err = err.Error()
			return
		}
		out := filepath.Join(dir, "jitcheck")
		args := append(strings.Fields(cc)[1:], "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-o", out, "testdata/jit/jitcheck.c", "-ldl", "-lpthread")
		if b, err := exec.Command(strings.Fields(cc)[0], args...).CombinedOutput(); err != nil {
			jitcheck.err = "build jitcheck: " + err.Error() + "\n" + string(b)
			return
		}
		jitcheck.path = out
	})
	if jitcheck.path == "" {
		if strings.HasPrefix(jitcheck.err, "no C compiler") && os.Getenv("IKET_REQUIRE_CC") != "1" {
			t.Skip(jitcheck.err)
		}
		t.Fatal(jitcheck.err)
	}
	return jitcheck.path
}

// TestJitImage runs jit_image, what the injection library gives the driver
// in place of a dormant build's image, on fatbins nvcc 13.0 built from
// kernels/examples/warp_roles.cu (testdata/jit/README.md) and on PTX text.
func TestJitImage(t *testing.T) {
	bin := buildJitcheck(t)
	const minified = ".version 9.0\n.target sm_90a\n.address_size 64\n.global .align 4 .u32 iket_jit;\n" +
		"{\n.reg .b32 iket_gate;\nmov.b32 iket_gate, 0;\nmov.b32 %r1, iket_gate;\n}\n" +
		"{\n.reg .pred gp;\n{\n.reg .b32 iket_gate;\nmov.b32 \tiket_gate, 0 ;\nsetp.eq.u32 gp, iket_gate, 1;\n}\n}\n"
	text := func(t *testing.T, s string) string {
		p := filepath.Join(t.TempDir(), "image")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fixture := func(name string) func(*testing.T) string {
		return func(*testing.T) string { return filepath.Join("testdata", "jit", name) }
	}
	// damaged is the LZ4 fixture with each PTX entry's header changed by
	// f (the entry's 64 bytes and the image).
	damaged := func(f func(h []byte)) func(*testing.T) string {
		return func(t *testing.T) string {
			b := readFixture(t, "roles_dormant_lz4.fatbin")
			for _, e := range fatbinEntries(t, b) {
				if binary.LittleEndian.Uint16(b[e:]) == 1 {
					f(b[e : e+64])
				}
			}
			return text(t, string(b))
		}
	}
	for _, tc := range []struct {
		name     string
		image    func(*testing.T) string
		dev      string
		driver   string // cuDriverGetVersion's; 13000 when empty
		wrap     bool
		gates    int      // 0: no PTX comes back
		target   string   // the .target of the PTX chosen
		why      string   // part of the reason given, "" for none
		zstd     bool     // the image's PTX is zstd-compressed
		contains []string // in the PTX
	}{
		{name: "a dormant build's fatbin", image: fixture("roles_dormant.fatbin"), dev: "90", gates: 1, target: "sm_90a", zstd: true,
			contains: []string{".global .align 4 .u32 iket_jit = 1;", "mov.b32 iket_gate, 1;"}},
		{name: "as cudart passes it, in a wrapper", image: fixture("roles_dormant.fatbin"), dev: "90", wrap: true, gates: 1, target: "sm_90a", zstd: true},
		{name: "built with --no-compress", image: fixture("roles_dormant_raw.fatbin"), dev: "90", gates: 1, target: "sm_90a",
			contains: []string{"iket_jit = 1;"}},
		{name: "built with -Xfatbin=-compress-mode=speed (LZ4)", image: fixture("roles_dormant_speed.fatbin"), dev: "90", gates: 1, target: "sm_90a",
			contains: []string{".global .align 4 .u32 iket_jit = 1;", "mov.b32 iket_gate, 1;"}},
		{name: "PTX and cubin as LZ4 blocks", image: fixture("roles_dormant_lz4.fatbin"), dev: "90", gates: 1, target: "sm_90a",
			contains: []string{".global .align 4 .u32 iket_jit = 1;", "mov.b32 iket_gate, 1;"}},
		{name: "an LZ4 block cut short", image: damaged(func(h []byte) {
			binary.LittleEndian.PutUint32(h[16:], binary.LittleEndian.Uint32(h[16:])-9)
		}), dev: "90", why: "LZ4-compressed PTX did not decode"},
		{name: "an LZ4 block shorter than its stated size", image: damaged(func(h []byte) {
			binary.LittleEndian.PutUint64(h[56:], binary.LittleEndian.Uint64(h[56:])+1)
		}), dev: "90", why: "LZ4-compressed PTX did not decode"},
		{name: "a later GPU gets the portable PTX", image: fixture("roles_dormant.fatbin"), dev: "100", gates: 1, target: "sm_90", zstd: true},
		{name: "an earlier GPU gets none", image: fixture("roles_dormant.fatbin"), dev: "80", why: "another GPU", zstd: true},
		{name: "a driver older than the PTX gets none", image: fixture("roles_dormant.fatbin"), dev: "90", driver: "12090", why: "later CUDA than this driver", zstd: true},
		{name: "PTX text for a later driver", image: func(t *testing.T) string {
			return text(t, strings.Replace(minified, ".version 9.0", ".version 9.1", 1))
		}, dev: "90", why: "later CUDA"},
		{name: "a dormant build without PTX", image: fixture("roles_sass.fatbin"), dev: "90", why: "holds no PTX"},
		{name: "an uninstrumented build", image: fixture("roles_plain.fatbin"), dev: "90"},
		{name: "a fatbin header of another version is left alone", image: func(t *testing.T) string {
			b := readFixture(t, "roles_dormant_raw.fatbin")
			binary.LittleEndian.PutUint16(b[4:], 2)
			return text(t, string(b))
		}, dev: "90"},
		{name: "any build without PTX this GPU compiles is said so from its headers", image: fixture("roles_plain.fatbin"), dev: "80", why: "another GPU"},
		{name: "PTX text, minified as nvcc embeds it", image: func(t *testing.T) string { return text(t, minified) }, dev: "90", gates: 2, target: "sm_90a",
			contains: []string{".u32 iket_jit = 1;\n{", "mov.b32 iket_gate, 1;", "mov.b32 \tiket_gate, 1 ;", "setp.eq.u32 gp, iket_gate, 1;"}},
		{name: "PTX text with no gate", image: func(t *testing.T) string { return text(t, ".version 9.0\n.target sm_90a\nret;\n") }, dev: "90"},
		{name: "a cubin", image: func(t *testing.T) string { return text(t, "\x7fELF\x02\x01\x01A iket_jit iket_gate, 0;") }, dev: "90"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			driver := tc.driver
			if driver == "" {
				driver = "13000"
			}
			args := []string{tc.image(t), tc.dev, driver}
			if tc.wrap {
				args = append(args, "wrap")
			}
			var out, errb bytes.Buffer
			cmd := exec.Command(bin, args...)
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Fatalf("jitcheck: %v\n%s", err, errb.String())
			}
			diag := errb.String()
			if tc.zstd && strings.Contains(diag, "libzstd.so.1 could not be opened") {
				t.Skip("no libzstd.so.1 here: " + strings.TrimSpace(diag))
			}
			if want := "gates " + strconv.Itoa(tc.gates) + "\n"; !strings.HasPrefix(diag, want) {
				t.Errorf("jitcheck said %q, want %q first", diag, want)
			}
			if (tc.why == "") != strings.HasSuffix(diag, "why \n") || !strings.Contains(diag, tc.why) {
				t.Errorf("jitcheck said %q, want the reason %q", diag, tc.why)
			}
			ptx := out.String()
			if (tc.gates == 0) != (ptx == "") {
				t.Fatalf("%d bytes of PTX, want PTX only with gates", len(ptx))
			}
			if ptx == "" {
				return
			}
			if !strings.Contains(ptx, "\n.target "+tc.target+"\n") {
				t.Errorf("the PTX chosen is not for %s:\n%.300s", tc.target, ptx)
			}
			if strings.Contains(ptx, "iket_gate, 0;") || strings.Contains(ptx, "iket_jit;") {
				t.Errorf("a gate or the marker is left unset")
			}
			for _, c := range tc.contains {
				if !strings.Contains(ptx, c) {
					t.Errorf("the PTX lacks %q", c)
				}
			}
		})
	}
}

// TestJitImageDamagedLZ4 runs jit_image on the LZ4 fixture with one payload
// byte changed, at 256 places: each run ends, and says how many gates it set
// (a changed byte may leave the PTX readable, or damage the block).
func TestJitImageDamagedLZ4(t *testing.T) {
	bin := buildJitcheck(t)
	orig := readFixture(t, "roles_dormant_lz4.fatbin")
	var spans [][2]int // the entries' payloads
	for _, e := range fatbinEntries(t, orig) {
		ehs := int(binary.LittleEndian.Uint32(orig[e+4:]))
		spans = append(spans, [2]int{e + ehs, e + ehs + int(binary.LittleEndian.Uint32(orig[e+16:]))})
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 256 {
		b := slices.Clone(orig)
		sp := spans[i%len(spans)]
		at := sp[0] + rng.IntN(sp[1]-sp[0])
		b[at] ^= byte(1 + rng.IntN(255))
		if err := jitcheckEnds(bin, filepath.Join(dir, "image"), b); err != nil {
			t.Fatalf("byte %d changed: %v", at, err)
		}
	}
}

// jitcheckEnds runs jitcheck on the image b, written to path, for sm_90 and
// a CUDA 13.0 driver: an error unless it ends and says how many gates it set.
func jitcheckEnds(bin, path string, b []byte) error {
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return err
	}
	var errb bytes.Buffer
	cmd := exec.Command(bin, path, "90", "13000")
	cmd.Stdout, cmd.Stderr = io.Discard, &errb
	if err := cmd.Run(); err != nil || !strings.HasPrefix(errb.String(), "gates ") {
		return fmt.Errorf("jitcheck: %v, said %q", err, errb.String())
	}
	return nil
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "jit", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fatbinEntries is the offsets of a fatbin's entries (a 16-byte header,
// its size at 8, then each entry's header: its size at 4, its payload's at
// 8).
func fatbinEntries(t *testing.T, b []byte) []int {
	t.Helper()
	hs := int(binary.LittleEndian.Uint16(b[6:]))
	end := hs + int(binary.LittleEndian.Uint64(b[8:]))
	var out []int
	for p := hs; p+64 <= end; {
		out = append(out, p)
		p += int(binary.LittleEndian.Uint32(b[p+4:])) + int(binary.LittleEndian.Uint64(b[p+8:]))
	}
	if len(out) == 0 || end > len(b) {
		t.Fatalf("not a fatbin of entries: %d bytes, %d entries", len(b), len(out))
	}
	return out
}

// FuzzJitImage runs jit_image on changed fixtures: it must end, and say how
// many gates it set, for any image whose fatbin header states its size (the
// driver reads the image by that size too; the size is set to the input's)
// and that is no wrapper (which holds a pointer, not the image).
func FuzzJitImage(f *testing.F) {
	for _, name := range []string{"roles_dormant.fatbin", "roles_dormant_speed.fatbin", "roles_dormant_lz4.fatbin", "roles_dormant_raw.fatbin", "roles_sass.fatbin"} {
		b, err := os.ReadFile(filepath.Join("testdata", "jit", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(".version 9.0\n.target sm_90a\n.global .align 4 .u32 iket_jit;\nmov.b32 iket_gate, 0;\n"))
	bin := ""
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		if bin == "" {
			bin = buildJitcheck(t)
		}
		if len(b) >= 4 && binary.LittleEndian.Uint32(b) == 0x466243b1 {
			return
		}
		b = slices.Clone(b)
		if len(b) >= 4 && binary.LittleEndian.Uint32(b) == 0xBA55ED50 {
			if len(b) < 16 || int(binary.LittleEndian.Uint16(b[6:])) > len(b) {
				return // a header the input does not hold
			}
			binary.LittleEndian.PutUint64(b[8:], uint64(len(b)-int(binary.LittleEndian.Uint16(b[6:]))))
		}
		if err := jitcheckEnds(bin, filepath.Join(dir, "image"), b); err != nil {
			t.Fatalf("%d bytes: %v", len(b), err)
		}
	})
}
