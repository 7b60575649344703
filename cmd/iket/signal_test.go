package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iket-trace/iket/internal/emu"
)

// TestMain lets the test binary run as the iket command (IKET_TEST_MAIN=1:
// the arguments after "--"), so that a test can signal a real process.
func TestMain(m *testing.M) {
	if os.Getenv("IKET_TEST_MAIN") == "1" {
		for i, a := range os.Args {
			if a == "--" {
				os.Args = append([]string{"iket"}, os.Args[i+1:]...)
				break
			}
		}
		main()
	}
	os.Exit(m.Run())
}

// TestSIGTERMDuringExport: SIGTERM in the middle of writing a .pftrace
// leaves the old file as it was and no temporary file, and exits 130.
func TestSIGTERMDuringExport(t *testing.T) {
	dir := t.TempDir()
	capPath := filepath.Join(dir, "big.iket")
	l := &emu.Launch{Kernel: "big", Grid: [3]uint32{40000, 1, 1}, Block: [3]uint32{64, 1, 1}, Capacity: 64,
		Names: emu.MustNames("ROLE producer", "RANGE load")}
	l.Generate = func(w *emu.Warp) {
		w.Role("producer", 1000)
		for i := uint64(0); i < 30; i++ {
			w.Push("load", uint16(i), 1100+100*i).Pop(1150 + 100*i)
		}
	}
	f, err := os.Create(capPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := emu.Write(f, l); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out := filepath.Join(dir, "trace.pftrace")
	if err := os.WriteFile(out, []byte("the old trace"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$", "--", "export", capPath, "-o", out, "--flows", "--counters")
	cmd.Env = append(os.Environ(), "IKET_TEST_MAIN=1")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Signal once the temporary output exists: the export is under way.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		m, _ := filepath.Glob(filepath.Join(dir, ".trace.pftrace.tmp*"))
		if len(m) > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var msg strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		msg.WriteString(sc.Text() + "\n")
	}
	err = cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	t.Logf("exit %d after the signal; stderr: %s", code, msg.String())
	if m, _ := filepath.Glob(filepath.Join(dir, ".trace.pftrace.tmp*")); len(m) > 0 {
		t.Errorf("left %v behind", m)
	}
	if code == 0 {
		t.Skip("the export finished before the signal reached it: nothing about SIGTERM was checked")
	}
	if code != exitInterrupted {
		t.Errorf("exit %d, want %d: %s", code, exitInterrupted, msg.String())
	}
	if b, _ := os.ReadFile(out); string(b) != "the old trace" {
		t.Errorf("the old trace is now %d bytes", len(b))
	}
}
