package mcpconfig

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An agent may change its workspace and HOME between two starts, and
// foreman, which writes its MCP config there at each foreman up, may be
// root: a link the agent left (its clone's .git/info/exclude to a file of
// the system's, its .claude to another agent's HOME) is refused, and
// nothing outside is written.
func TestALinkTheAgentLeftIsNotFollowed(t *testing.T) {
	outside := t.TempDir()
	victim := filepath.Join(outside, "sudoers")
	require.NoError(t, os.WriteFile(victim, []byte("root ALL=(ALL) ALL\n"), 0o600))
	server := Server{Command: "/usr/bin/foreman", Args: []string{"mcp"}}

	ws, home := t.TempDir(), t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(ws, ".git", "info"), 0o755))
	require.NoError(t, os.Symlink(victim, filepath.Join(ws, ".git", "info", "exclude")))
	assert.Error(t, writeOne(ws, home, Claude, server))
	data, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "root ALL=(ALL) ALL\n", string(data), "the file the link names is untouched")

	ws, home = t.TempDir(), t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(home, ".claude")))
	assert.Error(t, writeOne(ws, home, Claude, server))
	assert.NoFileExists(t, filepath.Join(outside, "settings.json"), "nothing written through the agent's link")

	ws, home = t.TempDir(), t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(home, ".codex")))
	assert.Error(t, writeOne(ws, home, Codex, server))
	assert.NoFileExists(t, filepath.Join(outside, "config.toml"))
}

// A hard link the agent left at its clone's .git/info/exclude, to a file
// it may not write, is replaced, never written through.
func TestAHardLinkTheAgentLeftIsNotWrittenThrough(t *testing.T) {
	ws, home := places(t)
	victim := filepath.Join(filepath.Dir(ws), "victim")
	require.NoError(t, os.WriteFile(victim, []byte("root ALL=(ALL) ALL\n"), 0o600))
	exclude := filepath.Join(ws, ".git", "info", "exclude")
	require.NoError(t, os.Remove(exclude))
	require.NoError(t, os.Link(victim, exclude))
	require.NoError(t, writeOne(ws, home, Claude, server))
	data, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "root ALL=(ALL) ALL\n", string(data), "the file the link shares is untouched")
	data, err = os.ReadFile(exclude)
	require.NoError(t, err)
	assert.Equal(t, "root ALL=(ALL) ALL\n/.mcp.json\n", string(data), "what was there, and foreman's line")
}
