package bot

import (
	"fmt"
	"time"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/journal"
	"github.com/agentforeman/foreman/protocol"
)

// core is the bot's deterministic part: every engine input goes through it.
// Inputs are applied to the engine at once and written to the journal in one
// transaction per batch (commit); only committed replies are handed out for
// sending, so nothing the room sees can be lost by a crash. Replies are
// numbered in the order the engine said them, which replaying the journal
// reproduces exactly: after a restart, a reply is sent again if and only if
// the room never confirmed it.
type core struct {
	eng    *coordinator.Engine
	engCfg coordinator.Config
	j      *journal.Journal // nil: no journal
	rec    *recorder        // nil: no recording

	produced  uint64         // replies numbered so far
	pending   []journal.Line // replies the room has not confirmed, in order
	outbox    journal.Outbox
	dirty     bool // outbox changed since it was last saved
	uncommit  []*journal.Event
	fresh     []journal.Line // replies of uncommitted events
	sinceSnap int
	snapEvery int

	lastMsg  string // id of the latest message handled
	lastMsgT time.Time

	observe func(at time.Time, heard *coordinator.Message, said []string) // metrics and the board
}

// openCore restores the engine from the journal: the latest snapshot, then
// every event after it, in order.
func openCore(engCfg coordinator.Config, j *journal.Journal, snapEvery int) (*core, error) {
	c := &core{engCfg: engCfg, j: j, snapEvery: snapEvery}
	var snap *journal.Snapshot
	if j != nil {
		var err error
		if snap, err = j.LoadSnapshot(); err != nil {
			return nil, err
		}
		o, err := j.LoadOutbox()
		if err != nil {
			return nil, err
		}
		c.outbox = *o
	}
	var err error
	if snap != nil {
		c.eng, err = coordinator.Restore(engCfg, snap.Engine)
		c.produced, c.lastMsg = snap.Produced, snap.LastMsg
		if snap.LastMsgT != 0 {
			c.lastMsgT = time.UnixMilli(snap.LastMsgT).UTC()
		}
		for _, l := range snap.Pending {
			if !c.outbox.Delivered(l.Seq) {
				c.pending = append(c.pending, l)
			}
		}
	} else {
		c.eng, err = coordinator.New(engCfg)
	}
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if j == nil {
		return c, nil
	}
	var after uint64
	if snap != nil {
		after = snap.Seq
	}
	err = j.Since(after, func(ev *journal.Event) error {
		c.number(c.run(ev))
		return nil
	})
	c.fresh = nil // all of it was committed before
	return c, err
}

// started reports whether the build has started (now, or before a restart).
func (c *core) started() bool {
	_, ok := c.eng.StartedAt()
	return ok
}

// apply applies one input: to the engine now, to the journal at the next
// commit.
func (c *core) apply(ev *journal.Event) {
	c.uncommit = append(c.uncommit, ev)
	c.number(c.run(ev))
}

// applyDue fires, one instant at a time, every timer due by now.
func (c *core) applyDue(now time.Time) {
	for {
		d, ok := c.eng.NextDeadline()
		if !ok || d.After(now) {
			return
		}
		c.apply(&journal.Event{Kind: journal.Tick, At: d.UnixMilli()})
	}
}

// commit writes the applied events to the journal, synced, and returns the
// replies they produced, ready to send. After an error the engine is ahead
// of the journal and the bot must stop: a restart recovers the last commit.
func (c *core) commit() ([]agentchat.Line, error) {
	if c.j != nil && len(c.uncommit) > 0 {
		var o *journal.Outbox
		if c.dirty { // the confirmations since the last commit ride along
			o = &c.outbox
		}
		if err := c.j.AppendWith(o, c.uncommit...); err != nil {
			return nil, fmt.Errorf("journal: %w", err)
		}
		c.dirty = false
	}
	c.sinceSnap += len(c.uncommit)
	c.uncommit = nil
	out := make([]agentchat.Line, len(c.fresh))
	for i, l := range c.fresh {
		out[i] = agentchat.Line{Seq: l.Seq, Text: l.Text}
	}
	c.fresh = nil
	if c.rec != nil {
		if err := c.rec.flush(); err != nil {
			return out, fmt.Errorf("recording: %w", err)
		}
	}
	if c.j != nil && c.snapEvery > 0 && c.sinceSnap >= c.snapEvery {
		if err := c.snapshot(); err != nil {
			return out, err
		}
	}
	return out, nil
}

// snapshot saves the engine's state and lets the journal drop the events
// it covers.
func (c *core) snapshot() error {
	if c.j == nil {
		return nil
	}
	s := &journal.Snapshot{Seq: c.j.Last(), Produced: c.produced, Engine: c.eng.Snapshot(),
		Pending: c.pending, LastMsg: c.lastMsg}
	if !c.lastMsgT.IsZero() {
		s.LastMsgT = c.lastMsgT.UnixMilli()
	}
	if err := c.j.SaveSnapshot(s); err != nil {
		return fmt.Errorf("journal snapshot: %w", err)
	}
	c.sinceSnap = 0
	return nil
}

