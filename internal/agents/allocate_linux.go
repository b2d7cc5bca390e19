package agents

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// allocate takes n bytes of f's disk: allocated, not a hole, so that a
// disk without them says ENOSPC. Where the file system cannot allocate
// (EOPNOTSUPP), they are written.
func allocate(f *os.File, n int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, 0, n)
	if errors.Is(err, unix.EOPNOTSUPP) {
		return write(f, n)
	}
	return err
}
