package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/iket-trace/iket/trace"
)

func TestClearEarlierRun(t *testing.T) {
	tests := []struct {
		name  string
		files []string // paths under out to create ("x/" a folder; a trace.iket is a capture's start, "trace.iket!" other bytes)
		link  string   // a symbolic link under out, if any
		dirs  []string // this run's folders, relative to out ("." is out)
		left  []string // what must remain
		said  string   // a line of the output, "" for none
	}{
		{name: "one process after several: their folders and the merged trace go",
			files: []string{"pid1-gpu0/trace.iket", "pid1-gpu0/report.html", "pid2-gpu1/trace.iket", "merged.pftrace", "other/trace.iket", "notes.txt", "pidx-gpu0/"},
			dirs:  []string{"."},
			left:  []string{"notes.txt", "other", "other/trace.iket", "pidx-gpu0"},
			said:  "removed what an earlier run left"},
		{name: "several after one: out's own outputs, other runs' folders and the merged trace (written after) go",
			files: []string{"trace.iket", "report.html", "latency.json", "pid5-gpu0/trace.iket", "pid1-gpu0/trace.pftrace", "merged.pftrace"},
			dirs:  []string{"pid5-gpu0", "pid6-gpu0"},
			left:  []string{"pid5-gpu0", "pid5-gpu0/trace.iket"},
			said:  "pid1-gpu0"},
		{name: "a folder holding a file iket does not write stays",
			files: []string{"pid1-gpu0/trace.iket", "pid1-gpu0/mine.txt"},
			dirs:  []string{"."},
			left:  []string{"pid1-gpu0", "pid1-gpu0/mine.txt", "pid1-gpu0/trace.iket"},
			said:  "holds mine.txt, which iket does not write: left as it is"},
		{name: "nothing earlier: nothing said",
			files: []string{"trace.iket"},
			dirs:  []string{"."},
			left:  []string{"trace.iket"}},
		{name: "beside several, out's own files stay when its trace.iket is not a capture",
			files: []string{"trace.iket!", "report.html"},
			dirs:  []string{"pid1-gpu0", "pid2-gpu0"},
			left:  []string{"report.html", "trace.iket"}},
		{name: "a link where an output was is left, with a warning",
			link: "merged.pftrace",
			dirs: []string{"."},
			left: []string{"merged.pftrace"},
			said: "not a regular file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			for _, f := range tc.files {
				p := filepath.Join(out, f)
				if strings.HasSuffix(f, "/") {
					if err := os.MkdirAll(p, 0o755); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				data := "x"
				if filepath.Base(f) == captureFile {
					data = trace.Magic
				}
				p = strings.TrimSuffix(p, "!")
				if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.link != "" {
				if err := os.Symlink(filepath.Join(out, "elsewhere"), filepath.Join(out, tc.link)); err != nil {
					t.Fatal(err)
				}
			}
			dirs := make([]string, len(tc.dirs))
			for i, d := range tc.dirs {
				dirs[i] = filepath.Join(out, d)
			}
			var w strings.Builder
			clearEarlierRun(out, dirs, &w)
			var left []string
			filepath.WalkDir(out, func(p string, _ os.DirEntry, err error) error {
				if err == nil && p != out {
					r, _ := filepath.Rel(out, p)
					left = append(left, r)
				}
				return nil
			})
			sort.Strings(left)
			if strings.Join(left, " ") != strings.Join(tc.left, " ") {
				t.Errorf("left %v, want %v", left, tc.left)
			}
			if tc.said == "" && w.Len() != 0 {
				t.Errorf("said %q, want nothing", w.String())
			}
			if tc.said != "" && !strings.Contains(w.String(), tc.said) {
				t.Errorf("said %q, want %q in it", w.String(), tc.said)
			}
		})
	}
}
