package perfetto

import (
	"bytes"
	"strings"
	"testing"

	"github.com/iket-trace/iket/internal/bundled"
	"github.com/iket-trace/iket/trace"
)

// TestExportLeavesOutDivergedWarps: the example application's capture has
// four producer warps whose lanes recorded different numbers of events;
// they get no track, and the launch's problems name each.
func TestExportLeavesOutDivergedWarps(t *testing.T) {
	raw, err := bundled.Capture(bundled.AppCppName)
	if err != nil {
		t.Fatal(err)
	}
	c, err := trace.Read(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := ExportCapture(&out, c, Options{}); err != nil {
		t.Fatalf("export: %v", err)
	}
	m := resolve(t, readPackets(t, out.Bytes()))
	leftOut, producerTracks, consumerTracks := 0, 0, 0
	for _, evs := range m.events {
		for _, e := range evs {
			if d, _ := e.args["detail"].(string); e.name == "problem" && strings.Contains(d, "left out: its lanes recorded different numbers of events") {
				leftOut++
			}
		}
	}
	for _, td := range m.tracks {
		if strings.HasSuffix(td.GetName(), "· producer") {
			producerTracks++
		}
		if strings.HasSuffix(td.GetName(), "· consumer") {
			consumerTracks++
		}
	}
	if leftOut != 4 || producerTracks != 0 || consumerTracks != 8 {
		t.Errorf("%d warps named as left out, %d producer and %d consumer tracks; want 4, 0 and 8", leftOut, producerTracks, consumerTracks)
	}
}
