//go:build !linux

package agents

import "os"

// allocate takes n bytes of f's disk, by writing them.
func allocate(f *os.File, n int64) error { return write(f, n) }
