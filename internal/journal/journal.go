// Package journal keeps foreman's durable record: every input the engine
// handled, in order, with periodic snapshots of the engine's state, and how
// far the room has confirmed foreman's replies. On a restart the state is the
// latest snapshot plus the events after it replayed through the engine, which
// is deterministic, so nothing handled is lost and nothing is handled twice.
//
// It is a bbolt database: one file, ACID transactions, an fsync per commit,
// and a file lock that keeps a second foreman off the same journal.
package journal

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/agentforeman/foreman/coordinator"
)

// Kind is what an event was.
type Kind string

// Event kinds: every way the engine's state can change.
const (
	Start   Kind = "start"   // the build started
	Message Kind = "message" // a room message was handled
	Tick    Kind = "tick"    // the timers due at At fired
	Advance Kind = "advance" // the clock moved to At
	Recover Kind = "recover" // the coordinator was away until At (a pause)
	Reload  Kind = "reload"  // the components were reloaded
)

// Event is one engine input. At is the event's time in Unix milliseconds,
// the room's own resolution.
type Event struct {
	Seq        uint64                  `json:"-"`
	Kind       Kind                    `json:"k"`
	At         int64                   `json:"t"`
	ID         string                  `json:"id,omitempty"`
	From       string                  `json:"from,omitempty"`
	Verified   bool                    `json:"v,omitempty"`
	Content    string                  `json:"c,omitempty"`
	Components []coordinator.Component `json:"comps,omitempty"`
}

// Time is At as a time.
func (e *Event) Time() time.Time { return time.UnixMilli(e.At).UTC() }

// Outbox is how far the room has confirmed the replies: every reply up to
// Through, and those beyond it listed in Also (the sender may reorder lines,
// so confirmations can arrive out of order).
type Outbox struct {
	Through uint64   `json:"through"`
	Also    []uint64 `json:"also,omitempty"`
	LastTS  int64    `json:"last_ts,omitempty"` // room time of the latest confirmation, Unix ms
}

// Delivered reports whether reply seq is confirmed.
func (o *Outbox) Delivered(seq uint64) bool {
	if seq <= o.Through {
		return true
	}
	for _, s := range o.Also {
		if s == seq {
			return true
		}
	}
	return false
}

// Confirm records that reply seq reached the room.
func (o *Outbox) Confirm(seq uint64) {
	if o.Delivered(seq) {
		return
	}
	o.Also = append(o.Also, seq)
	for moved := true; moved; {
		moved = false
		for i, s := range o.Also {
			if s == o.Through+1 {
				o.Through = s
				o.Also = append(o.Also[:i], o.Also[i+1:]...)
				moved = true
				break
			}
		}
	}
}

// Snapshot is the engine's state after the event Seq, with the number of
// replies it had produced by then.
type Snapshot struct {
	Seq      uint64                `json:"seq"`
	Produced uint64                `json:"produced"`
	Engine   *coordinator.Snapshot `json:"engine"`
	Pending  []Line                `json:"pending,omitempty"` // replies not yet confirmed: the events that made them are gone
	LastMsg  string                `json:"last_msg,omitempty"`
	LastMsgT int64                 `json:"last_msg_t,omitempty"`
}

// Line is a numbered reply.
type Line struct {
	Seq  uint64 `json:"seq"`
	Text string `json:"text"`
}

var (
	bucketEvents = []byte("events")
	bucketMeta   = []byte("meta")
	keySnapshot  = []byte("snapshot")
	keyOutbox    = []byte("outbox")
	keyAlive     = []byte("alive")
)

// Journal is an open journal file.
type Journal struct {
	db   *bolt.DB
	next uint64 // the sequence number the next event gets
}

// ErrLocked means another process has the journal open.
var ErrLocked = errors.New("the journal is in use by another foreman (same journal path); stop it or use another journal.path")

