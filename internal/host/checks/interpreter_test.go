package checks

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The host reads a script's first line (its interpreter) from a worktree
// a check may have changed: a fifo there, or a link to one, is not opened
// for reading until a writer comes (the host would hang), and a link is
// never followed.
func TestTheInterpreterIsReadWithoutBlockingOrFollowing(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ok.sh"), []byte("#!/usr/bin/env python3\nprint(1)\n"), 0o755))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo.sh"), 0o644))
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "host.sh"), []byte("#!/host/secret\n"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(outside, "host.sh"), filepath.Join(dir, "link.sh")))

	assert.Equal(t, "/usr/bin/env", interpreter(dir, "./ok.sh"))
	done := make(chan string, 1)
	go func() { done <- interpreter(dir, "./fifo.sh") }()
	select {
	case got := <-done:
		assert.Empty(t, got, "a fifo is not a script")
	case <-time.After(time.Minute):
		t.Fatal("reading a fifo's first line blocked the host")
	}
	assert.Empty(t, interpreter(dir, "./link.sh"), "a link is not followed")
}
