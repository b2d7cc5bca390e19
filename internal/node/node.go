// Package node runs the coordinator engine for a shell: it is the one
// driver of coordinator.Step, for the live bot and for transcript replays
// alike. It numbers the replies, keeps those the room has not confirmed,
// and, after etcd's raft, hands the shell what to persist and what to send
// as a Ready, reading its log back from a Storage when it opens.
package node

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/agentforeman/foreman/coordinator"
)

// DefaultSnapshotEvery is the least number of entries between snapshots: enough
// that snapshots cost little, few enough that recovery replays little.
const DefaultSnapshotEvery = 1000

// Config configures a Node. Only Engine is required.
type Config struct {
	Engine        coordinator.Config
	Storage       Storage // nil: a MemoryStorage
	SnapshotEvery int     // entries between snapshots; 0: snapshotEvery's choice; negative: never
	// Observe, if set, sees every event the engine handles once the node is
	// open, with what the engine said (for recordings, metrics, the board).
	Observe func(ev *coordinator.Event, said []coordinator.Reply)
}

// Node is the engine with its log. It is not safe for concurrent use.
type Node struct {
	cfg Config
	st  Storage
	eng *coordinator.Engine

	index      uint64 // the latest entry's
	produced   uint64 // replies numbered so far
	box        outbox
	lastMsg    string
	lastMsgAt  time.Time
	lastEcho   Echo
	recovering bool

	entries   []Entry // applied, not yet handed out
	fresh     []Line  // replies not yet handed out
	sinceSnap int
}

// Ready is what the shell must do after a step: persist Entries, then send
// Messages (never before: a crash in between would lose what the room was
// told), then save Snapshot if there is one (it may go in the background).
type Ready struct {
	Entries  []Entry
	Messages []Line
	Snapshot *Snapshot
}