// Open opens or creates the journal at path.
func Open(path string) (*Journal, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, FreelistType: bolt.FreelistMapType})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("%s: %w", path, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	j := &Journal{db: db}
	err = db.Update(func(tx *bolt.Tx) error {
		ev, err := tx.CreateBucketIfNotExists(bucketEvents)
		if err != nil {
			return err
		}
		if _, err := tx.CreateBucketIfNotExists(bucketMeta); err != nil {
			return err
		}
		j.next = 1
		if k, _ := ev.Cursor().Last(); k != nil {
			j.next = binary.BigEndian.Uint64(k) + 1
		} else if s, err := readSnapshot(tx); err == nil && s != nil {
			j.next = s.Seq + 1 // every event was compacted into the snapshot
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return j, nil
}

// Close closes the file.
func (j *Journal) Close() error { return j.db.Close() }

// Append writes events in one transaction, synced to disk before it returns,
// and numbers them.
func (j *Journal) Append(events ...*Event) error { return j.AppendWith(nil, events...) }

// AppendWith is Append that also saves the outbox in the same transaction:
// one sync for both.
func (j *Journal) AppendWith(o *Outbox, events ...*Event) error {
	if len(events) == 0 && o == nil {
		return nil
	}
	return j.db.Update(func(tx *bolt.Tx) error {
		if o != nil {
			data, err := json.Marshal(o)
			if err != nil {
				return err
			}
			if err := tx.Bucket(bucketMeta).Put(keyOutbox, data); err != nil {
				return err
			}
		}
		b := tx.Bucket(bucketEvents)
		seq := j.next
		for _, e := range events {
			data, err := json.Marshal(e)
			if err != nil {
				return err
			}
			if err := b.Put(key(seq), data); err != nil {
				return err
			}
			e.Seq = seq
			seq++
		}
		j.next = seq
		return nil
	})
}

// Last is the sequence number of the latest event, 0 if none.
func (j *Journal) Last() uint64 { return j.next - 1 }

// Since calls fn with every event after seq, in order.
func (j *Journal) Since(seq uint64, fn func(*Event) error) error {
	return j.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketEvents).Cursor()
		for k, v := c.Seek(key(seq + 1)); k != nil; k, v = c.Next() {
			var e Event
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("event %d: %w", binary.BigEndian.Uint64(k), err)
			}
			e.Seq = binary.BigEndian.Uint64(k)
			if err := fn(&e); err != nil {
				return err
			}
		}
		return nil
	})
}

// SaveSnapshot stores a snapshot and drops the events it covers, which are
// no longer needed to recover.
func (j *Journal) SaveSnapshot(s *Snapshot) error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return j.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketMeta).Put(keySnapshot, data); err != nil {
			return err
		}
		c := tx.Bucket(bucketEvents).Cursor()
		for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) <= s.Seq; k, _ = c.Next() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}

// LoadSnapshot returns the latest snapshot, or nil if there is none.
func (j *Journal) LoadSnapshot() (*Snapshot, error) {
	var s *Snapshot
	err := j.db.View(func(tx *bolt.Tx) error {
		var err error
		s, err = readSnapshot(tx)
		return err
	})
	return s, err
}

func readSnapshot(tx *bolt.Tx) (*Snapshot, error) {
	data := tx.Bucket(bucketMeta).Get(keySnapshot)
	if data == nil {
		return nil, nil
	}
	var s Snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return &s, nil
}

// SaveOutbox records how far the room has confirmed the replies.
func (j *Journal) SaveOutbox(o *Outbox) error { return j.putJSON(keyOutbox, o) }

// LoadOutbox returns what SaveOutbox last stored.
func (j *Journal) LoadOutbox() (*Outbox, error) {
	o := &Outbox{}
	return o, j.getJSON(keyOutbox, o)
}

// SaveAlive records that foreman was running at t, so a restart can tell
// the time it was away from the time it was merely idle.
func (j *Journal) SaveAlive(t time.Time) error { return j.putJSON(keyAlive, t.UnixMilli()) }

// LoadAlive returns what SaveAlive last stored; zero if nothing.
func (j *Journal) LoadAlive() (time.Time, error) {
	var ms int64
	if err := j.getJSON(keyAlive, &ms); err != nil || ms == 0 {
		return time.Time{}, err
	}
	return time.UnixMilli(ms).UTC(), nil
}

func (j *Journal) putJSON(k []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return j.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(k, data) })
}

func (j *Journal) getJSON(k []byte, v any) error {
	return j.db.View(func(tx *bolt.Tx) error {
		if data := tx.Bucket(bucketMeta).Get(k); data != nil {
			return json.Unmarshal(data, v)
		}
		return nil
	})
}

func key(seq uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	return b[:]
}
