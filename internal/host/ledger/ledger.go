// Package ledger is foreman host's own small journal: the jobs it started
// and ended, what passed the checks, what it landed. One JSON record a
// line, each batch written and synced before what it records is said in
// the room, so that after kill -9 the host knows which runs were cut short
// and what each approved component is to land (what was checked, not what
// its branch holds by then). Whether a run is still wanted, and whether a
// MERGED still has to be said, the host learns again from the room and the
// repository.
package ledger

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/agentforeman/foreman/internal/host"
)

// compactAt is the size past which Open rewrites the ledger with only what
// is still live.
const compactAt = 1 << 20

// Ledger is an open ledger file, locked against a second host.
type Ledger struct {
	mu   sync.Mutex
	path string
	f    *os.File
}

// ErrLocked means another host has the ledger open.
var ErrLocked = errors.New("another foreman host is using it; stop that one, or give this one its own host.ledger")

// Open opens (or creates) the ledger at path and reads what it holds.
func Open(path string) (*Ledger, host.State, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, host.State{}, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, host.State{}, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, host.State{}, fmt.Errorf("ledger %s: %w", path, ErrLocked)
		}
		return nil, host.State{}, err
	}
	l := &Ledger{path: path, f: f}
	st, good, size, err := read(f)
	if err != nil {
		f.Close()
		return nil, host.State{}, fmt.Errorf("ledger %s: %w", path, err)
	}
	if good < size { // a write torn by a crash: it was never said
		if err := f.Truncate(good); err != nil {
			f.Close()
			return nil, host.State{}, err
		}
	}
	if _, err := f.Seek(good, 0); err != nil {
		f.Close()
		return nil, host.State{}, err
	}
	if good > compactAt {
		if err := l.compact(st); err != nil {
			f.Close()
			return nil, host.State{}, err
		}
	}
	return l, st, nil
}

// Read reads what the ledger at path holds without opening it for writing
// (a host may be using it): what foreman verify needs. A tail a crash tore
// is left out.
func Read(path string) (host.State, error) {
	f, err := os.Open(path)
	if err != nil {
		return host.State{}, err
	}
	defer f.Close()
	st, _, _, err := read(f)
	if err != nil {
		return host.State{}, fmt.Errorf("ledger %s: %w", path, err)
	}
	return st, nil
}

// read replays the records: the state they leave, and how many bytes of
// the file are whole records.
func read(f *os.File) (host.State, int64, int64, error) {
	var rp host.Replay
	fi, err := f.Stat()
	if err != nil {
		return host.State{}, 0, 0, err
	}
	r := bufio.NewReader(f)
	var good int64
	n := 0
	for {
		line, err := r.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			break
		}
		n++
		whole := err == nil
		var rec host.Record
		if jerr := json.Unmarshal(bytes.TrimSpace(line), &rec); jerr != nil || rec.Op == "" {
			if !whole || isLast(r) {
				break // the tail a crash tore: dropped
			}
			return rp.State(), 0, 0, fmt.Errorf("record %d is damaged; move the file away to start afresh (what passed will be checked again)", n)
		}
		if !whole {
			break
		}
		good += int64(len(line))
		rp.Apply(rec)
	}
	return rp.State(), good, fi.Size(), nil
}

func isLast(r *bufio.Reader) bool {
	_, err := r.Peek(1)
	return err != nil
}

// Append writes records and syncs them to disk before it returns.
func (l *Ledger) Append(recs []host.Record) error {
	if len(recs) == 0 {
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.Write(buf.Bytes()); err != nil {
		return err
	}
	return unix.Fdatasync(int(l.f.Fd()))
}

// compact rewrites the ledger with only what st holds, atomically.
func (l *Ledger) compact(st host.State) error {
	tmp := l.path + ".tmp"
	recs := host.Compacted(st)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	f, err := os.Open(tmp)
	if err != nil {
		return err
	}
	serr := f.Sync()
	f.Close()
	if serr != nil {
		return serr
	}
	// The lock is on the old file: take it on the new one before it
	// replaces the old.
	nf, err := os.OpenFile(tmp, os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if err := unix.Flock(int(nf.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		nf.Close()
		return err
	}
	if err := os.Rename(tmp, l.path); err != nil {
		nf.Close()
		return err
	}
	l.f.Close()
	l.f = nf
	return nil
}

// Close closes the ledger, which unlocks it.
func (l *Ledger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}
