package trace_test

import (
	"strings"
	"testing"

	"github.com/iket-trace/iket/trace"
)

func TestParseNameTableErrors(t *testing.T) {
	tests := []struct {
		name, table, want string
	}{
		{"header", "iket-names 2\nROLE p\n", `first line "iket-names 2"`},
		{"kind", "iket-names 1\nSLICE p\n", `line 2: kind "SLICE"`},
		{"no text", "iket-names 1\nRANGE\n", `line 2 "RANGE": want "KIND name"`},
		{"repeated", "iket-names 1\nROLE p\nRANGE load\nMARK load\n", `line 4: "load" repeats line 3`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := trace.ParseNameTable(tt.table)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseNameTable: %v, want an error with %q", err, tt.want)
			}
		})
	}
	names, err := trace.ParseNameTable("iket-names 1\nROLE p\nRANGE load\n\x00\x00")
	if err != nil || len(names) != 2 || names[1].Text != "load" || names[1].ID != 2 {
		t.Errorf("ParseNameTable = %+v, %v", names, err)
	}
}
