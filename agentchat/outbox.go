package agentchat

// Outbox is the client's send queue on its own, without a connection: the
// same grouping, urgency, size limit and stamps as Client, for programs
// that must batch exactly as the client does on a clock of their own (the
// fault simulator, internal/tooling/vopr). It is not safe for concurrent
// use.
type Outbox struct{ q sendQueue }

// Batch is the lines of one message, and the message's content as sent
// (with the stamp as its last line when stamped).
type Batch struct {
	Lines   []Line
	Content string
	Stamp   Stamp // zero when not stamped
}

// Push queues lines, in their groups.
func (o *Outbox) Push(lines ...Line) { o.q.push(lines) }

// PushFront puts the lines of a message that did not reach the room back
// in front, in order.
func (o *Outbox) PushFront(lines []Line) { o.q.pushFront(lines) }

// Len is how many lines wait.
func (o *Outbox) Len() int { return o.q.len() }

// Take removes the next message's lines: whole groups, urgent ones first,
// as many as fit in maxMessage bytes with room for the stamp of tag ("" for
// none). False when nothing waits.
func (o *Outbox) Take(maxMessage int, tag string) (Batch, bool) {
	b := takeBatch(&o.q, maxMessage, tag)
	if b == nil {
		return Batch{}, false
	}
	return Batch{Lines: b.lines, Content: b.content, Stamp: b.stamp}, true
}

// Seqs are the numbers of the batch's lines.
func (b Batch) Seqs() []uint64 {
	out := make([]uint64, len(b.Lines))
	for i, l := range b.Lines {
		out[i] = l.Seq
	}
	return out
}

// Is reports whether m is the room's copy of the batch, as the client
// tells: by the stamp when stamped, else by the content.
func (b Batch) Is(m Message) bool {
	return (&batch{lines: b.Lines, content: b.Content, stamp: b.Stamp}).is(m)
}

// takeBatch takes the next batch from q, stamped if tag is set.
func takeBatch(q *sendQueue, maxMessage int, tag string) *batch {
	b := q.take(maxMessage, stampRoom(tag))
	if b == nil {
		return nil
	}
	if tag != "" && !b.plain { // a notice is never read as numbered replies
		b.stamp = stampOf(tag, b)
		b.content += "\n" + b.stamp.String()
	}
	return b
}
