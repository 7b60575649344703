//go:build !cgo

package iket

import (
	"errors"

	"github.com/iket-trace/iket/trace"
)

// nvmlDevice is NVML's view of a GPU; go-nvml needs cgo, so a build without
// it has none and devices record no conditions.
type nvmlDevice struct{}

var errNoNVML = errors.New("open NVML: this iket was built without cgo")

func openNVML(uuid string) (*nvmlDevice, error) { return nil, errNoNVML }

func (n *nvmlDevice) close() {}

func (n *nvmlDevice) static(info *trace.Device) {}

func (n *nvmlDevice) conditions() *trace.Conditions { return nil }

// ReadGPUs needs NVML, which needs cgo.
func ReadGPUs() (map[string]GPUReading, error) { return nil, errNoNVML }
