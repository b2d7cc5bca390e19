package agentchat

import (
	"strings"
	"unicode/utf8"
)

// Line is one line to send. Seq is the caller's number for it, handed back
// in Delivered once the room has the message that carried it.
type Line struct {
	Seq  uint64
	Text string
	// Group ties lines that belong together (the replies to one event):
	// they go out in one message, in order, unless they do not fit in one.
	Group uint64
	// Urgent groups (a line a human must read soon) may go out before
	// older ones; a group is never reordered inside.
	Urgent bool
	// Resent lines are sent again without proof the room lacks them: the
	// message's stamp says they may repeat.
	Resent bool
	// Plain lines are not numbered replies but notices (foreman refusing to
	// coordinate, or a reload it refused): each goes out alone, in a message
	// without a stamp, so that nobody reads a number into it. Its Seq is
	// handed back in Delivered all the same.
	Plain bool
}

// batch is the lines of one MSG.
type batch struct {
	lines   []Line
	content string
	stamp   Stamp // zero when not stamped
	cut     int   // the length of a line cut to fit, if one was
	plain   bool  // one Plain line: never stamped
}

func (b *batch) seqs() []uint64 {
	out := make([]uint64, len(b.lines))
	for i, l := range b.lines {
		out[i] = l.Seq
	}
	return out
}

// sendQueue holds the lines waiting to be sent, in groups. Urgent groups
// wait in their own queue so that taking one first costs nothing however
// long the other is.
type sendQueue struct {
	urgent, normal [][]Line
	n              int // lines in both
}

// push appends lines, split into their groups.
func (q *sendQueue) push(lines []Line) {
	for len(lines) > 0 {
		end := 1
		urgent := lines[0].Urgent
		for end < len(lines) && lines[end].Group == lines[0].Group {
			urgent = urgent || lines[end].Urgent
			end++
		}
		g := lines[:end:end]
		if urgent {
			q.urgent = append(q.urgent, g)
		} else {
			q.normal = append(q.normal, g)
		}
		q.n += len(g)
		lines = lines[end:]
	}
}

// pushFront puts the lines of an unconfirmed batch back in front, in order.
func (q *sendQueue) pushFront(lines []Line) {
	var back sendQueue
	back.push(lines)
	q.urgent = append(back.urgent, q.urgent...)
	q.normal = append(back.normal, q.normal...)
	q.n += back.n
}

func (q *sendQueue) len() int { return q.n }

// take removes the lines of the next message: whole groups, urgent ones
// first, as many as fit in max bytes of content joined by newlines, with
// room kept for the stamp. A group too big for one message is split at a
// line; a single line too long for any message is cut at a character
// boundary (the room would refuse it whole, and one cut line beats a queue
// stuck forever).
func (q *sendQueue) take(max, reserve int) *batch {
	if q.n == 0 {
		return nil
	}
	limit := max - reserve
	b := &batch{}
	runs := 0 // runs of consecutive numbers, which the stamp lists
	var sb strings.Builder
	size := func(text string) int {
		if len(b.lines) == 0 {
			return jsonSize(text)
		}
		return 2 + jsonSize(text) // "\n" is two bytes in the frame
	}
	for _, list := range []*[][]Line{&q.urgent, &q.normal} {
		for len(*list) > 0 {
			g := (*list)[0]
			if g[0].Plain {
				if len(b.lines) > 0 { // it goes alone, next
					b.content = sb.String()
					return b
				}
				l := g[0]
				if jsonSize(l.Text) > max {
					b.cut = len(l.Text)
					l.Text = cutToFit(l.Text, max)
				}
				b.lines, b.content, b.plain = []Line{l}, l.Text, true
				q.n--
				if len(g) > 1 {
					(*list)[0] = g[1:]
				} else {
					*list = (*list)[1:]
				}
				return b
			}
			taken := 0
			for taken < len(g) {
				l := g[taken]
				if n := size(l.Text); sb.Len()+n > limit {
					if len(b.lines) > 0 {
						break
					}
					b.cut = len(l.Text)
					l.Text = cutToFit(l.Text, limit)
				}
				if n := len(b.lines); n == 0 || b.lines[n-1].Seq+1 != l.Seq {
					if runs == maxRuns {
						break
					}
					runs++
				}
				if len(b.lines) > 0 {
					sb.WriteByte('\n')
				}
				sb.WriteString(l.Text)
				b.lines = append(b.lines, l)
				taken++
			}
			q.n -= taken
			if taken < len(g) {
				(*list)[0] = g[taken:]
				b.content = sb.String()
				return b
			}
			*list = (*list)[1:]
		}
	}
	b.content = sb.String()
	return b
}

// maxRuns bounds the runs of numbers one message carries, and so its stamp.
const maxRuns = 64

// jsonSize is how many bytes text takes inside a JSON string: the room's
// size limit is on the frame, where quotes, backslashes and control
// characters are escaped.
func jsonSize(text string) int {
	n := len(text)
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '"' || c == '\\':
			n++
		case c < 0x20:
			n += 5 // \u00XX
		}
	}
	return n
}

// cutToFit shortens s so that its JSON form fits in max bytes, on a
// character boundary.
func cutToFit(s string, max int) string {
	for len(s) > 0 && jsonSize(s) > max {
		end := min(len(s)-1, max)
		for end > 0 && !utf8.RuneStart(s[end]) {
			end--
		}
		s = s[:end]
	}
	return s
}