// run hands one event to the engine and returns what it said. It is the only
// place events meet the engine, so a live run and a journal replay agree.
func (c *core) run(ev *journal.Event) []string {
	at := ev.Time()
	var out []string
	switch ev.Kind {
	case journal.Start:
		out = c.eng.Start(at)
		c.observeSaid(at, nil, out)
		if c.rec != nil {
			c.rec.said(at, out)
		}
	case journal.Message:
		m := coordinator.Message{ID: ev.ID, From: ev.From, Verified: ev.Verified, At: at, Content: ev.Content}
		if !c.eng.Accepts(m) {
			return nil
		}
		out = c.eng.Receive(m)
		now := c.eng.Now() // the room's time, or the clock if that is older
		if ev.ID != "" {
			c.lastMsg, c.lastMsgT = ev.ID, at
		}
		c.observeSaid(now, &m, out)
		if c.rec != nil {
			c.rec.heard(now, m.From, m.Content)
			c.rec.said(now, out)
		}
	case journal.Tick:
		at, out, _ = c.eng.Tick(at)
		c.observeSaid(at, nil, out)
		if c.rec != nil {
			c.rec.said(at, out)
		}
	case journal.Advance:
		out = c.eng.Advance(at)
		c.observeSaid(at, nil, out)
	case journal.Recover:
		from := c.eng.Now()
		c.eng.Recover(at)
		if c.rec != nil && at.After(from) {
			c.rec.downtime(from, at)
		}
	case journal.Reload:
		out = c.eng.Reload(at, ev.Components)
		c.observeSaid(at, nil, out)
		if c.rec != nil {
			c.rec.reload(at, ev.Components)
			c.rec.said(at, out)
		}
	}
	return out
}

func (c *core) observeSaid(at time.Time, heard *coordinator.Message, said []string) {
	if c.observe != nil && (heard != nil || len(said) > 0) {
		c.observe(at, heard, said)
	}
}

// number gives replies their sequence numbers and keeps them until the room
// confirms them.
func (c *core) number(lines []string) {
	for _, l := range lines {
		c.produced++
		line := journal.Line{Seq: c.produced, Text: l}
		c.fresh = append(c.fresh, line)
		if !c.outbox.Delivered(line.Seq) {
			c.pending = append(c.pending, line)
		}
	}
}

// confirm records that the room has the replies seqs. The record reaches
// the journal with the next commit, or saveOutbox when idle: should foreman
// die first, its own messages in the room's history confirm them again.
func (c *core) confirm(seqs []uint64, ts time.Time) {
	for _, s := range seqs {
		c.outbox.Confirm(s)
	}
	if ms := ts.UnixMilli(); ms > c.outbox.LastTS {
		c.outbox.LastTS = ms
	}
	kept := c.pending[:0]
	for _, l := range c.pending {
		if !c.outbox.Delivered(l.Seq) {
			kept = append(kept, l)
		}
	}
	c.pending = kept
	c.dirty = true
}

// saveOutbox saves the confirmations no commit has carried yet.
func (c *core) saveOutbox() error {
	if c.j == nil || !c.dirty {
		return nil
	}
	if err := c.j.SaveOutbox(&c.outbox); err != nil {
		return err
	}
	c.dirty = false
	return nil
}

// pendingLines are the replies still to send.
func (c *core) pendingLines() []agentchat.Line {
	out := make([]agentchat.Line, len(c.pending))
	for i, l := range c.pending {
		out[i] = agentchat.Line{Seq: l.Seq, Text: l.Text}
	}
	return out
}

// matchOwnHistory finds, in the room's replayed history, messages foreman
// sent before a restart whose echo it never saw: their lines are the
// oldest pending replies, in order. Those are confirmed, not sent again.
// Only messages after the latest confirmation are considered, so an old
// message that says the same words cannot confirm a new reply.
func (c *core) matchOwnHistory(history []agentchat.Message) (int, error) {
	var seqs []uint64
	var last time.Time
	next := 0
	for _, m := range history {
		if !m.Self || m.TS.UnixMilli() < c.outbox.LastTS {
			continue
		}
		for line := range protocol.Lines(m.Content) {
			if next < len(c.pending) && c.pending[next].Text == line {
				seqs = append(seqs, c.pending[next].Seq)
				next++
				last = m.TS
			}
		}
	}
	if len(seqs) == 0 {
		return 0, nil
	}
	c.confirm(seqs, last)
	return len(seqs), c.saveOutbox()
}