// Open restores the node from its storage: the latest snapshot, then every
// entry after it, run through the engine again in order.
func Open(cfg Config) (*Node, error) {
	if cfg.Storage == nil {
		cfg.Storage = NewMemoryStorage()
	}
	if cfg.SnapshotEvery == 0 {
		cfg.SnapshotEvery = snapshotEvery(len(cfg.Engine.Components))
	}
	n := &Node{cfg: cfg, st: cfg.Storage, box: newOutbox()}
	snap, err := n.st.Snapshot()
	if err != nil {
		return nil, err
	}
	if snap != nil {
		if err := n.restore(snap); err != nil {
			return nil, err
		}
	}
	n.recovering = true
	err = n.st.Entries(n.index, func(e Entry) error {
		if e.Index != n.index+1 {
			return fmt.Errorf("journal: entry %d follows entry %d", e.Index, n.index)
		}
		if n.eng == nil {
			if err := n.create(e); err != nil {
				return err
			}
		}
		n.index = e.Index
		n.run(e)
		return nil
	})
	n.recovering = false
	if err != nil {
		return nil, err
	}
	if n.eng == nil {
		if err := n.create(Entry{}); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// create makes the engine a log without a snapshot starts from. The build's
// start records the components and roles it started with: a log replays
// with those, whatever the configuration says now (a restart after the
// configuration changed applies the change afterwards, as a reload).
func (n *Node) create(first Entry) error {
	cfg := n.cfg.Engine
	if ev := first.Event; ev != nil && ev.Kind == coordinator.KindStart {
		if ev.Components != nil {
			cfg.Components = ev.Components
		}
		if ev.Roles != nil {
			cfg.Roles = *ev.Roles
		}
	}
	eng, err := coordinator.New(cfg)
	if err != nil {
		return err
	}
	n.eng = eng
	return nil
}

func (n *Node) restore(s *Snapshot) error {
	eng, err := coordinator.Restore(n.cfg.Engine, s.Engine)
	if err != nil {
		return fmt.Errorf("journal snapshot: %w", err)
	}
	n.eng, n.index, n.produced = eng, s.Index, s.Produced
	n.box.done = s.Confirmed
	for _, l := range s.Unconfirmed {
		n.box.add(l)
	}
	n.lastMsg, n.lastMsgAt, n.lastEcho = s.LastMsg, s.LastMsgAt, s.LastEcho
	return nil
}

// Engine is the engine, for reading only: View, NextDeadline, Now. Every
// change goes through the node.
func (n *Node) Engine() *coordinator.Engine { return n.eng }

// Started reports whether the build has started, now or before a restart.
func (n *Node) Started() bool {
	_, ok := n.eng.StartedAt()
	return ok
}

// Step applies one event. A message the engine would not handle (its own,
// a notice, one already handled) is left out of the log; Step reports
// whether the event was taken.
func (n *Node) Step(ev coordinator.Event) bool {
	if ev.Kind == coordinator.KindMessage && !n.eng.Accepts(ev.Msg) {
		return false
	}
	n.index++
	e := Entry{Index: n.index, Event: &ev}
	n.entries = append(n.entries, e)
	n.run(e)
	return true
}

// Hear handles a message as the contract orders it: the timers due by its
// time fire first, each at its own deadline, then the message.
func (n *Node) Hear(m coordinator.Message) bool {
	if !n.eng.Accepts(m) {
		return false
	}
	n.Wake(m.At)
	return n.Step(coordinator.Heard(m))
}

// Wake fires, one deadline at a time, every timer due by to. Each firing is
// its own entry, so what it says is timed at its deadline in recordings.
func (n *Node) Wake(to time.Time) {
	for {
		d, ok := n.eng.NextDeadline()
		if !ok || d.After(to) {
			return
		}
		n.Step(coordinator.Event{Kind: coordinator.KindTick, At: d})
	}
}

// Confirm records that the room has the replies seqs, in its message msgID
// at ts. It is logged like an event, so it reaches the storage with the
// next Ready, before anything else is sent.
func (n *Node) Confirm(seqs []uint64, msgID string, ts time.Time) {
	if len(seqs) == 0 {
		return
	}
	n.ConfirmRanges(Ranges(seqs), msgID, ts)
}

// ConfirmRanges is Confirm for ranges of replies (as a stamp lists them).
// Replies already confirmed, or never produced, are left out; nothing is
// logged if nothing is left.
func (n *Node) ConfirmRanges(rs []Range, msgID string, ts time.Time) {
	var keep []Range
	for _, r := range rs {
		r.To = min(r.To, n.produced)
		for s := r.From; s <= r.To; s++ {
			if !n.box.done.has(s) {
				keep = append(keep, Range{s, s})
			}
		}
	}
	if len(keep) == 0 {
		return
	}
	// A stamp lists its message's lines in the order they went out,
	// urgent groups first, not in order of their numbers.
	slices.SortFunc(keep, func(a, b Range) int { return cmp.Compare(a.From, b.From) })
	keep = mergeRanges(keep)
	n.index++
	e := Entry{Index: n.index, Confirm: &Confirm{Seqs: keep, MsgID: msgID, TS: ts}}
	n.entries = append(n.entries, e)
	n.run(e)
}

// run applies one entry: the only place entries meet the engine, so that
// living and recovering agree.
func (n *Node) run(e Entry) {
	switch {
	case e.Event != nil:
		said := n.eng.Step(*e.Event)
		if e.Event.Kind == coordinator.KindMessage && e.Event.Msg.ID != "" {
			n.lastMsg, n.lastMsgAt = e.Event.Msg.ID, e.Event.Msg.At
		}
		n.number(said, e.Index)
		if !n.recovering && n.cfg.Observe != nil {
			n.cfg.Observe(e.Event, said)
		}
	case e.Confirm != nil:
		n.box.confirm(e.Confirm.Seqs)
		if !e.Confirm.TS.Before(n.lastEcho.TS) {
			n.lastEcho = Echo{MsgID: e.Confirm.MsgID, TS: e.Confirm.TS}
		}
	}
}

// number gives replies their sequence numbers, in the order the engine said
// them, which replaying the log reproduces exactly.
func (n *Node) number(said []coordinator.Reply, group uint64) {
	for _, r := range said {
		n.produced++
		l := Line{Seq: n.produced, Text: r.Text, Urgent: r.Urgent, Group: group, After: n.lastEcho}
		n.box.add(l)
		if !n.recovering {
			n.fresh = append(n.fresh, l)
		}
	}
}

// HasReady reports whether anything waits to be persisted or sent.
func (n *Node) HasReady() bool { return len(n.entries) > 0 || len(n.fresh) > 0 }

// Ready hands out what was done since the last Ready. The node forgets it:
// the shell persists the entries and sends the lines, or stops (the
// storage is then behind the engine, and a restart recovers the storage).
func (n *Node) Ready() Ready {
	rd := Ready{Entries: n.entries, Messages: n.fresh}
	n.entries, n.fresh = nil, nil
	n.sinceSnap += len(rd.Entries)
	if n.cfg.SnapshotEvery > 0 && n.sinceSnap >= n.cfg.SnapshotEvery {
		rd.Snapshot = n.Snapshot()
	}
	return rd
}

// Snapshot is the node's state as of its latest entry.
func (n *Node) Snapshot() *Snapshot {
	n.sinceSnap = 0
	return &Snapshot{Index: n.index, Engine: n.eng.Snapshot(), Produced: n.produced,
		Unconfirmed: n.box.unconfirmed(), Confirmed: confirmed{n.box.done.Through, slices.Clone(n.box.done.Above)},
		LastMsg: n.lastMsg, LastMsgAt: n.lastMsgAt, LastEcho: n.lastEcho}
}

// Line is reply seq, while the room has not confirmed it.
func (n *Node) Line(seq uint64) (Line, bool) {
	l, ok := n.box.waiting[seq]
	return l, ok
}

// Unconfirmed lists the replies the room has not confirmed, in order.
func (n *Node) Unconfirmed() []Line { return n.box.unconfirmed() }

// Delivered reports whether the room has confirmed reply seq.
func (n *Node) Delivered(seq uint64) bool { return n.box.done.has(seq) }

// Produced is how many replies the engine has said.
func (n *Node) Produced() uint64 { return n.produced }

// LastMessage is the latest message handled, by id and room time; "" if none.
func (n *Node) LastMessage() (string, time.Time) { return n.lastMsg, n.lastMsgAt }

// LastEcho is where the room last confirmed one of foreman's messages.
func (n *Node) LastEcho() Echo { return n.lastEcho }

// Reopen opens another node like n (same engine configuration and
// observer) on st, which recovers it: for tests of recovery.
func (n *Node) Reopen(st Storage) (*Node, error) {
	cfg := n.cfg
	cfg.Storage = st
	return Open(cfg)
}

// snapshotEvery spaces snapshots by the build's size. Taking one copies the
// state of every component in the loop (about 2 µs each: 190 ms at 100,000,
// BenchmarkSnapshot100k), while an entry costs the engine a microsecond or
// two; one every ten entries per component keeps snapshots to a small share
// of the work, and recovery replays at most that many entries.
func snapshotEvery(components int) int {
	return max(DefaultSnapshotEvery, 10*components)
}
