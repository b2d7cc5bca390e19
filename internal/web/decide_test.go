package web

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
)

// browser is a client with a cookie jar, as the board's page is.
type browser struct {
	t    *testing.T
	c    *http.Client
	base string
}

func newBrowser(t *testing.T, base string) *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &browser{t: t, c: &http.Client{Jar: jar}, base: strings.TrimSuffix(base, "/")}
}

// post sends JSON as the board's page does (same origin), with the given
// extra headers; it returns the status and the refusal, if any.
func (b *browser) post(path string, body any, headers map[string]string) (int, map[string]string) {
	b.t.Helper()
	data, err := json.Marshal(body)
	require.NoError(b.t, err)
	req, err := http.NewRequest(http.MethodPost, b.base+path, strings.NewReader(string(data)))
	require.NoError(b.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", b.base)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := b.c.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	out := map[string]string{}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func componentState(t *testing.T, lb *liveBuild, name string) string {
	t.Helper()
	v, err := lb.board.source().View(context.Background())
	require.NoError(t, err)
	for _, c := range v.Components {
		if c.Name == name {
			return c.State
		}
	}
	return ""
}

// TestDecisionsOnTheBoard: an operator signed in with its key decides on
// the board, and its foreman board-login says the decision in the room as
// the operator: the coordinator answers OK and the held component is
// released. Everyone else is refused, each with its reason: no session, a
// builder's key, a key that is not the id it claims, a signature made for
// another board, a ticket used twice, a request from another site or
// without the page's token, a line that is not an operator's command.
func TestDecisionsOnTheBoard(t *testing.T) {
	lb := startLiveBuild(t, []coordinator.Component{{Name: "db"}, {Name: "api", Deps: []string{"db"}}}, "b1", "operator")
	lb.expect("TASKS db")
	lb.say("b1", "CLAIM db")
	lb.expect("ACK db")
	lb.say("b1", "ABORT db missing_dependency: nobody said which database")
	lb.expect("ESCALATE db hard-blocker")
	require.Equal(t, "held", componentState(t, lb, "db"))
	ctx := t.Context()
	resolve := map[string]string{"line": "RESOLVE db use postgres"}

	// Nobody signed in.
	anon := newBrowser(t, lb.URL)
	code, body := anon.post("/api/decide", resolve, nil)
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Contains(t, body["error"], "foreman board-login")

	// A builder's key is not an operator's.
	_, err := Login(ctx, lb.URL, lb.agents["b1"].key)
	require.Error(t, err)
	assert.Contains(t, err.Error(), lb.id("b1")+" is not an operator (roles.operators)")

	// A builder's key claiming the operator's id.
	challenge := func() string {
		var ch struct{ Challenge string }
		require.NoError(t, call(ctx, http.MethodGet, lb.URL+"api/login/challenge", "", nil, &ch))
		return ch.Challenge
	}
	host := strings.TrimSuffix(strings.TrimPrefix(lb.URL, "http://"), "/")
	b1 := lb.agents["b1"].key
	c := challenge()
	err = call(ctx, http.MethodPost, lb.URL+"api/login", "", LoginRequest{ID: lb.id("operator"), PublicKey: b1.PublicPEM(), Challenge: c,
		Signature: base64.StdEncoding.EncodeToString(b1.Sign(loginMessage(host, c)))}, &LoginAnswer{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the key is not "+lb.id("operator")+"'s")

	// The operator's signature, made for another board (a board that
	// passed this one's challenge on), is no good here.
	op := lb.agents["operator"].key
	c = challenge()
	signed := LoginRequest{ID: op.AgentID(), PublicKey: op.PublicPEM(), Challenge: c,
		Signature: base64.StdEncoding.EncodeToString(op.Sign(loginMessage("board.example:8080", c)))}
	err = call(ctx, http.MethodPost, lb.URL+"api/login", "", signed, &LoginAnswer{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the signature does not verify for this board")
	// Nor is it good here sent with the other board's name as its Host:
	// the board signs in at its own names only.
	err = callHost(ctx, lb.URL+"api/login", "board.example:8080", signed)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "this board is not board.example:8080 to sign in at")
	// Nor is a challenge an operator signed in with already.
	signed.Signature = base64.StdEncoding.EncodeToString(op.Sign(loginMessage(host, c)))
	require.NoError(t, call(ctx, http.MethodPost, lb.URL+"api/login", "", signed, &LoginAnswer{}))
	err = call(ctx, http.MethodPost, lb.URL+"api/login", "", signed, &LoginAnswer{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the challenge was used to sign in already")
	// Nor a challenge the board did not make.
	forged := signed
	forged.Challenge = strings.Repeat("A", len(c))
	forged.Signature = base64.StdEncoding.EncodeToString(op.Sign(loginMessage(host, forged.Challenge)))
	err = call(ctx, http.MethodPost, lb.URL+"api/login", "", forged, &LoginAnswer{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the challenge is not this board's")

	// The operator signs in; its board-login says what is decided.
	ans, err := Login(ctx, lb.URL, op)
	require.NoError(t, err)
	u, err := url.Parse(ans.URL)
	require.NoError(t, err)
	ticket, ok := strings.CutPrefix(u.Fragment, "login=")
	require.True(t, ok, "the URL to open carries a ticket: %s", ans.URL)
	assert.Equal(t, lb.URL, (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String())
	relayed := make(chan error, 1)
	go func() {
		relayed <- Relay(ctx, lb.URL, ans.Relay, func(line string) error { lb.say("operator", line); return nil })
	}()

	// A page of another site cannot trade the ticket.
	evil := map[string]string{"Origin": "http://evil.example"}
	code, body = anon.post("/api/session", map[string]string{"ticket": ticket}, evil)
	assert.Equal(t, http.StatusForbidden, code)
	assert.Contains(t, body["error"], "another site")

	page := newBrowser(t, lb.URL)
	code, body = page.post("/api/session", map[string]string{"ticket": ticket}, nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, op.AgentID(), body["operator"])
	csrf := body["csrf"]
	require.NotEmpty(t, csrf)
	code, body = anon.post("/api/session", map[string]string{"ticket": ticket}, nil)
	assert.Equal(t, http.StatusUnauthorized, code, "a ticket is good once")
	assert.Contains(t, body["error"], "used or expired")

	// The session's cookie alone (a forged cross-site request carries it)
	// is not enough: the page's token must come too, from the page's origin.
	code, body = page.post("/api/decide", resolve, nil)
	assert.Equal(t, http.StatusForbidden, code)
	assert.Contains(t, body["error"], "X-Foreman-CSRF")
	code, body = page.post("/api/decide", resolve, map[string]string{csrfHeader: csrf, "Origin": "http://evil.example"})
	assert.Equal(t, http.StatusForbidden, code)
	assert.Contains(t, body["error"], "another site")
	code, body = page.post("/api/decide", map[string]string{"line": "CLAIM db"}, map[string]string{csrfHeader: csrf})
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body["error"], "not an operator command")
	require.Equal(t, "held", componentState(t, lb, "db"), "nothing refused reached the build")

	// The decision.
	code, body = page.post("/api/decide", resolve, map[string]string{csrfHeader: csrf})
	require.Equal(t, http.StatusAccepted, code, body)
	assert.Equal(t, "RESOLVE db use postgres", body["queued"])
	lb.expect("OK RESOLVE db")
	assert.Equal(t, "pending", componentState(t, lb, "db"), "released from its hold")
	lb.expect("TASKS db")
	lb.board.mu.Lock()
	var from []string
	for _, e := range lb.board.log.since(0) {
		if strings.HasPrefix(e.Text, "RESOLVE db") {
			from = append(from, e.From)
		}
	}
	lb.board.mu.Unlock()
	assert.Equal(t, []string{op.AgentID()}, from, "said once, in the room, by the operator")
	select {
	case err := <-relayed:
		t.Fatalf("the relay stopped: %v", err)
	default:
	}
}

// TestBrowserDecides: the operator opens the link foreman board-login
// printed, picks RESOLVE for the held component on the board, and its
// board-login says it in the room: foreman answers OK and the card leaves
// its hold. The ticket leaves the address bar.
func TestBrowserDecides(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	requireChromium(t)
	lb := startLiveBuild(t, []coordinator.Component{{Name: "db"}, {Name: "api", Deps: []string{"db"}}}, "b1", "operator")
	lb.expect("TASKS db")
	lb.say("b1", "CLAIM db")
	lb.expect("ACK db")
	lb.say("b1", "ABORT db missing_dependency: nobody said which database")
	lb.expect("ESCALATE db hard-blocker")
	ctx := t.Context()
	ans, err := Login(ctx, lb.URL, lb.agents["operator"].key)
	require.NoError(t, err)
	go func() {
		_ = Relay(ctx, lb.URL, ans.Relay, func(line string) error { lb.say("operator", line); return nil })
	}()

	p := openPage(t, ans.URL)
	p.waitFor("signed in", `!document.getElementById('decide').hidden`)
	assert.Equal(t, "operator", p.text("#decider"), "who decides, by name")
	assert.Equal(t, "", p.eval(`location.hash`), "the ticket is out of the address bar")
	assert.True(t, p.eval(`String(document.getElementById('decide-hint').hidden)`) == "true")
	p.waitFor("db offered", `document.getElementById('decide-subject').value === 'db'`)
	p.eval(`String(document.getElementById('decide-arg').value = 'use postgres')`)
	p.do(chromedp.Click("#decide-say"))
	p.waitFor("foreman's OK in the room log", `[...document.querySelectorAll('#log li.said .text')].some(e => e.textContent === 'OK RESOLVE db use postgres')`)
	p.waitFor("the operator's line in the room log", `[...document.querySelectorAll('#log li.heard')].some(li => li.querySelector('.text').textContent === 'RESOLVE db use postgres' && li.querySelector('.who').dataset.id === '`+lb.id("operator")+`')`)
	p.waitState("db", "pending")
	lb.expect("OK RESOLVE db")
	p.screenshot("board-decided.png")

	p.mu.Lock()
	defer p.mu.Unlock()
	assert.Empty(t, p.console, "the page reported errors")
}

// clock is a time the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestBoardSignInsExpire, on a clock the test moves: a challenge signed
// too late, a link opened too late, and a session whose board-login has
// stopped asking for decisions are each refused, saying so; a moment
// before, each is taken.
func TestBoardSignInsExpire(t *testing.T) {
	op, err := agentchat.NewIdentity("olga")
	require.NoError(t, err)
	clk := &clock{now: t0}
	s := New(Options{Now: clk.Now, Operators: func() []string { return []string{op.AgentID()} }})
	s.Attach(&fakeSource{view: shopView(), health: healthy()})
	ts := newTestServer(t, s)
	base := ts.URL + "/"
	host := strings.TrimPrefix(ts.URL, "http://")
	ctx := t.Context()

	signIn := func(after time.Duration) (LoginAnswer, error) {
		var ch struct{ Challenge string }
		require.NoError(t, call(ctx, http.MethodGet, base+"api/login/challenge", "", nil, &ch))
		clk.add(after)
		var ans LoginAnswer
		err := call(ctx, http.MethodPost, base+"api/login", "", LoginRequest{ID: op.AgentID(), PublicKey: op.PublicPEM(), Challenge: ch.Challenge,
			Signature: base64.StdEncoding.EncodeToString(op.Sign(loginMessage(host, ch.Challenge)))}, &ans)
		return ans, err
	}
	_, err = signIn(challengeLife + time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the challenge is not this board's, or expired")
	_, err = signIn(challengeLife - time.Second)
	require.NoError(t, err, "a challenge signed in time")

	trade := func(ans LoginAnswer, after time.Duration) (*browser, int, map[string]string) {
		clk.add(after)
		u, err := url.Parse(ans.URL)
		require.NoError(t, err)
		page := newBrowser(t, base)
		code, body := page.post("/api/session", map[string]string{"ticket": strings.TrimPrefix(u.Fragment, "login=")}, nil)
		return page, code, body
	}
	ans, err := signIn(0)
	require.NoError(t, err)
	_, code, body := trade(ans, ticketLife+time.Second)
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Contains(t, body["error"], "used or expired")

	ans, err = signIn(0)
	require.NoError(t, err)
	page, code, session := trade(ans, ticketLife-time.Second)
	require.Equal(t, http.StatusOK, code, session)
	// The board-login asked for decisions when it signed in, and not since.
	clk.add(relayGone - ticketLife)
	code, body = page.post("/api/decide", map[string]string{"line": "PAUSE"}, map[string]string{csrfHeader: session["csrf"]})
	assert.Equal(t, http.StatusAccepted, code, "the board-login was heard from %v ago: %v", relayGone-time.Second, body)
	clk.add(2 * time.Second)
	code, body = page.post("/api/decide", map[string]string{"line": "RESUME"}, map[string]string{csrfHeader: session["csrf"]})
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Contains(t, body["error"], "the foreman board-login that signed this browser in has stopped")
}

// callHost posts a login with the Host header set to host, as a board
// that relays another's challenge would send it.
func callHost(ctx context.Context, u, host string, login LoginRequest) error {
	data, err := json.Marshal(login)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(string(data)))
	if err != nil {
		return err
	}
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var e struct{ Error string }
	_ = json.NewDecoder(resp.Body).Decode(&e)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the board refused (%d): %s", resp.StatusCode, e.Error)
	}
	return nil
}

// TestChallengesCannotBePushedOut: anyone may ask for challenges, as many
// as they like; none of them pushes out the one an operator is signing.
// (When the board kept its last 64, 64 asked by a stranger meanwhile made
// the operator's sign-in fail.)
func TestChallengesCannotBePushedOut(t *testing.T) {
	op, err := agentchat.NewIdentity("olga")
	require.NoError(t, err)
	s := New(Options{Operators: func() []string { return []string{op.AgentID()} }})
	s.Attach(&fakeSource{view: shopView(), health: healthy()})
	ts := newTestServer(t, s)
	base := ts.URL + "/"
	ctx := t.Context()
	var mine struct{ Challenge string }
	require.NoError(t, call(ctx, http.MethodGet, base+"api/login/challenge", "", nil, &mine))
	for range 1000 {
		var other struct{ Challenge string }
		require.NoError(t, call(ctx, http.MethodGet, base+"api/login/challenge", "", nil, &other))
	}
	host := strings.TrimPrefix(ts.URL, "http://")
	err = call(ctx, http.MethodPost, base+"api/login", "", LoginRequest{ID: op.AgentID(), PublicKey: op.PublicPEM(), Challenge: mine.Challenge,
		Signature: base64.StdEncoding.EncodeToString(op.Sign(loginMessage(host, mine.Challenge)))}, &LoginAnswer{})
	require.NoError(t, err, "the operator's challenge, after 1,000 asked by others")
}

// TestTheBoardSignsInAtItsOwnNames: a board behind a proxy is reached by
// the name the configuration gives it (http.names), and by where it
// listens; a name it was not given is refused, saying which it has.
func TestTheBoardSignsInAtItsOwnNames(t *testing.T) {
	op, err := agentchat.NewIdentity("olga")
	require.NoError(t, err)
	s := New(Options{Operators: func() []string { return []string{op.AgentID()} }, Names: []string{"Board.Example"}})
	s.Attach(&fakeSource{view: shopView(), health: healthy()})
	ts := newTestServer(t, s)
	ctx := t.Context()
	_, port, err := net.SplitHostPort(ts.Listener.Addr().String())
	require.NoError(t, err)
	for host, ok := range map[string]bool{
		"board.example": true, "localhost:" + port: true, "127.0.0.1:" + port: true, "[::1]:" + port: true,
		"board.example:8080": false, "evil.example": false, "localhost:1": false,
	} {
		var ch struct{ Challenge string }
		require.NoError(t, call(ctx, http.MethodGet, ts.URL+"/api/login/challenge", "", nil, &ch))
		err := callHost(ctx, ts.URL+"/api/login", host, LoginRequest{ID: op.AgentID(), PublicKey: op.PublicPEM(), Challenge: ch.Challenge,
			Signature: base64.StdEncoding.EncodeToString(op.Sign(loginMessage(host, ch.Challenge)))})
		if ok {
			assert.NoError(t, err, host)
		} else if assert.Error(t, err, host) {
			assert.Contains(t, err.Error(), "this board is not "+host+" to sign in at (it is Board.Example, 127.0.0.1:"+port)
		}
	}
}
