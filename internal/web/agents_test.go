package web

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/agents"
)

// get fetches path as the page would (with its cookies).
func (b *browser) get(path string) (int, string, http.Header) {
	b.t.Helper()
	resp, err := b.c.Get(b.base + path)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return resp.StatusCode, string(body), resp.Header
}

// signIn signs op in to the board at base as foreman board-login does,
// and returns a browser holding its session.
func signIn(t *testing.T, base string, op *agentchat.Identity) *browser {
	t.Helper()
	ans, err := Login(t.Context(), base+"/", op)
	require.NoError(t, err)
	u, err := url.Parse(ans.URL)
	require.NoError(t, err)
	page := newBrowser(t, base)
	code, body := page.post("/api/session", map[string]string{"ticket": strings.TrimPrefix(u.Fragment, "login=")}, nil)
	require.Equal(t, http.StatusOK, code, body)
	return page
}

// The board lists the agents foreman up runs, and serves each one's log,
// as text, the end of it, to a signed-in operator only; no other file,
// whatever the name asked.
//
// The attack: the agents share foreman's network, so b2 asks the board
// for b1's log, which Landlock keeps from it in b1's workspace. Without a
// session it is refused, saying how to sign in (with the check removed,
// this test sees b1's log served to anyone).
func TestBoardShowsTheAgentsAndTheirLogs(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "b1", "agent.log")
	require.NoError(t, os.MkdirAll(filepath.Dir(log), 0o755))
	require.NoError(t, os.WriteFile(log, []byte("<b>claimed api</b>\n"+strings.Repeat("x", agentLogTail)+"the end\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "secret.json"), []byte("key"), 0o600))
	list := []agents.Status{{Name: "b1", Role: "builder", State: agents.Running, Pid: 42, Restarts: 1, LastExit: "signal: killed", Log: log}}
	op, err := agentchat.NewIdentity("olga")
	require.NoError(t, err)
	builder, err := agentchat.NewIdentity("b2")
	require.NoError(t, err)
	s := New(Options{Agents: func() []agents.Status { return list }, Operators: func() []string { return []string{op.AgentID()} }})
	ts := newTestServer(t, s)

	anyone := newBrowser(t, ts.URL)
	_, body, _ := anyone.get("/api/view")
	var b Board
	require.NoError(t, json.Unmarshal([]byte(body), &b))
	assert.Equal(t, list, b.Agents, "the agents are on the board for anyone")

	for _, path := range []string{"/agents/b1/log", "/agents/b2/log", "/agents/secret.json/log"} {
		code, body, _ := anyone.get(path)
		assert.Equal(t, http.StatusUnauthorized, code, path)
		assert.False(t, strings.Contains(body, "claimed api"), "%s: b1's log is served without a session", path)
		assert.True(t, body == notOperator+"\n", "%s: the refusal says how to sign in, not %.100q", path, body)
	}
	// A builder's key signs nobody in.
	_, err = Login(t.Context(), ts.URL+"/", builder)
	require.ErrorContains(t, err, "is not an operator")

	page := signIn(t, ts.URL, op)
	code, body, hdr := page.get("/agents/b1/log")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "text/plain; charset=utf-8", hdr.Get("Content-Type"))
	assert.Equal(t, "no-store", hdr.Get("Cache-Control"))
	assert.Len(t, body, agentLogTail, "the end of it")
	assert.True(t, strings.HasSuffix(body, "the end\n"))
	for _, bad := range []string{"/agents/b2/log", "/agents/..%2fsecret.json/log", "/agents/secret.json/log"} {
		code, _, _ := page.get(bad)
		assert.Equal(t, http.StatusNotFound, code, bad)
	}
	// An agent's log replaced by a link to foreman's key is not served.
	require.NoError(t, os.Remove(log))
	require.NoError(t, os.Symlink(filepath.Join(dir, "secret.json"), log))
	code, body, _ = page.get("/agents/b1/log")
	assert.Equal(t, http.StatusNotFound, code)
	assert.NotContains(t, body, "key")
	_, body, _ = getCI(t, New(Options{}).Handler(), "/api/view")
	assert.NotContains(t, body, "agent_processes", "none without foreman up's agents")
}

// An operator taken off roles.operators reads no more logs and takes no
// more decisions, though its board-login still runs (one check serves
// both: operatorOf).
func TestAnAgentsLogIsNoLongerAnOperatorsOnceRemoved(t *testing.T) {
	log := filepath.Join(t.TempDir(), "agent.log")
	require.NoError(t, os.WriteFile(log, []byte("b1's output\n"), 0o600))
	op, err := agentchat.NewIdentity("olga")
	require.NoError(t, err)
	var removed atomic.Bool
	operators := func() []string {
		if removed.Load() {
			return nil
		}
		return []string{op.AgentID()}
	}
	s := New(Options{Agents: func() []agents.Status { return []agents.Status{{Name: "b1", Log: log}} }, Operators: operators})
	ts := newTestServer(t, s)
	page := signIn(t, ts.URL, op)
	code, body, _ := page.get("/agents/b1/log")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "b1's output\n", body)
	_, session, _ := page.get("/api/session")
	var ans SessionAnswer
	require.NoError(t, json.Unmarshal([]byte(session), &ans))
	require.NotEmpty(t, ans.CSRF)
	removed.Store(true)
	code, body, _ = page.get("/agents/b1/log")
	assert.Equal(t, http.StatusForbidden, code)
	assert.Contains(t, body, "no longer an operator")
	code, refused := page.post("/api/decide", map[string]string{"line": "RESOLVE db"}, map[string]string{csrfHeader: ans.CSRF})
	assert.Equal(t, http.StatusForbidden, code)
	assert.Contains(t, refused["error"], "no longer an operator")
}
