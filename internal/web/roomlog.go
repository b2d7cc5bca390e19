package web

import (
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// Entry is one line of the room log on the board.
type Entry struct {
	Seq  uint64    `json:"seq"` // rises by one per line, so a client can ask for what it has not seen
	At   time.Time `json:"at"`
	From string    `json:"from,omitempty"` // the sender; empty when foreman said it
	Said bool      `json:"said,omitempty"` // foreman said it
	Text string    `json:"text"`
}

// maxEntryText bounds one logged line: a chat message may be a megabyte,
// and the board shows the last few hundred lines to every viewer.
const maxEntryText = 500

// roomLog keeps the latest lines in a ring. It is not safe for concurrent
// use: the server's mutex guards it.
type roomLog struct {
	ring []Entry
	seq  uint64 // of the latest entry; 0 when empty
}

func newRoomLog(size int) *roomLog { return &roomLog{ring: make([]Entry, size)} }

func (l *roomLog) add(at time.Time, from string, said bool, text string) {
	l.seq++
	l.ring[int((l.seq-1)%uint64(len(l.ring)))] = Entry{
		Seq: l.seq, At: at, From: from, Said: said,
		Text: protocol.CleanText(text, maxEntryText),
	}
}

// since returns the entries after seq that the ring still holds, oldest first.
func (l *roomLog) since(seq uint64) []Entry {
	oldest := uint64(1)
	if n := uint64(len(l.ring)); l.seq > n {
		oldest = l.seq - n + 1
	}
	first := max(seq+1, oldest)
	if first > l.seq {
		return nil
	}
	out := make([]Entry, 0, l.seq-first+1)
	for s := first; s <= l.seq; s++ {
		out = append(out, l.ring[int((s-1)%uint64(len(l.ring)))])
	}
	return out
}
