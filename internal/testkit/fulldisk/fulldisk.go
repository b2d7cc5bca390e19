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
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Source names the tmpfs Mount makes, in the mount table: so that one a
// test left behind, killed before it could unmount it (a go test
// -timeout, a kill), is told from any other tmpfs and removed.
const Source = "foreman-fulldisk"

// Mount mounts a tmpfs of size bytes on a new directory of the test's,
// unmounted when the test ends, and returns the directory. It skips the
// test where no tmpfs can be mounted: not root (CI runs as root), or a
// root without the right to mount. It first detaches the disks of tests
// that are gone (Stale).
func Mount(t testing.TB, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a full disk is a tmpfs of the test's own, and only root may mount one (CI runs as root)")
	}
	for _, dir := range Stale(t) {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Logf("a full disk left behind by a test that is gone, at %s: %v", dir, err)
		}
	}
	dir := filepath.Join(t.TempDir(), "disk")
	require.NoError(t, os.Mkdir(dir, 0o755))
	// Held while the test runs: the kernel lets go of it when its process
	// dies, however it dies.
	lock, err := os.OpenFile(dir+".lock", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	require.NoError(t, err)
	require.NoError(t, unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB))
	if err := unix.Mount(Source, dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		lock.Close()
		t.Skipf("a full disk is a tmpfs of the test's own, and root here cannot mount one at %s: %v", dir, err)
	}
	// Before TempDir's removal (cleanups run last first).
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			_ = unix.Unmount(dir, unix.MNT_DETACH) // busy: once the last user lets go
		}
		lock.Close()
	})
	return dir
}

// Stale lists the full disks under os.TempDir() whose test is gone: a
// tmpfs named Source whose lock (DIR.lock, beside it) nobody holds.
func Stale(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	tmp := filepath.Clean(os.TempDir()) + string(filepath.Separator)
	var stale []string
	for _, line := range strings.Split(string(b), "\n") {
		// ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER
		mine, theirs, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(mine), strings.Fields(theirs)
		if !ok || len(f) < 5 || len(g) < 2 || g[0] != "tmpfs" || g[1] != Source {
			continue
		}
		dir := unescape(f[4])
		if !strings.HasPrefix(dir, tmp) || held(dir+".lock") {
			continue
		}
		stale = append(stale, dir)
	}
	return stale
}

// held reports whether a live test holds the lock at path.
func held(path string) bool {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false // never made, or removed: nobody's
	}
	defer f.Close() // and with it the lock, if taken here
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil
}

// unescape undoes mountinfo's octal escapes (\040 is a space).
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
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
