package agentchat

import (
	"strings"
	"unicode/utf8"
)

// Line is one reply line. Seq is the caller's number for it, handed back in
// Delivered once the room has the message that carried it.
type Line struct {
	Seq  uint64
	Text string
}

// batch is the lines of one MSG.
type batch struct {
	lines   []Line
	content string
	cut     int // the length of a line cut to fit, if one was
}

func (b *batch) seqs() []uint64 {
	out := make([]uint64, len(b.lines))
	for i, l := range b.lines {
		out[i] = l.Seq
	}
	return out
}

// urgent lines jump the queue: a human must read an escalation or an error
// even when a long status reply is waiting ahead of it.
func urgent(text string) bool {
	word, _, _ := strings.Cut(strings.TrimSpace(text), " ")
	return strings.EqualFold(word, "ESCALATE") || strings.EqualFold(word, "ERROR")
}

// takeBatch takes from queued the lines of the next message: urgent lines
// first, then the rest, each group in its order, as many as fit in max bytes
// joined by newlines. It returns the batch and what stays queued, in the
// order it will go. A single line longer than max is cut at a character
// boundary: the room would refuse it whole, and one cut line beats a queue
// stuck forever.
func takeBatch(queued []Line, max int) (*batch, []Line) {
	if len(queued) == 0 {
		return nil, nil
	}
	ordered := make([]Line, 0, len(queued))
	for _, l := range queued {
		if urgent(l.Text) {
			ordered = append(ordered, l)
		}
	}
	for _, l := range queued {
		if !urgent(l.Text) {
			ordered = append(ordered, l)
		}
	}
	var b strings.Builder
	n, cutFrom := 0, 0
	for n < len(ordered) {
		text := ordered[n].Text
		size := len(text)
		if n > 0 {
			size++ // the newline before it
		}
		if b.Len()+size > max {
			if n > 0 {
				break
			}
			cutFrom = len(text)
			text = cut(text, max)
			ordered[n].Text = text
		}
		if n > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(text)
		n++
	}
	rest := ordered[n:]
	if len(rest) == 0 {
		rest = nil
	}
	return &batch{lines: ordered[:n:n], content: b.String(), cut: cutFrom}, rest
}

func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}
