// Package fakecuda builds, for tests, the fake CUDA driver and CUPTI and
// the driver-API application of attach/testdata/fake: C sources compiled
// with the system's C compiler, so that `iket run -- CMD` runs end to end
// in CI with no GPU.
package fakecuda

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// ErrNoCompiler is returned when there is no C compiler ($CC or cc).
var ErrNoCompiler = errors.New("no C compiler for the fake CUDA driver")

// Source is the folder of the fake's C sources.
func Source() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "attach", "testdata", "fake")
}

var cflags = []string{"-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g"}

func compiler() ([]string, error) {
	cc := strings.Fields(os.Getenv("CC"))
	if len(cc) == 0 {
		cc = []string{"cc"}
	}
	if _, err := exec.LookPath(cc[0]); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoCompiler, err)
	}
	return cc, nil
}

// Compile runs the C compiler with the fake's flags and args in its source
// folder (for a test's own library beside the fake, say).
func Compile(args ...string) error {
	cc, err := compiler()
	if err != nil {
		return err
	}
	return compile(cc, args...)
}

func compile(cc []string, args ...string) error {
	cmd := exec.Command(cc[0], append(append(append(cc[1:], cflags...), "-I", Source()), args...)...)
	cmd.Dir = Source()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return nil
}

// Build compiles the fake into dir: dir/libcuda.so.1 (the fake driver,
// which is also the fake CUPTI: give its path as IKET_CUPTI_LIB),
// dir/libcuda.so (a link to it) and dir/fakeapp (which loads
// dir/libcuda.so.1 through an rpath of $ORIGIN, searched before
// LD_LIBRARY_PATH, so a machine with a real driver on that path still runs
// the fake). It returns fakeapp's path.
func Build(dir string) (app string, err error) {
	cc, err := compiler()
	if err != nil {
		return "", err
	}
	lib, app := filepath.Join(dir, "libcuda.so.1"), filepath.Join(dir, "fakeapp")
	if err := compile(cc, "-shared", "-fPIC", "-fvisibility=hidden", "-Wl,-soname,libcuda.so.1", "-o", lib,
		"fakecuda.c", "fakestream.c", "fakemod.c", "fakecupti.c", "-ldl", "-lpthread"); err != nil {
		return "", err
	}
	if err := os.Symlink("libcuda.so.1", filepath.Join(dir, "libcuda.so")); err != nil && !os.IsExist(err) {
		return "", err
	}
	if err := compile(cc, "-o", app, "fakeapp.c", "-L", dir, "-lcuda", "-Wl,-rpath,$ORIGIN", "-Wl,--disable-new-dtags"); err != nil {
		return "", err
	}
	return app, nil
}

// Env returns env without the variables that steer the fake or an
// injection, plus extra ("K=V").
func Env(env []string, extra ...string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if k == "CUDA_INJECTION64_PATH" || k == "IKET_CUPTI_LIB" || strings.HasPrefix(k, "FAKE_") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, extra...)
}
