package perfetto

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/iket-trace/iket/perfetto/internal/pb"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestGolden compares the parsed trace of the small test launch with
// testdata/small.txtpb (prototext; regenerate with -update and review the
// diff).
func TestGolden(t *testing.T) {
	got := &pb.Trace{Packet: readPackets(t, writeLaunch(t, Options{Flows: true, Counters: true, SummaryBins: 8}, testMeta(), testWarps()))}
	path := filepath.Join("testdata", "small.txtpb")
	if *update {
		b, err := prototext.MarshalOptions{Multiline: true}.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create): %v", err)
	}
	want := &pb.Trace{}
	if err := prototext.Unmarshal(b, want); err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("trace differs from %s (-want +got):\n%s", path, diff)
	}
}
