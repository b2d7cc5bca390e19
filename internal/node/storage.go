package node

import (
	"time"

	"github.com/agentforeman/foreman/coordinator"
)

// Entry is one record of the node's log, in the order things happened: an
// engine input, or the room's confirmation that it has some replies.
type Entry struct {
	Index   uint64
	Event   *coordinator.Event // an input to the engine
	Confirm *Confirm           // or replies the room confirmed
}

// Confirm says the room has the replies Seqs, in its message MsgID at TS.
type Confirm struct {
	Seqs  []Range   `json:"seqs"`
	MsgID string    `json:"msg_id,omitempty"`
	TS    time.Time `json:"ts"`
}

// Snapshot is the node's whole state after the entry Index. Restoring it
// and replaying the entries after it gives the node as it was.
type Snapshot struct {
	Index       uint64                `json:"index"`
	Engine      *coordinator.Snapshot `json:"engine"`
	Produced    uint64                `json:"produced"`              // replies numbered so far
	Unconfirmed []Line                `json:"unconfirmed,omitempty"` // their events are gone with the log
	Confirmed   confirmed             `json:"confirmed"`
	LastMsg     string                `json:"last_msg,omitempty"` // the latest message handled
	LastMsgAt   time.Time             `json:"last_msg_at,omitzero"`
	LastEcho    Echo                  `json:"last_echo,omitzero"` // the room's latest confirmation
}

// Echo is where the room last confirmed one of foreman's messages.
type Echo struct {
	MsgID string    `json:"msg_id,omitempty"`
	TS    time.Time `json:"ts,omitzero"`
}

// Storage keeps the node's log and snapshots. The shell appends what each
// Ready hands out; the node reads it back when it opens.
type Storage interface {
	// Snapshot is the latest snapshot; nil if there is none.
	Snapshot() (*Snapshot, error)
	// Entries calls fn with every entry after index, in order.
	Entries(after uint64, fn func(Entry) error) error
	// Append adds entries, durably: when it returns they survive a crash.
	Append(entries []Entry) error
	// SaveSnapshot stores s; it may finish in the background. Once it is
	// stored, the entries it covers may be dropped.
	SaveSnapshot(s *Snapshot) error
	// Alive and SaveAlive keep when foreman was last running, so that a
	// restart can tell the time it was away from time it merely idled.
	Alive() (time.Time, error)
	SaveAlive(t time.Time) error
	Close() error
}

// MemoryStorage keeps everything in memory: for replays and tests, where
// nothing needs to outlive the process.
type MemoryStorage struct {
	snap    *Snapshot
	entries []Entry
	alive   time.Time
}

// NewMemoryStorage is an empty MemoryStorage.
func NewMemoryStorage() *MemoryStorage { return &MemoryStorage{} }

func (m *MemoryStorage) Snapshot() (*Snapshot, error) { return m.snap, nil }

func (m *MemoryStorage) Entries(after uint64, fn func(Entry) error) error {
	for _, e := range m.entries {
		if e.Index > after {
			if err := fn(e); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *MemoryStorage) Append(entries []Entry) error {
	m.entries = append(m.entries, entries...)
	return nil
}

func (m *MemoryStorage) SaveSnapshot(s *Snapshot) error {
	m.snap = s
	kept := m.entries[:0]
	for _, e := range m.entries {
		if e.Index > s.Index {
			kept = append(kept, e)
		}
	}
	m.entries = kept
	return nil
}

func (m *MemoryStorage) Alive() (time.Time, error)   { return m.alive, nil }
func (m *MemoryStorage) SaveAlive(t time.Time) error { m.alive = t; return nil }
func (m *MemoryStorage) Close() error                { return nil }
