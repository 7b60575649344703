// Package safe makes names and messages from captures and rules files fit
// to print: a capture is untrusted input, and a name may hold terminal
// escapes, line breaks or invalid UTF-8.
package safe

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Name returns s fit for a terminal table: control characters (terminal
// escapes among them), other non-printing runes and invalid UTF-8 are
// written as Go escapes (\x1b, \u200b).
func Name(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsPrint(r):
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}

// Text is [Name] for messages of several lines: each line is made safe and
// the line breaks are kept.
func Text(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Name(l)
	}
	return strings.Join(lines, "\n")
}
