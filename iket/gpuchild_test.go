package iket_test

// Child processes for GPU tests that fault or hang on purpose. A sticky CUDA
// error (an illegal address, a trap) ends the whole process's use of CUDA,
// so such a test cannot run in the test binary's own process: it re-executes
// the binary (os.Args[0] -test.run=^TestGPUChild$) with IKET_GPU_CHILD naming
// the case. The child does the fault and prints what it saw as one JSON line
// after childReportPrefix; the parent asserts on it. The child's environment
// is the parent's, so IKET_REQUIRE_GPU passes through: without a GPU the
// child skips (and so does the parent) unless it is set, in which case the
// child fails and so does the parent.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/iket-trace/iket/iket"
	"github.com/iket-trace/iket/iket/internal/cuda"
)

const (
	childEnv          = "IKET_GPU_CHILD"
	childReportPrefix = "IKET-CHILD-REPORT "
	// childTimeout bounds a child: the hang kernel ends itself after
	// builtin.HangLimit (30 s), so a healthy child is done long before.
	childTimeout = 90 * time.Second
)

// childCases are the cases TestGPUChild runs, by IKET_GPU_CHILD value. A
// case returns its report (nil: print none) or fails the child test.
var childCases = map[string]func(t *testing.T) any{
	"selftest/ok": func(t *testing.T) any {
		return selftestReport{Case: "selftest/ok", RequireGPU: os.Getenv("IKET_REQUIRE_GPU")}
	},
	"selftest/fail": func(t *testing.T) any {
		t.Error("the selftest/fail child fails after reporting")
		return selftestReport{Case: "selftest/fail"}
	},
	"selftest/silent": func(t *testing.T) any { return nil },
	"selftest/skip": func(t *testing.T) any {
		t.Skip("selftest/skip skips")
		return nil
	},
	"selftest/fault_recorded": faultRecordedChild,

	"fault/illegal_address/watch":  faultChild(0, true),
	"fault/illegal_address/device": faultChild(0, false),
	"fault/trap/watch":             faultChild(1, true),
	"fault/trap/device":            faultChild(1, false),
	"hang/watch":                   hangChild(true),
	"hang/device":                  hangChild(false),
}

// TestGPUChild runs one child case; it skips unless IKET_GPU_CHILD is set.
func TestGPUChild(t *testing.T) {
	name := os.Getenv(childEnv)
	if name == "" {
		t.Skip("runs only as a child process of a GPU test (" + childEnv + " names the case)")
	}
	run, ok := childCases[name]
	if !ok {
		t.Fatalf("%s=%q: no such child case", childEnv, name)
	}
	rep := run(t)
	if rep == nil {
		return
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatalf("encode the report of %s: %v", name, err)
	}
	fmt.Printf("\n%s%s\n", childReportPrefix, b)
}

// runChild runs child case name in a new process of this test binary and
// decodes its report into report. skip is the child's skip message when it
// skipped (and printed no report); err says why the child failed, with its
// output.
func runChild(name string, report any) (skip string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), childTimeout+10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestGPUChild$", "-test.v", "-test.count=1",
		"-test.timeout="+childTimeout.String())
	cmd.Env = append(os.Environ(), childEnv+"="+name)
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	runErr := cmd.Run()
	output := out.String()
	if runErr != nil {
		return "", fmt.Errorf("child %s: %w; its output:\n%s", name, runErr, output)
	}
	var line string
	sc := bufio.NewScanner(strings.NewReader(output))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), childReportPrefix); ok {
			if line != "" {
				return "", fmt.Errorf("child %s: two reports; its output:\n%s", name, output)
			}
			line = rest
		}
	}
	if line == "" {
		if strings.Contains(output, "--- SKIP: TestGPUChild") {
			return strings.TrimSpace(output), nil
		}
		return "", fmt.Errorf("child %s: passed without a report; its output:\n%s", name, output)
	}
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(report); err != nil {
		return "", fmt.Errorf("child %s: decode report %q: %w", name, line, err)
	}
	return "", nil
}

// child runs child case name and decodes its report, failing t if the child
// failed and skipping t if it skipped.
func child(t *testing.T, name string, report any) {
	t.Helper()
	start := time.Now()
	skip, err := runChild(name, report)
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skipf("child %s skipped: %s", name, skip)
	}
	t.Logf("child %s ran in %v", name, time.Since(start).Round(time.Millisecond))
}

// selftestReport is what the selftest children report.
type selftestReport struct {
	Case       string
	RequireGPU string
	Err        string
	Unusable   bool
	NoDevice   bool
	Code       string
}

// faultRecordedChild records a sticky fault as a kernel fault would and
// reports what OpenDevice says afterwards (no GPU needed: the refusal comes
// before the driver is asked).
func faultRecordedChild(t *testing.T) any {
	iket.RecordFault(fmt.Errorf("launch fault: %w", &cuda.Error{Op: "cuEventQuery", Result: cuda.ErrIllegalAddress}))
	d, err := iket.OpenDevice(0)
	if err == nil {
		d.Close()
		t.Fatal("OpenDevice succeeded after a recorded fault")
	}
	return selftestReport{Case: "selftest/fault_recorded", Err: err.Error(),
		Unusable: errors.Is(err, iket.ErrDeviceUnusable), NoDevice: errors.Is(err, iket.ErrNoDevice), Code: iket.CodeOf(err)}
}

// TestGPUChildPlumbing checks the parent/child mechanism itself; it needs no
// GPU.
func TestGPUChildPlumbing(t *testing.T) {
	tests := []struct {
		name     string
		want     *selftestReport // nil: no report
		wantSkip bool
		wantErr  string // substring of runChild's error; "" for none
		// errPrefix: the report's Err starts with it (the rest is the
		// driver's description, which depends on the driver).
		errPrefix string
	}{
		{name: "selftest/ok", want: &selftestReport{Case: "selftest/ok", RequireGPU: os.Getenv("IKET_REQUIRE_GPU")}},
		{name: "selftest/fail", wantErr: "exit status 1"},
		{name: "selftest/silent", wantErr: "without a report"},
		{name: "selftest/skip", wantSkip: true},
		{name: "selftest/no_such_case", wantErr: "no such child case"},
		{name: "selftest/fault_recorded", want: &selftestReport{
			Case:     "selftest/fault_recorded",
			Unusable: true,
			Code:     "CUDA_ERROR_ILLEGAL_ADDRESS",
		}, errPrefix: "open device 0: device 0: " + iket.FaultMsg + ": launch fault: cuEventQuery: CUDA_ERROR_ILLEGAL_ADDRESS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got selftestReport
			skip, err := runChild(tt.name, &got)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("runChild error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (skip != "") != tt.wantSkip || (tt.wantSkip && !strings.Contains(skip, "selftest/skip skips")) {
				t.Fatalf("skip = %q, want skip %v", skip, tt.wantSkip)
			}
			if tt.want == nil {
				return
			}
			if !strings.HasPrefix(got.Err, tt.errPrefix) {
				t.Errorf("reported error %q, want prefix %q", got.Err, tt.errPrefix)
			}
			if tt.errPrefix != "" {
				got.Err = ""
			}
			if diff := cmp.Diff(*tt.want, got); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
		})
	}
}
