package attach

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
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
		args := append(strings.Fields(cc)[1:], "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-o", out, "testdata/jit/jitcheck.c", "-ldl")
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
		{name: "a later GPU gets the portable PTX", image: fixture("roles_dormant.fatbin"), dev: "100", gates: 1, target: "sm_90", zstd: true},
		{name: "an earlier GPU gets none", image: fixture("roles_dormant.fatbin"), dev: "80", why: "another GPU", zstd: true},
		{name: "a driver older than the PTX gets none", image: fixture("roles_dormant.fatbin"), dev: "90", driver: "12090", why: "later CUDA than this driver", zstd: true},
		{name: "PTX text for a later driver", image: func(t *testing.T) string {
			return text(t, strings.Replace(minified, ".version 9.0", ".version 9.1", 1))
		}, dev: "90", why: "later CUDA"},
		{name: "a dormant build without PTX", image: fixture("roles_sass.fatbin"), dev: "90", why: "holds no PTX"},
		{name: "an uninstrumented build", image: fixture("roles_plain.fatbin"), dev: "90"},
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
