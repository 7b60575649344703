//go:build cgo

package iket

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/iket-trace/iket/trace"
)

// nvmlDevice reads a GPU's conditions through NVML (go-nvml dlopens
// libnvidia-ml.so.1). NVML is optional: without it conditions are missing.
type nvmlDevice struct {
	h nvml.Device
}

// openNVML initialises NVML (reference-counted by go-nvml) and finds the
// device by its CUDA UUID.
func openNVML(uuid string) (*nvmlDevice, error) {
	if uuid == "" {
		return nil, fmt.Errorf("open NVML: the device has no UUID to match")
	}
	if r := nvml.Init(); r != nvml.SUCCESS {
		return nil, fmt.Errorf("open NVML: init: %v", nvml.ErrorString(r))
	}
	h, r := nvml.DeviceGetHandleByUUID(uuid)
	if r != nvml.SUCCESS {
		nvml.Shutdown()
		return nil, fmt.Errorf("open NVML: device %s: %v", uuid, nvml.ErrorString(r))
	}
	return &nvmlDevice{h: h}, nil
}

func (n *nvmlDevice) close() { nvml.Shutdown() }

// static fills the driver version and the maximum SM clock.
func (n *nvmlDevice) static(info *trace.Device) {
	if v, r := nvml.SystemGetDriverVersion(); r == nvml.SUCCESS {
		info.Driver = v
	}
	if v, r := n.h.GetMaxClockInfo(nvml.CLOCK_SM); r == nvml.SUCCESS && v > 0 {
		info.MaxSMClockMHz = v
	}
}

// throttleNames names the NVML clock-event reason bits.
var throttleNames = []struct {
	bit  uint64
	name string
}{
	{nvml.ClocksEventReasonGpuIdle, "gpu_idle"},
	{nvml.ClocksEventReasonApplicationsClocksSetting, "applications_clocks_setting"},
	{nvml.ClocksEventReasonSwPowerCap, "sw_power_cap"},
	{nvml.ClocksThrottleReasonHwSlowdown, "hw_slowdown"},
	{nvml.ClocksEventReasonSyncBoost, "sync_boost"},
	{nvml.ClocksEventReasonSwThermalSlowdown, "sw_thermal_slowdown"},
	{nvml.ClocksThrottleReasonHwThermalSlowdown, "hw_thermal_slowdown"},
	{nvml.ClocksThrottleReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
	{nvml.ClocksEventReasonDisplayClockSetting, "display_clock_setting"},
}

// throttleReasons turns a reason mask into names; unknown bits are named by
// their value.
func throttleReasons(mask uint64) []string {
	var out []string
	for _, t := range throttleNames {
		if mask&t.bit != 0 {
			out = append(out, t.name)
			mask &^= t.bit
		}
	}
	for b := uint64(1); mask != 0; b <<= 1 {
		if mask&b != 0 {
			out = append(out, fmt.Sprintf("reason_0x%x", b))
			mask &^= b
		}
	}
	return out
}

func (n *nvmlDevice) conditions() *trace.Conditions {
	c := &trace.Conditions{}
	if v, r := n.h.GetClockInfo(nvml.CLOCK_SM); r == nvml.SUCCESS {
		c.SMClockMHz = v
	}
	if v, r := n.h.GetClockInfo(nvml.CLOCK_MEM); r == nvml.SUCCESS {
		c.MemClockMHz = v
	}
	if v, r := n.h.GetTemperature(nvml.TEMPERATURE_GPU); r == nvml.SUCCESS {
		c.TemperatureC = v
	}
	if v, r := n.h.GetPowerUsage(); r == nvml.SUCCESS {
		c.PowerW = float64(v) / 1000
	}
	if v, r := n.h.GetEnforcedPowerLimit(); r == nvml.SUCCESS {
		c.PowerLimitW = float64(v) / 1000
	}
	if v, r := n.h.GetCurrentClocksEventReasons(); r == nvml.SUCCESS {
		c.ThrottleReasons = throttleReasons(v)
	} else if v, r := n.h.GetCurrentClocksThrottleReasons(); r == nvml.SUCCESS {
		c.ThrottleReasons = throttleReasons(v)
	}
	return c
}

// ReadGPUs reads every GPU NVML sees: its driver version, maximum SM clock
// and conditions now, by CUDA UUID ("GPU-..."). It is for a process that
// does not hold the GPUs itself (`iket run -- CMD` reads them before and
// after the program). NVML missing is an error; a reading that fails
// leaves its field zero.
func ReadGPUs() (map[string]GPUReading, error) {
	if r := nvml.Init(); r != nvml.SUCCESS {
		return nil, fmt.Errorf("read GPUs: NVML init: %v", nvml.ErrorString(r))
	}
	defer nvml.Shutdown()
	n, r := nvml.DeviceGetCount()
	if r != nvml.SUCCESS {
		return nil, fmt.Errorf("read GPUs: %v", nvml.ErrorString(r))
	}
	out := map[string]GPUReading{}
	for i := 0; i < n; i++ {
		h, r := nvml.DeviceGetHandleByIndex(i)
		if r != nvml.SUCCESS {
			continue
		}
		uuid, r := h.GetUUID()
		if r != nvml.SUCCESS {
			continue
		}
		d := &nvmlDevice{h: h}
		var info trace.Device
		d.static(&info)
		out[uuid] = GPUReading{Driver: info.Driver, MaxSMClockMHz: info.MaxSMClockMHz, Conditions: d.conditions()}
	}
	return out, nil
}
