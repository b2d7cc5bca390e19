package vopr

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/agentforeman/foreman/internal/journal"
	"github.com/agentforeman/foreman/internal/node"
)

// disk is the journal's directory: what survives foreman's process. It
// follows the journal's durability rules (internal/journal): a commit is
// synced before Append returns; the snapshot is written in the background
// and replaces the old one atomically; the alive mark is written often and
// synced (in a cluster it rides on the lease's renewals, and a kill loses
// what was noted since the last one). Every record carries a
// checksum, so damage is found, never read as something else.
type disk struct {
	records []record // committed entries, oldest first (those a snapshot covers may be gone)
	snap    []byte   // the snapshot as stored (JSON); nil if none
	snapSum uint32
	alive   aliveMark   // the mark as it is on the disk
	writes  []aliveMark // marks written since, not yet on the disk for sure
	fence   int         // in a cluster, the life that fenced the log last: an earlier one may not write
}

type record struct {
	index uint64
	data  []byte
	sum   uint32
}

type aliveMark struct {
	at      time.Time
	index   uint64
	written time.Time // world time of the write
}

func (d *disk) clone() *disk {
	c := &disk{snap: append([]byte(nil), d.snap...), snapSum: d.snapSum, alive: d.alive, fence: d.fence}
	if d.snap == nil {
		c.snap = nil
	}
	for _, r := range d.records {
		c.records = append(c.records, record{index: r.index, data: append([]byte(nil), r.data...), sum: r.sum})
	}
	c.writes = append(c.writes, d.writes...)
	return c
}

// crash is a kill: the alive marks written less than lag before it never
// reached the disk (a cluster's lease not yet renewed).
func (d *disk) crash(now time.Time, lag time.Duration) {
	for _, m := range d.writes {
		if !m.written.After(now.Add(-lag)) {
			d.alive = m
		}
	}
	d.writes = nil
}

// close is a clean exit: the page cache reaches the disk.
func (d *disk) close() {
	if n := len(d.writes); n > 0 {
		d.alive = d.writes[n-1]
	}
	d.writes = nil
}

// damagedError is the journal's refusal of a damaged directory, in its words.
type damagedError struct{ what string }

func (e *damagedError) Error() string {
	return fmt.Sprintf("journal is damaged (%s); foreman will not guess what it held", e.what)
}

// storage is one life's view of the disk: a node.Storage, as the journal
// is. Snapshots complete on the world's clock, and not at all if the life
// ends first.
type storage struct {
	w     *world
	d     *disk
	life  int
	last  uint64
	mark  aliveMark // as read at open, then as written
	busy  bool      // a snapshot is being written
	fail  bool      // the next Append fails (a full disk)
	dirty bool      // entries were appended this life
}

func newStorage(w *world, d *disk, life int) *storage {
	s := &storage{w: w, d: d, life: life, mark: d.alive}
	return s
}

var _ node.Storage = (*storage)(nil)

func (s *storage) Snapshot() (*node.Snapshot, error) {
	if s.d.snap == nil {
		return nil, nil
	}
	if crc32.ChecksumIEEE(s.d.snap) != s.d.snapSum {
		return nil, &damagedError{"the snapshot does not match its checksum"}
	}
	var snap node.Snapshot
	if err := json.Unmarshal(s.d.snap, &snap); err != nil {
		return nil, &damagedError{"a snapshot that does not decode: " + err.Error()}
	}
	if snap.Engine == nil {
		return nil, &damagedError{"a snapshot without the engine's state"}
	}
	return &snap, nil
}

