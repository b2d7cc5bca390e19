package journal

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/agentforeman/foreman/internal/node"
)

// A snapshot file is a magic word, then one commit of one record: the
// snapshot as JSON.
var snapshotMagic = []byte("FMSNAP01")

func (j *Journal) snapshotPath() string { return filepath.Join(j.dir, "snapshot") }

// Snapshot reads the latest snapshot; nil if there is none.
func (j *Journal) Snapshot() (*node.Snapshot, error) {
	path := j.snapshotPath()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(data) < len(snapshotMagic) || string(data[:len(snapshotMagic)]) != string(snapshotMagic) {
		return nil, &DamagedError{Path: path, What: "not a snapshot file"}
	}
	records, size, err := readCommit(data[len(snapshotMagic):], math.MaxUint32)
	if err == nil && (size == 0 || len(records) != 1) {
		err = errors.New("no snapshot in it")
	}
	if err != nil {
		return nil, &DamagedError{Path: path, What: err.Error()}
	}
	payload := records[0]
	var s node.Snapshot
	if err := json.Unmarshal(payload, &s); err != nil {
		return nil, &DamagedError{Path: path, What: "a snapshot that does not decode: " + err.Error()}
	}
	if s.Engine == nil {
		return nil, &DamagedError{Path: path, What: "a snapshot without the engine's state"}
	}
	return &s, nil
}

// SaveSnapshot writes s in the background and then drops the segments it
// covers. The entries it covers must be appended already. While one
// snapshot is being written another is not started: the next comes later.
func (j *Journal) SaveSnapshot(s *node.Snapshot) error {
	select {
	case j.busy <- struct{}{}:
	default:
		return nil
	}
	j.snapping.Add(1)
	go func() {
		defer j.snapping.Done()
		defer func() { <-j.busy }()
		began := time.Now()
		err := j.writeSnapshot(s)
		if err == nil {
			err = j.compact(s.Index)
		}
		if j.opts.Snapshotted != nil {
			j.opts.Snapshotted(s.Index, time.Since(began), err)
		}
	}()
	return nil
}

// writeSnapshot replaces the snapshot file atomically: a new file, synced,
// renamed over the old one, the directory synced.
func (j *Journal) writeSnapshot(s *node.Snapshot) error {
	payload, err := json.Marshal(s)
	if err != nil {
		return err
	}
	data := appendCommit(append([]byte(nil), snapshotMagic...), payload)
	tmp := j.snapshotPath() + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, j.snapshotPath()); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	return syncDir(j.dir)
}

// The alive mark is 16 bytes: when foreman last ran (Unix ms) and the index
// of its last commit then. It is written often and never synced: losing it
// only makes a restart count more time as a pause, and check less.
type aliveMark struct {
	at    time.Time
	index uint64
}

func (j *Journal) openAlive() error {
	f, err := os.OpenFile(filepath.Join(j.dir, "alive"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	j.alive = f
	var b [16]byte
	if n, _ := f.ReadAt(b[:], 0); n == len(b) {
		j.aliveMark = aliveMark{at: fromMS(int64(binary.LittleEndian.Uint64(b[0:8]))), index: binary.LittleEndian.Uint64(b[8:16])}
	}
	return nil
}

// Alive is when foreman was last running on this journal; zero if never.
func (j *Journal) Alive() (time.Time, error) { return j.aliveMark.at, nil }

// SaveAlive records that foreman is running at t, with everything up to its
// last commit durable. The mark is synced: a restart counts the time from
// it as downtime (contract section 3), so a mark lost with the page cache
// (a machine that lost power) would push every deadline back by as much
// as the kernel held it. One 16-byte write synced each time the mark moves
// (internal/bot: at most every second, every 2 s in a quiet room).
func (j *Journal) SaveAlive(t time.Time) error {
	j.aliveMark = aliveMark{at: t, index: j.last}
	var b [16]byte
	binary.LittleEndian.PutUint64(b[0:8], uint64(ms(t)))
	binary.LittleEndian.PutUint64(b[8:16], j.last)
	if _, err := j.alive.WriteAt(b[:], 0); err != nil {
		return err
	}
	return j.alive.Sync()
}
