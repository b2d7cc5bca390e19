//go:build linux

// Package fulldisk is a small disk of a test's own (a tmpfs, which only
// root may mount), to see what code does when the disk it writes on is
// full: Mount makes one, Fill leaves only so much of it free, and
// removing what Fill wrote frees it again.
package fulldisk

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Mount mounts a tmpfs of size bytes on a new directory of the test's,
// unmounted when the test ends, and returns the directory. It skips the
// test where no tmpfs can be mounted: not root (CI runs as root), or a
// root without the right to mount.
func Mount(t testing.TB, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a full disk is a tmpfs of the test's own, and only root may mount one (CI runs as root)")
	}
	dir := filepath.Join(t.TempDir(), "disk")
	require.NoError(t, os.Mkdir(dir, 0o755))
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		t.Skipf("a full disk is a tmpfs of the test's own, and root here cannot mount one at %s: %v", dir, err)
	}
	// Before TempDir's removal (cleanups run last first).
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			_ = unix.Unmount(dir, unix.MNT_DETACH) // busy: once the last user lets go
		}
	})
	return dir
}

// Free is how many bytes dir's disk has free.
func Free(t testing.TB, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(dir, &st))
	return int64(st.Bavail) * st.Bsize
}

// Fill writes a file in dir that leaves leave bytes free on its disk (to
// a page), and returns its path: removing it frees the space again.
func Fill(t testing.TB, dir string, leave int64) string {
	t.Helper()
	free := Free(t, dir)
	require.Greater(t, free, leave, "the disk at %s has %d bytes free, not more than %d", dir, free, leave)
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	require.NoError(t, err)
	defer f.Close()
	// Allocated, not a hole: a sparse file would take no space at all.
	require.NoError(t, unix.Fallocate(int(f.Fd()), 0, 0, free-leave))
	return path
}
