package attach

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

//go:embed lib/iket_inject.c lib/iket_cuda.h lib/iket_jit.h
var libSource embed.FS

// LibraryName is the file name of the built injection library.
const LibraryName = "libiket_inject.so"

// ErrNoCompiler is returned (wrapped) when the injection library must be
// built and no C compiler is found.
var ErrNoCompiler = errors.New("no C compiler")

// Library returns the path of the injection library, building it from the
// embedded source on first use into dir/inject-HASH (dir defaults to the
// user's cache directory's iket folder) with $CC or cc. A build is written to a
// temporary file and renamed, so concurrent callers see a whole library.
// IKET_INJECT_LIB, when set, names a library to use instead.
func Library(ctx context.Context, dir string) (string, error) {
	if p := os.Getenv("IKET_INJECT_LIB"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("IKET_INJECT_LIB: %w", err)
		}
		return filepath.Abs(p)
	}
	files, err := sources()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, name := range libFiles {
		h.Write([]byte(name))
		h.Write(files[name])
	}
	sum := h.Sum(nil)
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		dir = filepath.Join(base, "iket")
	}
	dir = filepath.Join(dir, "inject-"+hex.EncodeToString(sum[:8]))
	out := filepath.Join(dir, LibraryName)
	if st, err := os.Stat(out); err == nil && st.Mode().IsRegular() {
		return out, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("build injection library: %w", err)
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	ccPath, err := exec.LookPath(strings.Fields(cc)[0])
	if err != nil {
		return "", fmt.Errorf("build injection library: %w: iket run -- CMD builds its injection library once with a C compiler (set CC, or IKET_INJECT_LIB to a built one): %v", ErrNoCompiler, err)
	}
	work, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return "", fmt.Errorf("build injection library: %w", err)
	}
	defer os.RemoveAll(work)
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(work, name), b, 0o644); err != nil {
			return "", fmt.Errorf("build injection library: %w", err)
		}
	}
	tmp := filepath.Join(work, LibraryName)
	args := append(strings.Fields(cc)[1:], "-std=c11", "-O2", "-shared", "-fPIC", "-fvisibility=hidden",
		"-o", tmp, filepath.Join(work, "iket_inject.c"), "-ldl", "-lpthread")
	cmd := exec.CommandContext(ctx, ccPath, args...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build injection library with %s: %w\n%s", cc, err, strings.TrimSpace(log.String()))
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", fmt.Errorf("build injection library: %w", err)
	}
	return out, nil
}

// libFiles are the injection library's sources, in lib/.
var libFiles = []string{"iket_inject.c", "iket_cuda.h", "iket_jit.h"}

func sources() (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, name := range libFiles {
		b, err := libSource.ReadFile("lib/" + name)
		if err != nil {
			return nil, err
		}
		files[name] = b
	}
	return files, nil
}

// FindCUPTI returns the path of a CUPTI library to give the injection
// library, or "" to let it search the loader's path itself. It looks at
// IKET_CUPTI_LIB, then under CUDA_HOME, CUDA_PATH and /usr/local/cuda.
func FindCUPTI() string {
	if p := os.Getenv("IKET_CUPTI_LIB"); p != "" {
		return p
	}
	var roots []string
	for _, v := range []string{"CUDA_HOME", "CUDA_PATH"} {
		if r := os.Getenv(v); r != "" {
			roots = append(roots, r)
		}
	}
	roots = append(roots, "/usr/local/cuda")
	for _, r := range roots {
		for _, sub := range []string{"extras/CUPTI/lib64", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib", "lib64"} {
			m, _ := filepath.Glob(filepath.Join(r, sub, "libcupti.so*"))
			if len(m) > 0 {
				return m[0]
			}
		}
	}
	return ""
}
