package web

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/agents"
)

// TestBrowserShowsTheAgentsLogsToAnOperator: the board lists the agents
// foreman up runs for anyone, and says their logs need a sign-in; the
// operator who signed in with foreman board-login gets a link to each, and
// the page reads it with the session.
func TestBrowserShowsTheAgentsLogsToAnOperator(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	requireChromium(t)
	log := filepath.Join(t.TempDir(), "agent.log")
	require.NoError(t, os.WriteFile(log, []byte("b1 claimed api\n"), 0o600))
	op, err := agentchat.NewIdentity("olga")
	require.NoError(t, err)
	s := New(Options{Agents: func() []agents.Status {
		return []agents.Status{{Name: "b1", Role: "builder", State: agents.Running, Pid: 42, Log: log}}
	},
		Operators: func() []string { return []string{op.AgentID()} }})
	s.Attach(&fakeSource{view: shopView(), health: healthy()})
	ts := newTestServer(t, s)

	anyone := openPage(t, ts.URL+"/")
	anyone.waitFor("the agents", `!document.getElementById('agents').hidden`)
	anyone.waitFor("b1 listed, its log behind a sign-in", `document.querySelector('#agents-list li')?.textContent.includes('log: sign in to read')`)
	assert.Equal(t, "0", anyone.eval(`String(document.querySelectorAll('#agents-list a').length)`), "no link to a log it cannot read")

	ans, err := Login(t.Context(), ts.URL+"/", op)
	require.NoError(t, err)
	p := anyone // the same browser, signed in: one browser started, not two
	p.do(chromedp.Navigate("about:blank"), chromedp.Navigate(ans.URL))
	p.waitFor("signed in", `!document.getElementById('decide').hidden`)
	p.waitFor("the link to b1's log", `document.querySelector('#agents-list a')?.getAttribute('href') === 'agents/b1/log'`)
	assert.Equal(t, "200 b1 claimed api\n", p.evalAsync(`fetch(document.querySelector('#agents-list a').href).then(async r => r.status + ' ' + await r.text())`))

	p.mu.Lock()
	defer p.mu.Unlock()
	assert.Empty(t, p.console, "the page reported errors")
}
