package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/agentforeman/foreman/internal/node"
)

// A commit is framed so that a crash's torn write can be told from damage:
//
//	body length (u32) | body CRC-32C (u32) | CRC-32C of those 8 bytes (u32) | body
//
// and the body is the commit's records, each a u32 length and its payload
// (little-endian throughout). A zero header ends a segment's commits: the
// rest is the preallocated zeros.
const (
	commitHeader = 12
	// maxCommit bounds a commit; larger batches are written as several,
	// each synced before the next, so a tear never reaches further back.
	maxCommit = 8 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendCommit frames payloads as one commit.
func appendCommit(buf []byte, payloads ...[]byte) []byte {
	start := len(buf)
	buf = append(buf, make([]byte, commitHeader)...)
	for _, p := range payloads {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(p)))
		buf = append(buf, p...)
	}
	body := buf[start+commitHeader:]
	h := buf[start : start+commitHeader]
	binary.LittleEndian.PutUint32(h[0:4], uint32(len(body)))
	binary.LittleEndian.PutUint32(h[4:8], crc32.Checksum(body, castagnoli))
	binary.LittleEndian.PutUint32(h[8:12], crc32.Checksum(h[0:8], castagnoli))
	return buf
}

// validHeader reports whether data starts with a commit header that checks,
// for a body of at most limit bytes.
func validHeader(data []byte, limit int) (bodyLen int, ok bool) {
	if len(data) < commitHeader || allZero(data[:commitHeader]) {
		return 0, false
	}
	if crc32.Checksum(data[0:8], castagnoli) != binary.LittleEndian.Uint32(data[8:12]) {
		return 0, false
	}
	n := binary.LittleEndian.Uint32(data[0:4])
	return int(n), n > 0 && int64(n) <= int64(limit)
}

// readCommit reads the commit at the start of data: its records and its
// size; size 0 at the end of the commits; an error if it is damaged.
func readCommit(data []byte, limit int) (records [][]byte, size int, err error) {
	if len(data) < commitHeader || allZero(data[:commitHeader]) {
		if allZero(data) {
			return nil, 0, nil
		}
		return nil, 0, errors.New("data after the end of the commits")
	}
	n, ok := validHeader(data, limit)
	switch {
	case !ok:
		return nil, 0, errors.New("a commit header whose checksum does not match")
	case n > len(data)-commitHeader:
		return nil, 0, fmt.Errorf("a commit of %d bytes where %d remain", n, len(data)-commitHeader)
	}
	body := data[commitHeader : commitHeader+n]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(data[4:8]) {
		return nil, 0, errors.New("a commit whose checksum does not match")
	}
	for len(body) > 0 {
		if len(body) < 4 {
			return nil, 0, errors.New("a record length cut short")
		}
		l := int(binary.LittleEndian.Uint32(body))
		if l > len(body)-4 {
			return nil, 0, errors.New("a record longer than its commit")
		}
		records = append(records, body[4:4+l])
		body = body[4+l:]
	}
	return records, commitHeader + n, nil
}

// tornAt reports whether the anomaly at off can only be a commit a crash
// tore: no valid commit follows it. Damage in the middle of the log is
// followed by the commits after it.
func tornAt(data []byte, off int) bool {
	for p := off + 1; p+commitHeader <= len(data); p++ {
		if n, ok := validHeader(data[p:], maxCommit); ok && p+commitHeader+n <= len(data) {
			return false
		}
	}
	return true
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// firstRecord reports whether the segment at path holds a record at all.
func firstRecord(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var h [commitHeader]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return false, nil
	}
	return !allZero(h[:]), nil
}

// Entries calls fn with every entry after index, in order, checking every
// record on the way; fn may be nil. It finds where the next commit goes. A
// damaged record is an error, except a commit torn at the very end by a
// crash, which is cut off if nothing acknowledged came after it.
func (j *Journal) Entries(after uint64, fn func(node.Entry) error) error {
	j.mu.Lock()
	segs := append([]*segment(nil), j.segments...)
	j.mu.Unlock()
	next := uint64(0) // the index the next record must have; 0 before the first
	for i, s := range segs {
		last := i == len(segs)-1
		if !last && segs[i+1].first <= after+1 {
			next = segs[i+1].first // wholly covered by the snapshot: not read
			continue
		}
		if next != 0 && s.first != next {
			return &DamagedError{Path: s.path, What: fmt.Sprintf("it starts at entry %d where entry %d was expected", s.first, next)}
		}
		next = s.first
		data, err := os.ReadFile(s.path)
		if err != nil {
			return err
		}
		off := 0
		for off < len(data) {
			records, size, rerr := readCommit(data[off:], maxCommit)
			if rerr != nil {
				if last && tornAt(data, off) {
					if err := j.cutTornTail(s, off, len(data)); err != nil {
						return err
					}
					break
				}
				return &DamagedError{Path: s.path, What: fmt.Sprintf("%v at offset %d", rerr, off)}
			}
			if size == 0 {
				break
			}
			for _, payload := range records {
				e, derr := decodeEntry(payload)
				if derr != nil {
					return &DamagedError{Path: s.path, What: fmt.Sprintf("a record that does not decode in the commit at offset %d: %v", off, derr)}
				}
				if e.Index != next {
					return &DamagedError{Path: s.path, What: fmt.Sprintf("entry %d in the commit at offset %d where entry %d was expected", e.Index, off, next)}
				}
				next++
				if e.Index > after && fn != nil {
					if err := fn(e); err != nil {
						return err
					}
				}
			}
			off += size
		}
		if last {
			s.end = int64(off)
		}
	}
	j.last = after
	if next > 0 {
		j.last = max(after, next-1)
	}
	if j.last < j.aliveMark.index {
		return &DamagedError{Path: j.dir, What: fmt.Sprintf("it ends at entry %d, but entry %d was committed: a segment was cut short or removed", j.last, j.aliveMark.index)}
	}
	j.scanned = true
	return nil
}

