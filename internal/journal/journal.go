// Package journal is foreman's durable log: every entry the node hands out
// (the engine's inputs, and the room's confirmations of its replies), in
// order, with a snapshot now and then. It implements node.Storage.
//
// A journal is a directory:
//
//	LOCK                      held (flock) while a foreman has it open
//	wal-<first index>.log     segments of checksummed records
//	snapshot                  the latest snapshot, checksummed
//	alive                     when foreman last ran, and its last index
//
// A commit is one write and one fdatasync into a segment preallocated at
// its full size, so that the sync need not update the file's size. Every
// record carries a CRC-32C: damage is found and reported in one line,
// never read as something else, and nothing is memory-mapped, so a
// truncated file cannot crash the process. The only loss tolerated is a
// commit torn by a crash (its replies were never sent), and only when the
// alive mark shows that nothing acknowledged came after it.
package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentforeman/foreman/internal/node"
)

// DefaultSegmentSize is the size segments are preallocated at. A commit
// that does not fit starts the next segment.
const DefaultSegmentSize = 16 << 20

// ErrLocked means another process has the journal open.
var ErrLocked = errors.New("the journal is in use by another foreman; stop it, or give this one its own journal.path")

// DamagedError is a journal that cannot be read as written.
type DamagedError struct {
	Path string // the file
	What string // what is wrong, and where
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("journal %s is damaged (%s); foreman will not guess what it held: restore it from a backup, or move it aside and start a new build with --new-build",
		e.Path, e.What)
}

// Options configure a journal. The zero value is usable.
type Options struct {
	// Snapshotted, if set, is told how each background snapshot went.
	Snapshotted func(index uint64, took time.Duration, err error)
	SegmentSize int64 // 0: DefaultSegmentSize
}

// Journal is an open journal. Append, Entries and Snapshot belong to one
// goroutine; snapshots are written by another in the background.
type Journal struct {
	dir  string
	opts Options
	lock *os.File

	mu       sync.Mutex // segments, against the snapshot writer's cleanup
	segments []*segment // in order; the last is the one appended to
	last     uint64     // the index of the last entry appended
	scanned  bool       // the tail has been found

	alive     *os.File
	aliveMark aliveMark // as read at open

	snapping sync.WaitGroup
	busy     chan struct{} // holds a token while a snapshot is written
	buf      []byte
}

type segment struct {
	first uint64 // the first entry's index, from the file's name
	path  string
	f     *os.File // open for writing: the last segment only
	end   int64    // where the next record goes (the last segment only)
}

// Open opens the journal in dir, creating it if need be. It refuses a dir
// that another foreman holds, and a file left by an older foreman.
func Open(dir string, opts Options) (*Journal, error) {
	if info, err := os.Stat(dir); err == nil && !info.IsDir() {
		return nil, fmt.Errorf("journal %s is a file, not a directory: an older foreman's journal (bbolt); move it aside, or point journal.path at a new directory", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", dir, ErrLocked)
		}
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if opts.SegmentSize <= 0 {
		opts.SegmentSize = DefaultSegmentSize
	}
	j := &Journal{dir: dir, opts: opts, lock: lock, busy: make(chan struct{}, 1)}
	if err := j.openAlive(); err != nil {
		j.Close()
		return nil, err
	}
	if err := j.listSegments(); err != nil {
		j.Close()
		return nil, err
	}
	return j, nil
}

// Dir is the journal's directory.
func (j *Journal) Dir() string { return j.dir }

// Empty reports whether the journal holds nothing: no snapshot, no entry,
// and no mark of a foreman that ran on it. A journal that was deleted or
// emptied looks like this too; the caller must tell them apart.
func (j *Journal) Empty() bool {
	if j.aliveMark.index > 0 {
		return false
	}
	if _, err := os.Stat(j.snapshotPath()); err == nil {
		return false
	}
	for _, s := range j.segments {
		if info, err := os.Stat(s.path); err == nil && info.Size() > 0 {
			if first, err := firstRecord(s.path); err != nil || first {
				return false
			}
		}
	}
	return true
}

func (j *Journal) listSegments() error {
	paths, err := filepath.Glob(filepath.Join(j.dir, "wal-*.log"))
	if err != nil {
		return err
	}
	for _, p := range paths { // Glob sorts, and names are zero-padded
		var first uint64
		if _, err := fmt.Sscanf(filepath.Base(p), "wal-%016x.log", &first); err != nil {
			return &DamagedError{Path: p, What: "a segment whose name is not wal-<16 hex digits>.log"}
		}
		j.segments = append(j.segments, &segment{first: first, path: p})
	}
	return nil
}

// Close waits for a snapshot being written, then closes every file.
func (j *Journal) Close() error {
	j.snapping.Wait()
	var err error
	for _, s := range j.segments {
		if s.f != nil {
			err = errors.Join(err, s.f.Close())
			s.f = nil
		}
	}
	if j.alive != nil {
		err = errors.Join(err, j.alive.Close())
	}
	if j.lock != nil {
		err = errors.Join(err, j.lock.Close()) // closing releases the flock
	}
	return err
}

// syncDir makes a rename or a new file in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}

var _ node.Storage = (*Journal)(nil)
