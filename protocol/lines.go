package protocol

import (
	"iter"
	"strings"
)

// Lines yields the lines of a chat message's content. CRLF, LF and a lone CR
// all end a line: a CR left inside a line could make it render as two.
func Lines(content string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for len(content) > 0 {
			i := strings.IndexAny(content, "\r\n")
			if i < 0 {
				yield(content)
				return
			}
			line := content[:i]
			if content[i] == '\r' && i+1 < len(content) && content[i+1] == '\n' {
				i++
			}
			content = content[i+1:]
			if !yield(line) {
				return
			}
		}
	}
}

// undecorate strips what agents and humans put around a protocol line
// (contract section 1): surrounding space, `**` and `__` emphasis, backticks,
// a leading list bullet and a leading mention of the bot. It reports false
// for a quoted line, which is chat whatever it quotes.
func undecorate(line string, mentions []string) (string, bool) {
	s := strings.TrimSpace(line)
	if strings.HasPrefix(s, ">") {
		return "", false
	}
	s = stripBullet(s)
	if isDecorated(s) {
		// Removing one mark can join two halves into another ("*`*"), so
		// strip until nothing is left to strip.
		for isDecorated(s) {
			s = emphasis.Replace(s)
		}
		s = strings.TrimSpace(s)
		if strings.HasPrefix(s, ">") {
			return "", false
		}
		s = stripBullet(s)
	}
	return stripMention(s, mentions), true
}

var emphasis = strings.NewReplacer("**", "", "__", "", "`", "")

func isDecorated(s string) bool {
	return strings.Contains(s, "**") || strings.Contains(s, "__") || strings.IndexByte(s, '`') >= 0
}

// stripBullet removes one leading "- ", "* ", "+ ", "1. " or "1) ".
func stripBullet(s string) string {
	if len(s) >= 2 && (s[0] == '-' || s[0] == '*' || s[0] == '+') && isSpace(s[1]) {
		return strings.TrimSpace(s[2:])
	}
	i := 0
	for i < len(s) && i < 9 && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	if i > 0 && i+1 < len(s) && (s[i] == '.' || s[i] == ')') && isSpace(s[i+1]) {
		return strings.TrimSpace(s[i+2:])
	}
	return s
}

// stripMention removes a leading "@name", "@name:" or "@name," when name is
// one the bot answers to. Mentions are compared ignoring case, as chat
// clients complete them loosely.
func stripMention(s string, mentions []string) string {
	if len(s) == 0 || s[0] != '@' {
		return s
	}
	end := strings.IndexAny(s, " \t:,")
	if end < 0 {
		return s // a mention alone is not a command
	}
	word := s[:end]
	for _, m := range mentions {
		if strings.EqualFold(word, m) {
			return strings.TrimLeft(s[end:], " \t:,")
		}
	}
	return s
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' }

// scanner splits the arguments of a line into words, keeping the rest of the
// line available as a free-text tail.
type scanner struct{ rest string }

// word returns the next space-separated word, or "" at the end of the line.
// It is written as plain loops: this is the hottest code in foreman, and the
// strings functions that take a cutset build a lookup table per call.
func (s *scanner) word() string {
	r := s.rest
	start := 0
	for start < len(r) && isSpace(r[start]) {
		start++
	}
	end := start
	for end < len(r) && !isSpace(r[end]) {
		end++
	}
	s.rest = r[end:]
	return r[start:end]
}

// tail returns what is left of the line, trimmed.
func (s *scanner) tail() string {
	t := strings.TrimSpace(s.rest)
	s.rest = ""
	return t
}