// cutTornTail zeroes a commit a crash left half written, so that the next
// commit goes where it began.
func (j *Journal) cutTornTail(s *segment, off, size int) error {
	f, err := os.OpenFile(s.path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, size-off), int64(off)); err != nil {
		return err
	}
	return unix.Fdatasync(int(f.Fd()))
}

// Append adds entries in one write and one sync.
func (j *Journal) Append(entries []node.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	if !j.scanned {
		if err := j.Entries(math.MaxUint64, nil); err != nil {
			return err
		}
	}
	if first := entries[0].Index; first != j.last+1 {
		return fmt.Errorf("journal: appending entry %d after entry %d", first, j.last)
	}
	// One commit, or several of at most maxCommit each for a huge batch.
	buf := j.buf[:0]
	var cuts []int // where each commit ends: each is synced before the next is written
	var payloads [][]byte
	size := 0
	flush := func() {
		if len(payloads) > 0 {
			buf = appendCommit(buf, payloads...)
			cuts = append(cuts, len(buf))
			payloads, size = payloads[:0], 0
		}
	}
	for _, e := range entries {
		payload, err := encodeEntry(e)
		if err != nil {
			return err
		}
		if 4+len(payload) > maxCommit {
			return fmt.Errorf("journal: entry %d is %d bytes, more than a commit may hold (%d)", e.Index, len(payload), maxCommit)
		}
		if size+4+len(payload) > maxCommit {
			flush()
		}
		payloads = append(payloads, payload)
		size += 4 + len(payload)
	}
	flush()
	s, err := j.tail(entries[0].Index, int64(len(buf)))
	if err != nil {
		return err
	}
	from := 0
	for _, to := range cuts {
		if to == from {
			continue
		}
		if _, err := s.f.WriteAt(buf[from:to], s.end+int64(from)); err != nil {
			return err
		}
		if err := unix.Fdatasync(int(s.f.Fd())); err != nil {
			return err
		}
		from = to
	}
	s.end += int64(len(buf))
	j.last = entries[len(entries)-1].Index
	if cap(buf) <= 4<<20 { // keep a buffer of ordinary size, not a giant one
		j.buf = buf
	}
	return nil
}

// tail is the segment the next commit goes into: the last, opened for
// writing, or a new one when the commit does not fit in what is left.
func (j *Journal) tail(first uint64, size int64) (*segment, error) {
	j.mu.Lock()
	var s *segment
	if n := len(j.segments); n > 0 {
		s = j.segments[n-1]
	}
	j.mu.Unlock()
	if s != nil && (s.end == 0 || s.end+size <= j.opts.SegmentSize) {
		if s.f == nil {
			f, err := os.OpenFile(s.path, os.O_WRONLY, 0)
			if err != nil {
				return nil, err
			}
			s.f = f
		}
		return s, nil
	}
	return j.rotate(s, first)
}

// rotate starts a segment whose first entry is first, preallocated.
func (j *Journal) rotate(prev *segment, first uint64) (*segment, error) {
	path := filepath.Join(j.dir, fmt.Sprintf("wal-%016x.log", first))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	if err := preallocate(f, j.opts.SegmentSize); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	if err := syncDir(j.dir); err != nil {
		f.Close()
		return nil, err
	}
	if prev != nil && prev.f != nil {
		prev.f.Close()
		prev.f = nil
	}
	s := &segment{first: first, path: path, f: f}
	j.mu.Lock()
	j.segments = append(j.segments, s)
	j.mu.Unlock()
	return s, nil
}

// preallocate gives f its full size up front, so that a sync after a
// commit has no file size to update. Where the file system cannot
// allocate, a sparse file of the same size does.
func preallocate(f *os.File, size int64) error {
	if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err == nil {
		return nil
	}
	return f.Truncate(size)
}

// compact drops the segments a durable snapshot at index covers wholly.
func (j *Journal) compact(index uint64) error {
	j.mu.Lock()
	var drop []*segment
	for len(j.segments) > 1 && j.segments[1].first <= index+1 {
		drop = append(drop, j.segments[0])
		j.segments = j.segments[1:]
	}
	j.mu.Unlock()
	var err error
	for _, s := range drop {
		err = errors.Join(err, os.Remove(s.path))
	}
	return err
}
