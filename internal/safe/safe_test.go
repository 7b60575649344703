package safe

import "testing"

func TestName(t *testing.T) {
	for in, want := range map[string]string{
		"compute":         "compute",
		"wait\x1b[31mred": `wait\x1b[31mred`,
		"a\nb":            `a\x0ab`,
		"zero\u200bwidth": `zero\u200bwidth`,
		"bad\xffutf8":     `bad\xffutf8`,
		"ünïcode":         "ünïcode",
	} {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Text("a\x1b\nb"); got != "a\\x1b\nb" {
		t.Errorf("Text kept %q", got)
	}
}
