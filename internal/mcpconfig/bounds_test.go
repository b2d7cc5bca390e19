package mcpconfig

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each file foreman reads back from an agent's workspace or HOME, and the
// CLI whose Write reads it.
var readBack = []struct {
	inHome bool
	rel    string
	cli    string
}{
	{false, ".mcp.json", Claude},
	{false, ".git/info/exclude", Claude},
	{false, ".gemini/settings.json", Gemini},
	{true, ".claude/settings.json", Claude},
	{true, ".gemini/trustedFolders.json", Gemini},
	{true, ".codex/config.toml", Codex},
}

// An agent controls its workspace and HOME between its starts: what it
// leaves where foreman reads (a FIFO, which would hold foreman up at its
// start; a huge sparse file, which would be read whole into memory) is
// refused at once, in one line naming the file and the remedy.
func TestWhatTheAgentLeftIsReadWithinBounds(t *testing.T) {
	for _, kind := range []string{"fifo", "huge"} {
		for _, f := range readBack {
			t.Run(kind+" "+f.rel, func(t *testing.T) {
				ws, home := places(t)
				path := filepath.Join(ws, f.rel)
				if f.inHome {
					path = filepath.Join(home, f.rel)
				}
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
				_ = os.Remove(path) // git init's exclude
				if kind == "fifo" {
					require.NoError(t, syscall.Mkfifo(path, 0o600))
				} else {
					file, err := os.Create(path)
					require.NoError(t, err)
					require.NoError(t, file.Truncate(100<<30), "100 GiB, sparse")
					require.NoError(t, file.Close())
				}
				done := make(chan error, 1)
				go func() { done <- writeOne(ws, home, f.cli, server) }()
				var err error
				select {
				case err = <-done:
				case <-time.After(10 * time.Second): // generous: it takes milliseconds
					// The blocked call is left behind (a FIFO's open
					// released would block on the next): the failing
					// test binary ends with it.
					t.Fatalf("Write is still blocked on %s after 10 s", path)
				}
				require.Error(t, err)
				real, _ := filepath.EvalSymlinks(path)
				assert.Equal(t, "mcpconfig: "+real+": not a regular file of at most 1 MiB; remove it, foreman up writes it again", err.Error())
			})
		}
	}
}
