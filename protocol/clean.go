package protocol

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds on what a reply echoes. A reply line is at most a few of these long.
const (
	MaxText = 300 // free text: notes, details, reasons, PR references
	MaxName = 100 // sender ids and build names
)

// CleanText makes s safe to echo inside one reply line: invalid UTF-8 becomes
// U+FFFD, every character that could break or disguise a line (control
// characters, Unicode line and paragraph separators, bidirectional overrides)
// becomes a space, and the result is cut to at most max bytes on a character
// boundary, with "..." marking the cut. Clean input is returned as is, without
// allocating.
func CleanText(s string, max int) string {
	if isPlainASCII(s) && len(s) <= max {
		return s
	}
	var b strings.Builder
	b.Grow(min(len(s), max+utf8.UTFMax))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			r = utf8.RuneError
		case breaksLine(r):
			r = ' '
		}
		b.WriteRune(r)
		if b.Len() > max+utf8.UTFMax {
			break // enough to know it must be cut
		}
	}
	return cut(b.String(), max)
}

// CleanWord is CleanText for a value that must stay one word (a sender id, a
// build name): spaces become underscores and an empty value becomes "-".
func CleanWord(s string, max int) string {
	s = CleanText(s, max)
	if s == "" {
		return "-"
	}
	if strings.IndexByte(s, ' ') >= 0 {
		s = strings.ReplaceAll(s, " ", "_")
	}
	return s
}

// breaksLine reports whether r could end a line or disguise one in a chat
// client: C0 and C1 controls (which include CR, LF, NEL and TAB), DEL, the
// Unicode line and paragraph separators, and bidirectional formatting
// characters, which can make one line render as if it said something else.
func breaksLine(r rune) bool {
	switch {
	case unicode.IsControl(r):
		return true
	case r == '\u2028' || r == '\u2029':
		return true
	case r >= '\u202A' && r <= '\u202E', r >= '\u2066' && r <= '\u2069', r == '\u200E', r == '\u200F', r == '\u061C':
		return true
	}
	return false
}

// cut shortens s to at most max bytes on a character boundary.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const mark = "..."
	if max <= len(mark) {
		return mark[:max]
	}
	end := max - len(mark)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return strings.TrimRight(s[:end], " ") + mark
}

func isPlainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}
