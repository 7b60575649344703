package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/iket-trace/iket/iket"
	"github.com/iket-trace/iket/trace"
)

func newDevicesCmd(stdout, stderr io.Writer) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "devices",
		Short: "List GPUs with driver, CUDA, clocks, temperature, power and throttle state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDevices(asJSON, stdout)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func runDevices(asJSON bool, stdout io.Writer) error {
	n, err := iket.DeviceCount()
	if err != nil {
		return failWith(exitError, err)
	}
	var infos []trace.Device
	for i := 0; i < n; i++ {
		d, err := iket.OpenDevice(i)
		if err != nil {
			return failWith(exitError, err)
		}
		info := d.Info()
		infos = append(infos, info)
		d.Close()
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(infos)
	}
	for i, info := range infos {
		fmt.Fprintf(stdout, "%d: %s (%s)\n", i, info.Name, info.UUID)
		fmt.Fprintf(stdout, "   driver %s, CUDA %s, compute %s, %d SMs, max SM clock %d MHz\n",
			info.Driver, info.CUDA, info.ComputeCap, info.SMs, info.MaxSMClockMHz)
		if c := info.Before; c != nil {
			fmt.Fprintf(stdout, "   now: SM %d MHz, memory %d MHz, %d C, %.0f W of %.0f W, throttle: %s\n",
				c.SMClockMHz, c.MemClockMHz, c.TemperatureC, c.PowerW, c.PowerLimitW, throttleText(c.ThrottleReasons))
		}
	}
	return nil
}

func throttleText(r []string) string {
	if len(r) == 0 {
		return "none"
	}
	return strings.Join(r, ", ")
}

// noDevice reports whether err means there is no GPU to run on.
func noDevice(err error) bool { return errors.Is(err, iket.ErrNoDevice) }
