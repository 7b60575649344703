//go:build !cgo

package cuda

import (
	"errors"
	"strings"
	"testing"
)

// TestNoCgo: in a build without cgo every entry point fails with an error
// that matches ErrNoDevice and says why.
func TestNoCgo(t *testing.T) {
	_, _, cerr := Compile("k.cu", nil, nil, nil, false)
	_, rerr := Retain(0)
	_, derr := DeviceCount()
	for i, err := range []error{Init(), LoadNVRTC(), cerr, rerr, derr} {
		if !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "without cgo") {
			t.Errorf("call %d: error %v, want one matching ErrNoDevice that names the build", i, err)
		}
	}
}
