// Package lockfile keeps a directory for one process: a flock on a file in
// it, which a process that dies lets go of, holding the holder's pid for
// the refusal to name.
package lockfile

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrHeld means another process holds the lock.
var ErrHeld = errors.New("the lock is held by another process")

// Take takes the lock at path if no other process holds it, and writes
// this process's pid in it. Closing the file lets it go.
func Take(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cannot make the lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrHeld
		}
		return nil, fmt.Errorf("cannot take the lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt(fmt.Appendf(nil, "%d\n", os.Getpid()), 0)
	}
	return f, nil
}

// Holder names who holds the lock at path, as people read it: "process
// 1234", or "another process" when the file does not say.
func Holder(path string) string {
	if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) != "" {
		return "process " + strings.TrimSpace(string(b))
	}
	return "another process"
}
