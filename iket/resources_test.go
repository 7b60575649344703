package iket

import (
	"os"
	"testing"
)

// testdata/warp_roles_sm90.cubin: nvcc -cubin -arch=sm_90 -O3 -std=c++17
// -I kernels/include -DIKET_ENABLE=1 kernels/examples/warp_roles.cu (CUDA
// 11.8). `cuobjdump -sass` lists its warp_roles at /*0000*/ to /*1170*/: 280
// instructions.
func TestSASSInstructions(t *testing.T) {
	cubin, err := os.ReadFile("testdata/warp_roles_sm90.cubin")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		image  []byte
		kernel string
		want   int
	}{
		{cubin, "warp_roles", 280},
		{cubin, "no_such_kernel", 0},
		{[]byte(".version 8.0\n.target sm_90\n"), "warp_roles", 0}, // PTX
		{nil, "warp_roles", 0},
	} {
		if got := SASSInstructions(tc.image, tc.kernel); got != tc.want {
			t.Errorf("SASSInstructions(%d bytes, %q) = %d, want %d", len(tc.image), tc.kernel, got, tc.want)
		}
	}
	// Damaged images: never a panic, never a read outside the image.
	for n := 0; n < len(cubin); n += 61 {
		SASSInstructions(cubin[:n], "warp_roles")
	}
	for i := 0; i < 64; i++ {
		b := append([]byte{}, cubin...)
		b[0x28+i%24] ^= 0xff
		SASSInstructions(b, "warp_roles")
	}
}
