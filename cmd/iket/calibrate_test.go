package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iket-trace/iket/internal/emu"
	"github.com/iket-trace/iket/trace"
)

// calibrationCapture writes an emulated capture of the calibrate program:
// sms SMs with different clocks, 4 warps each, every warp marking
// after_barrier at one true instant per round, SM lateSM lateNs late.
func calibrationCapture(t *testing.T, sms, rounds, lateSM int, lateNs float64) string {
	t.Helper()
	clocks := map[uint32]emu.Clock{}
	for sm := range sms {
		clocks[uint32(sm)] = emu.Clock{MHz: 1955 + float64(sm%27), Cycle0: 9_000_000 + uint64(sm)*777_777_777,
			Ns0: emu.DefaultNs0, TickNs: 32, JitterCycles: 1}
	}
	l := &emu.Launch{Kernel: "calibrate", Grid: [3]uint32{uint32(sms), 1, 1}, Block: [3]uint32{128, 1, 1},
		Capacity: 128, Names: emu.MustNames("ROLE calibrator", "RANGE barrier_wait", "MARK after_barrier"),
		SMs: uint32(sms), Clocks: clocks}
	for sm := range sms {
		ck := clocks[uint32(sm)]
		at := func(ns float64) uint64 { return ck.Cycle0 + uint64(math.Round(ns*ck.MHz/1000)) }
		late := 0.0
		if sm == lateSM {
			late = lateNs
		}
		for wi := range 4 {
			w := l.Warp([3]uint32{uint32(sm), 0, 0}, uint32(wi))
			w.Role("calibrator", at(500))
			for r := range rounds {
				rel := 5_000 + float64(r)*4_000
				w.Push("barrier_wait", uint16(r), at(rel-1_000-float64(wi))).
					Mark("after_barrier", uint16(r), at(rel+late)).
					Pop(at(rel + late + 15))
			}
		}
	}
	b, err := l.Capture()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "cal.iket")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// runCalibrateCLI runs the calibrate command (not yet in root's list) with
// args and returns its output and error.
func runCalibrateCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := newCalibrateCmd(&out, &errb)
	cmd.SetArgs(append([]string{}, args...)) // never nil: cobra would read os.Args
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	return out.String(), err
}

func TestCalibrateTable(t *testing.T) {
	tests := []struct {
		name   string
		lateNs float64
		want   []string
	}{
		{name: "aligned", want: []string{
			"calibrate: mark after_barrier, 8 rounds, 48 warps on 12 SMs\n",
			"across SMs (each SM's earliest)", "across all warps",
			"clock fits: 12 SMs, 1955-1966 MHz", "resolution: 0.51", "upper bound",
		}},
		{name: "SM 7 late by 100 ns", lateNs: 100, want: []string{"8 rounds, 48 warps on 12 SMs", "100."}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := calibrationCapture(t, 12, 8, 7, tc.lateNs)
			out, err := runCalibrateCLI(t, p)
			if err != nil {
				t.Fatalf("calibrate: %v\n%s", err, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			js, err := runCalibrateCLI(t, "--json", p)
			if err != nil {
				t.Fatal(err)
			}
			var res trace.SpreadResult
			if err := json.Unmarshal([]byte(js), &res); err != nil {
				t.Fatalf("--json output: %v\n%s", err, js)
			}
			if len(res.Rounds) != 8 || res.Warps != 48 || res.SMs != 12 || res.Clocks.SMs != 12 {
				t.Errorf("--json: %d rounds, %d warps, %d SMs, %d fits", len(res.Rounds), res.Warps, res.SMs, res.Clocks.SMs)
			}
			for what, got := range map[string]float64{"sm median": res.SMSpreadMedianNs, "sm max": res.SMSpreadMaxNs, "warp max": res.WarpSpreadMaxNs} {
				if math.Abs(got-tc.lateNs) > 2 {
					t.Errorf("%s spread %.2f ns, want %.0f +- 2", what, got, tc.lateNs)
				}
			}
		})
	}
}

func TestCalibrateRounds(t *testing.T) {
	p := calibrationCapture(t, 3, 2, -1, 0)
	out, err := runCalibrateCLI(t, "--rounds", p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "round  warps  SMs  warp spread") || strings.Count(out, "\n") < 12 {
		t.Errorf("--rounds lacks the per-round table:\n%s", out)
	}
}

func TestCalibrateErrors(t *testing.T) {
	p := calibrationCapture(t, 2, 2, -1, 0)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown mark", []string{"--mark", "nope", p}, `has no MARK "nope" (have [after_barrier])`},
		{"range is no mark", []string{"--mark", "barrier_wait", p}, `has no MARK "barrier_wait"`},
		{"bad launch", []string{"--launch", "3", p}, "launch 3: capture"},
		{"missing file", []string{filepath.Join(t.TempDir(), "none.iket")}, "none.iket"},
		{"no args", nil, "accepts 1 arg"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runCalibrateCLI(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			var ce *codeError
			if tc.args != nil && (!errors.As(err, &ce) || ce.code != exitError) {
				t.Errorf("err %v: want exit code %d", err, exitError)
			}
		})
	}
}
