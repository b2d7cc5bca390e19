package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
)

func TestIdentityCreatesThenShows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys", "identity.json")
	code, out, errOut := foreman(t, "identity", "--identity", path, "--name", "bot")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "created "+path)

	id, err := agentchat.LoadIdentity(path)
	require.NoError(t, err)
	assert.Equal(t, "bot", id.Name)
	assert.Contains(t, out, "agent id: "+id.AgentID()+"\n")
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	code, out, errOut = foreman(t, "identity", "--identity", path)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "identity "+path+"\n")
	assert.Contains(t, out, "agent id: "+id.AgentID()+"\n")
}

func TestIdentityRefusesABadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "identity.json")
	require.NoError(t, os.WriteFile(path, []byte("{}"), 0o600))
	code, _, errOut := foreman(t, "identity", "--identity", path)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no private key")
}
