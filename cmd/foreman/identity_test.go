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

// The README's command for the host's key says the name the host joins
// with (host.name), not foreman's; foreman's own key says server.name; any
// other key is named after its file.
func TestIdentityNamesWhatJoins(t *testing.T) {
	t.Chdir(t.TempDir())
	writeFile(t, ".", "foreman.yaml", "server:\n  name: boss\nhost:\n  name: ci-host\n")
	code, out, errOut := foreman(t, "identity", "--identity", ".foreman/host.json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "name:     ci-host (host.name: the name it joins the room with)\n")
	id, err := agentchat.LoadIdentity(".foreman/host.json")
	require.NoError(t, err)
	assert.Equal(t, "ci-host", id.Name, "a new host key is named as the host joins")

	code, out, errOut = foreman(t, "identity")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "name:     boss (server.name: the name it joins the room with)\n")

	code, out, errOut = foreman(t, "identity", "--identity", ".foreman/ada.json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "name:     ada\n")
}
