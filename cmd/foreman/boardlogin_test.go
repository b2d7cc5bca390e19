package main

import (
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
)

// TestBoardLoginSaysTheBoardsDecisionsInTheRoom runs foreman up, then
// foreman board-login with the operator's key: the link it prints signs a
// browser in, and a decision taken there (PAUSE) is said in the room by
// board-login, as the operator, and foreman answers OK. A builder's key,
// or a key file that does not exist, is refused in one line (and no key
// is made in its place).
func TestBoardLoginSaysTheBoardsDecisionsInTheRoom(t *testing.T) {
	w := newUpWorld(t)
	config := w.config("foreman", "127.0.0.1:0", "127.0.0.1:0", "journal", "", "")
	stdout, _, _, _ := startUp(t, config)
	out := stdout.String()
	room := regexp.MustCompile(`(?m) at (ws://127\.0\.0\.1:\d+) \(served here\)$`).FindStringSubmatch(out)
	require.NotNil(t, room, out)
	board := regexp.MustCompile(`(?m)^  board    (http://127\.0\.0\.1:\d+/)$`).FindStringSubmatch(out)
	require.NotNil(t, board, out)
	watch := roomPeer(t, room[1], "watch")

	missing := filepath.Join(w.dir, ".foreman", "olgaa.json")
	code, _, errOut := foreman(t, "board-login", config, "--identity", missing, "--board", board[1])
	oneLine(t, code, errOut, "board-login never makes a key")
	assert.NoFileExists(t, missing)

	b1, err := agentchat.NewIdentity("b1")
	require.NoError(t, err)
	b1Key := filepath.Join(w.dir, "b1.json")
	require.NoError(t, b1.Save(b1Key))
	code, _, errOut = foreman(t, "board-login", config, "--identity", b1Key, "--board", board[1], "--url", room[1])
	oneLine(t, code, errOut, b1.AgentID()+" is not an operator (roles.operators)")

	lout, lerr, _, _ := startAgent(t, strings.NewReader(""), "board-login", config, "--identity", filepath.Join(w.dir, ".foreman", "olga.json"),
		"--board", board[1], "--url", room[1])
	link := regexp.MustCompile(`(?m)^  (http://\S+#login=\S+)$`)
	deadline := time.After(upWait)
	for link.FindStringSubmatch(lout.String()) == nil {
		select {
		case <-deadline:
			t.Fatalf("board-login printed no link:\n%s\n%s", lout, lerr)
		case <-time.After(10 * time.Millisecond):
		}
	}
	u, err := url.Parse(link.FindStringSubmatch(lout.String())[1])
	require.NoError(t, err)
	assert.Contains(t, lout.String(), "Signed in to the board as "+w.operator.AgentID())

	// The page's part: trade the ticket, then decide.
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar}
	post := func(path, body string, headers ...string) (int, map[string]string) {
		req, err := http.NewRequest(http.MethodPost, board[1]+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := c.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		out := map[string]string{}
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	ticket := strings.TrimPrefix(u.Fragment, "login=")
	status, session := post("api/session", `{"ticket":"`+ticket+`"}`)
	require.Equal(t, http.StatusOK, status, session)
	status, ans := post("api/decide", `{"line":"PAUSE"}`, "X-Foreman-CSRF", session["csrf"])
	require.Equal(t, http.StatusAccepted, status, ans)
	watch.await("OK PAUSE")
	assert.Eventually(t, func() bool { return strings.Contains(lout.String(), "said: PAUSE") }, upWait, 10*time.Millisecond)
}
