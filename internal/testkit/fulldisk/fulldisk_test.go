//go:build linux

package fulldisk

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A full disk left behind by a test killed before its cleanup could
// unmount it (a tmpfs named Source, its lock held by nobody) is detached
// by the next Mount; a live test's disk is left alone.
func TestADiskLeftBehindIsRemovedByTheNextMount(t *testing.T) {
	live := Mount(t, 1<<20)
	dead := filepath.Join(t.TempDir(), "disk")
	require.NoError(t, os.Mkdir(dead, 0o755))
	require.NoError(t, os.WriteFile(dead+".lock", nil, 0o600)) // its test's, gone with it
	require.NoError(t, unix.Mount(Source, dead, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1048576"))
	t.Cleanup(func() { _ = unix.Unmount(dead, unix.MNT_DETACH) }) // were it left
	require.True(t, mounted(t, dead))
	stale := Stale(t)
	assert.Contains(t, stale, dead)
	assert.NotContains(t, stale, live)

	Mount(t, 1<<20)
	assert.False(t, mounted(t, dead), "the dead test's disk is gone")
	assert.True(t, mounted(t, live), "a live test's is not")
}

// mounted reports whether something is mounted on dir.
func mounted(t *testing.T, dir string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && unescape(f[4]) == dir {
			return true
		}
	}
	return false
}
