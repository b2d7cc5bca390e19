package server_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat/server"
)

// A room that stops in order hands its history to the next one through
// its state file, once: a room that then dies without stopping in order
// leaves none, and the one after starts empty, as a stock room does.
func TestTheStateFileCarriesTheHistoryOverOneOrderlyRestart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "room.json")
	s := start(t, server.Config{Channels: withBuild(), StateFile: file})
	a := member(t, s, "a")
	said := a.Say("CLAIM db")
	require.NoError(t, s.Close())
	require.FileExists(t, file)

	again := start(t, server.Config{Listen: s.Addr(), Channels: withBuild(), StateFile: file})
	assert.NoFileExists(t, file, "read once: it vouches for this restart only")
	p := dial(t, again)
	p.SignIn(newIdentity(t, "b"), "b")
	p.Join("#build")
	replay := p.Msg()
	assert.Equal(t, said["msg_id"], replay["msg_id"])
	assert.Equal(t, said["ts"], replay["ts"])
	assert.Equal(t, "CLAIM db", replay["content"])
	assert.Equal(t, true, replay["replay"])

	// Had it been killed now (it still runs, and has saved nothing), the
	// next room would know nothing of it.
	third := start(t, server.Config{Channels: withBuild(), StateFile: file})
	q := dial(t, third)
	q.SignIn(newIdentity(t, "c"), "c")
	q.Join("#build")
	q.Send(obj{"type": "PING"})
	assert.Equal(t, "PONG", q.Next()["type"], "no history")
}

// A state file that cannot be read stops the server with a line that
// says what to do, and is left for the user to look at.
func TestABadStateFileIsRefusedInOneLine(t *testing.T) {
	file := filepath.Join(t.TempDir(), "room.json")
	require.NoError(t, os.WriteFile(file, []byte("{not json"), 0o600))
	_, err := server.Start(t.Context(), server.Config{Listen: "127.0.0.1:0", StateFile: file})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the room's state file "+file+" cannot be read")
	assert.Contains(t, err.Error(), "remove it to start the room empty")
	assert.FileExists(t, file)
}
