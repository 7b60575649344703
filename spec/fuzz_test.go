package spec

import (
	"os"
	"strings"
	"testing"
)

// FuzzParse checks that any text parses into a spec whose buffers fit the
// limits, or fails with an error naming the spec, and never panics.
func FuzzParse(f *testing.F) {
	example, err := os.ReadFile("testdata/scale.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(example))
	f.Add(okSpec)
	f.Add("kernel: k.cu\nentry: k\ngrid: [1, 2, 3]\nblock: 32\nargs: [{name: n, scalar: {dtype: i32, value: 7}}]\n")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse(strings.NewReader(text), "fuzz.yaml")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml: ") {
				t.Fatalf("error %q does not name the spec", err)
			}
			return
		}
		if len(s.Args) == 0 {
			t.Fatalf("spec with no args parsed: %+v", s)
		}
		for i, a := range s.Args {
			if (a.Buffer == nil) == (a.Scalar == nil) {
				t.Fatalf("args[%d]: want a buffer or a scalar, got %+v", i, a)
			}
			if a.Buffer != nil && (a.Buffer.Bytes() == 0 || a.Buffer.Bytes() > MaxBufferBytes) {
				t.Fatalf("args[%d]: buffer of %d bytes parsed", i, a.Buffer.Bytes())
			}
		}
	})
}
