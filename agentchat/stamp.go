package agentchat

import (
	"strconv"
	"strings"
)

// A stamp is the last line of a message a stamping client sends: who sent
// it (a tag naming the sender's run, such as "foreman shop/7f3a9c") and
// which of its numbered lines the message carries:
//
//	[foreman shop/7f3a9c #12-15,18]
//	[foreman shop/7f3a9c #12-15 sent again after a restart: may repeat]
//
// A room may rewrite a message's content (a stock server redacts what
// looks like a secret), so the stamp, not the content, is how the sender
// knows its own messages again after a restart, and how a reader can drop
// a line it has seen. It is chat to everyone else: no verb starts it.
type Stamp struct {
	Tag   string
	Seqs  []SeqRange
	Again bool // lines sent again that the room may already have
}

// SeqRange is the numbers From through To.
type SeqRange struct{ From, To uint64 }

const againNote = " sent again after a restart: may repeat"

// ValidTag reports whether tag can be stamped: printable, one line, none of
// the stamp's own marks.
func ValidTag(tag string) bool {
	if tag == "" || len(tag) > 100 {
		return false
	}
	for i := 0; i < len(tag); i++ {
		if c := tag[i]; c < 0x20 || c > 0x7e || c == '[' || c == ']' || c == '#' {
			return false
		}
	}
	return true
}

// String formats the stamp line.
func (s Stamp) String() string {
	var b strings.Builder
	b.WriteByte('[')
	b.WriteString(s.Tag)
	b.WriteString(" #")
	for i, r := range s.Seqs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(r.From, 10))
		if r.To != r.From {
			b.WriteByte('-')
			b.WriteString(strconv.FormatUint(r.To, 10))
		}
	}
	if s.Again {
		b.WriteString(againNote)
	}
	b.WriteByte(']')
	return b.String()
}

// Contains reports whether the stamp lists seq.
func (s Stamp) Contains(seq uint64) bool {
	for _, r := range s.Seqs {
		if r.From <= seq && seq <= r.To {
			return true
		}
	}
	return false
}

// stampOf numbers the lines of b.
func stampOf(tag string, b *batch) Stamp {
	st := Stamp{Tag: tag}
	for _, l := range b.lines {
		st.Again = st.Again || l.Resent
		if n := len(st.Seqs); n > 0 && st.Seqs[n-1].To+1 == l.Seq {
			st.Seqs[n-1].To = l.Seq
			continue
		}
		st.Seqs = append(st.Seqs, SeqRange{l.Seq, l.Seq})
	}
	return st
}

// ParseStamp reads the stamp at the end of a message's content, if it has
// one, and returns the content without it.
func ParseStamp(content string) (Stamp, string, bool) {
	rest, last := "", content
	if i := strings.LastIndexByte(content, '\n'); i >= 0 {
		rest, last = content[:i], content[i+1:]
	}
	last = strings.TrimRight(last, "\r")
	if !strings.HasPrefix(last, "[") || !strings.HasSuffix(last, "]") {
		return Stamp{}, content, false
	}
	body := last[1 : len(last)-1]
	var st Stamp
	if strings.HasSuffix(body, againNote) {
		st.Again = true
		body = strings.TrimSuffix(body, againNote)
	}
	i := strings.LastIndex(body, " #")
	if i <= 0 {
		return Stamp{}, content, false
	}
	st.Tag = body[:i]
	if !ValidTag(st.Tag) {
		return Stamp{}, content, false
	}
	for _, part := range strings.Split(body[i+2:], ",") {
		from, to, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseUint(from, 10, 64)
		if err != nil {
			return Stamp{}, content, false
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(to, 10, 64); err != nil || b < a {
				return Stamp{}, content, false
			}
		}
		st.Seqs = append(st.Seqs, SeqRange{a, b})
	}
	return st, rest, true
}
