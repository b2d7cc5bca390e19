package nofollow

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What a check may leave where the host reads: a link at the last
// component or one above it, a fifo (opened, it would block the host), a
// link to a device (read, /dev/zero would never end), a file too big. Each
// is refused without being opened, and without blocking; a plain file is
// read.
func TestWhatACheckLeavesIsNotFollowed(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("the host's"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plain"), []byte("gitdir: x\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big"), make([]byte, 5000), 0o644))
	require.NoError(t, os.Symlink("/dev/zero", filepath.Join(dir, "zero")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "link")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "dirlink")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))

	data, err := ReadFile(dir, "plain", 4096)
	require.NoError(t, err)
	assert.Equal(t, "gitdir: x\n", string(data))

	done := make(chan struct{})
	go func() {
		defer close(done)
		for name, want := range map[string]string{
			"zero":           "symbolic link",
			"link":           "symbolic link",
			"dirlink/secret": "symbolic link",
			"fifo":           "a fifo, not a regular file",
			"big":            "larger than 4096 bytes",
			"../escape":      "leads out of its directory",
		} {
			_, err := ReadFile(dir, name, 4096)
			assert.ErrorContains(t, err, want, name)
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute): // a fifo opened would block forever
		t.Fatal("reading what a check left blocked")
	}

	require.NoError(t, MkdirAll(dir, "a/b/c", 0o700))
	assert.DirExists(t, filepath.Join(dir, "a/b/c"))
	assert.ErrorContains(t, MkdirAll(dir, "dirlink/made", 0o700), "not a directory")
	assert.NoDirExists(t, filepath.Join(outside, "made"), "not made through the link")
	assert.ErrorContains(t, MkdirAll(dir, "plain/x", 0o700), "not a directory")
}