// Entries checks every record on the way, as the journal does: checksums,
// an unbroken run of indexes, and an end no earlier than the last commit
// the alive mark vouches for.
func (s *storage) Entries(after uint64, fn func(node.Entry) error) error {
	next := uint64(0)
	for _, r := range s.d.records {
		if crc32.ChecksumIEEE(r.data) != r.sum {
			return &damagedError{fmt.Sprintf("entry %d does not match its checksum", r.index)}
		}
		if next == 0 {
			if r.index > after+1 {
				return &damagedError{fmt.Sprintf("it starts at entry %d where entry %d was expected", r.index, after+1)}
			}
		} else if r.index != next {
			return &damagedError{fmt.Sprintf("entry %d where entry %d was expected", r.index, next)}
		}
		next = r.index + 1
		if r.index <= after {
			continue
		}
		e, err := journal.DecodeEntry(r.data)
		if err != nil {
			return &damagedError{err.Error()}
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	s.last = after
	if next > 0 {
		s.last = max(after, next-1)
	}
	if s.last < s.mark.index {
		return &damagedError{fmt.Sprintf("it ends at entry %d, but entry %d was committed", s.last, s.mark.index)}
	}
	return nil
}

var errDiskFull = errors.New("journal: write failed: no space left on device")

// errDeposed is the cluster's fence: a later leader has fenced the log.
var errDeposed = errors.New("another foreman has taken this build over (its fence is in the log)")

// fenced reports whether a later life has fenced the log (a takeover).
func (s *storage) fenced() bool { return s.d.fence > s.life }

func (s *storage) Append(entries []node.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	if s.fenced() {
		return errDeposed
	}
	if s.fail {
		s.fail = false
		return errDiskFull
	}
	if first := entries[0].Index; first != s.last+1 {
		return fmt.Errorf("journal: appending entry %d after entry %d", first, s.last)
	}
	for _, e := range entries {
		data, err := journal.EncodeEntry(e)
		if err != nil {
			return err
		}
		s.d.records = append(s.d.records, record{index: e.Index, data: data, sum: crc32.ChecksumIEEE(data)})
	}
	s.last = entries[len(entries)-1].Index
	s.dirty = true
	return nil
}

// SaveSnapshot writes s in the background: it lands after a while, unless
// the life ends first. While one is being written another is not started.
func (s *storage) SaveSnapshot(snap *node.Snapshot) error {
	if s.busy {
		return nil
	}
	data, err := json.Marshal(snap)
	if err != nil {
		return err
	}
	s.busy = true
	life := s.life
	s.w.after(s.w.plan.snapshotDelay(), func() {
		if s.w.fm == nil || s.w.fm.life != life || s.w.fm.dead || s.fenced() {
			return
		}
		s.land(data, snap.Index)
	})
	return nil
}

// land puts a written snapshot on the disk and drops the records it covers.
func (s *storage) land(data []byte, index uint64) {
	s.busy = false
	s.d.snap, s.d.snapSum = data, crc32.ChecksumIEEE(data)
	kept := s.d.records[:0]
	for _, r := range s.d.records {
		if r.index > index {
			kept = append(kept, r)
		}
	}
	s.d.records = kept
}

// saveNow writes a snapshot at once (foreman's last one, on a clean exit).
func (s *storage) saveNow(snap *node.Snapshot) {
	if s.fenced() {
		return
	}
	data, err := json.Marshal(snap)
	if err == nil {
		s.land(data, snap.Index)
	}
}

func (s *storage) Alive() (time.Time, error) { return s.mark.at, nil }

func (s *storage) SaveAlive(t time.Time) error {
	if s.fenced() {
		return errDeposed
	}
	s.mark = aliveMark{at: t, index: s.last, written: s.w.now()}
	s.d.writes = append(s.d.writes, s.mark)
	return nil
}

func (s *storage) Close() error { return nil }

func (d *disk) describe() string {
	first, last := uint64(0), uint64(0)
	if n := len(d.records); n > 0 {
		first, last = d.records[0].index, d.records[n-1].index
	}
	snap := "no snapshot"
	if d.snap != nil {
		var s struct{ Index uint64 }
		_ = json.Unmarshal(d.snap, &s)
		snap = fmt.Sprintf("a snapshot at %d", s.Index)
	}
	return fmt.Sprintf("records %d-%d, %s, alive mark at entry %d", first, last, snap, d.alive.index)
}
