package web

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/agents"
)

// The board lists the agents foreman up runs, and serves each one's log,
// as text, the end of it; no other file, whatever the name asked.
func TestBoardShowsTheAgentsAndTheirLogs(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "b1", "agent.log")
	require.NoError(t, os.MkdirAll(filepath.Dir(log), 0o755))
	require.NoError(t, os.WriteFile(log, []byte("<b>claimed api</b>\n"+strings.Repeat("x", agentLogTail)+"the end\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "secret.json"), []byte("key"), 0o600))
	list := []agents.Status{{Name: "b1", Role: "builder", State: agents.Running, Pid: 42, Restarts: 1, LastExit: "signal: killed", Log: log}}
	h := New(Options{Agents: func() []agents.Status { return list }}).Handler()

	_, body, _ := getCI(t, h, "/api/view")
	var b Board
	require.NoError(t, json.Unmarshal([]byte(body), &b))
	assert.Equal(t, list, b.Agents)

	code, body, hdr := getCI(t, h, "/agents/b1/log")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "text/plain; charset=utf-8", hdr.Get("Content-Type"))
	assert.Len(t, body, agentLogTail, "the end of it")
	assert.True(t, strings.HasSuffix(body, "the end\n"))
	for _, bad := range []string{"/agents/b2/log", "/agents/..%2fsecret.json/log", "/agents/secret.json/log"} {
		code, _, _ := getCI(t, h, bad)
		assert.Equal(t, http.StatusNotFound, code, bad)
	}
	// An agent's log replaced by a link to foreman's key is not served.
	require.NoError(t, os.Remove(log))
	require.NoError(t, os.Symlink(filepath.Join(dir, "secret.json"), log))
	code, body, _ = getCI(t, h, "/agents/b1/log")
	assert.Equal(t, http.StatusNotFound, code)
	assert.NotContains(t, body, "key")
	_, body, _ = getCI(t, New(Options{}).Handler(), "/api/view")
	assert.NotContains(t, body, "agent_processes", "none without foreman up's agents")
}
