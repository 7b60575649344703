package iket

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

// Program is a kernel with everything [Run] needs to run it: its source,
// entry point, parameter kinds, launch configuration, inputs and an exact
// output check. Package builtin holds iket's own; package spec makes one
// from a spec file.
type Program struct {
	Name        string
	Entry       string
	Description string
	// Source returns the kernel (a .cu is compiled in both builds; a
	// prebuilt image is the instrumented build). [RunOptions.Source]
	// replaces it.
	Source func() (Source, error)
	Params []ParamKind
	// ConfigFor returns the launch configuration for a GPU with sms SMs.
	ConfigFor func(sms int) LaunchConfig
	// Setup allocates the program's buffers for cfg on d and fills its
	// inputs. Close the Workload when done.
	Setup func(d *Device, cfg LaunchConfig) (*Workload, error)
}

// Workload is a program's arguments and its output check.
type Workload struct {
	Args []Arg
	// Buffers names the workload's buffers ("in", "out", ...); Close frees
	// them.
	Buffers map[string]*Buffer
	// Poison overwrites the outputs with a value no correct run writes.
	Poison func() error
	// Verify checks the outputs exactly.
	Verify func() error
}

// Close frees the workload's buffers.
func (w *Workload) Close() error {
	var errs []error
	names := make([]string, 0, len(w.Buffers))
	for n := range w.Buffers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := w.Buffers[n].Close(); err != nil {
			errs = append(errs, fmt.Errorf("buffer %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

// Config returns the launch configuration on d.
func (p *Program) Config(d *Device) LaunchConfig { return p.ConfigFor(d.info.SMs) }

// CheckArgs checks an argument list against the program's signature.
func (p *Program) CheckArgs(args []Arg) error { return checkArgs(p.Entry, p.Params, args) }

// Check runs m (either build) once on w with poisoned outputs and verifies
// them exactly. Faults and hangs are returned as by [Module.Launch].
func (p *Program) Check(m *Module, cfg LaunchConfig, w *Workload, timeout time.Duration) error {
	if err := p.CheckArgs(w.Args); err != nil {
		return err
	}
	if err := w.Poison(); err != nil {
		return fmt.Errorf("check %s: poison outputs: %w", p.Name, err)
	}
	if err := m.Launch(cfg, w.Args, timeout); err != nil {
		return fmt.Errorf("check %s: %w", p.Name, err)
	}
	if err := w.Verify(); err != nil {
		return fmt.Errorf("check %s: %w", p.Name, err)
	}
	return nil
}
