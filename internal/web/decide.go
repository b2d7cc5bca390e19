package web

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/protocol"
)

// Decisions on the board (issue 48). The board never holds an operator's
// key and never speaks for anyone: a decision taken on it is said in the
// room by the operator's own `foreman board-login`, which holds the key,
// so the room carries the operator's signed line like any other (the
// transcript, the journal and the role checks are the room's, unchanged).
//
//  1. foreman board-login asks the board for a challenge and signs
//     loginMessage(host, challenge) with the operator's identity key. The
//     board checks the signature, that the key is the sender id claimed
//     (agentchat.AgentIDFor) and that the id is among roles.operators, and
//     answers with a one-time ticket and a relay token for that process.
//  2. The operator opens the board at #login=<ticket> (board-login prints
//     the URL); the page trades the ticket, once, within ticketLife, for a
//     session: an HttpOnly, SameSite=Strict cookie, and a CSRF token the
//     page sends in a header with each decision.
//  3. A decision (POST /api/decide, one operator command) is checked again
//     (session, CSRF token, same origin, the verb an operator's, the id
//     still an operator) and queued for that operator's board-login, which
//     fetches it with its relay token and says it in the room.
//
// A session lives as long as its board-login does: when the process stops
// asking for decisions (relayGone), its sessions end.

const (
	challengeLife = 2 * time.Minute  // a challenge must be signed within this
	ticketLife    = 2 * time.Minute  // a ticket must be opened within this
	relayWait     = 20 * time.Second // a relay's request waits this long for a decision
	relayGone     = 45 * time.Second // a relay that has not asked for this long has stopped
	maxQueued     = 16               // decisions waiting for one relay
	sessionCookie = "foreman_board_session"
	csrfHeader    = "X-Foreman-CSRF"
)

// loginMessage is what an operator's key signs to sign in: the purpose,
// the board's host as the operator reached it (so a signature given to
// another board is no good here: the board takes only its own names,
// never the name a request says it was sent to), and the board's
// challenge.
func loginMessage(host, challenge string) []byte {
	return []byte("foreman board login\n" + host + "\n" + challenge)
}

// relay is one running foreman board-login: an operator's way into the room.
type relay struct {
	operator string
	token    string
	queue    []string
	wake     chan struct{} // closed and replaced when a decision is queued
	lastSeen time.Time     // when it last asked for decisions
}

type session struct {
	relay *relay
	csrf  string
}

// decisions holds the board's sign-ins.
type decisions struct {
	mu sync.Mutex
	// A challenge is its expiry and a MAC of it under key: the board keeps
	// nothing for the challenges it gives, so asking for any number of them
	// pushes none out, and used holds only those an operator signed in
	// with, until they expire.
	key      []byte
	used     map[string]time.Time // challenge -> expiry
	tickets  map[string]ticket
	relays   map[string]*relay   // by token
	sessions map[string]*session // by cookie
}

type ticket struct {
	relay   *relay
	expires time.Time
}

// prune forgets the relays that stopped and their sessions, and the
// tickets never used: a sign-in adds to them, and nothing else ends them.
// d.mu is held.
func (d *decisions) prune(now time.Time) {
	for tok, rl := range d.relays {
		if now.Sub(rl.lastSeen) > relayGone {
			delete(d.relays, tok)
		}
	}
	for c, se := range d.sessions {
		if d.relays[se.relay.token] == nil {
			delete(d.sessions, c)
		}
	}
	for t, tk := range d.tickets {
		if now.After(tk.expires) {
			delete(d.tickets, t)
		}
	}
	for c, exp := range d.used {
		if now.After(exp) {
			delete(d.used, c)
		}
	}
}

func newDecisions() *decisions {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	return &decisions{key: key, used: map[string]time.Time{}, tickets: map[string]ticket{},
		relays: map[string]*relay{}, sessions: map[string]*session{}}
}

// challengeSize is a challenge's bytes: its expiry (Unix nanoseconds),
// 16 random bytes, and the first 16 bytes of the HMAC-SHA256 of both.
const challengeSize = 8 + 16 + 16

// challenge makes a challenge that expires at exp.
func (d *decisions) challenge(exp time.Time) string {
	b := make([]byte, challengeSize)
	binary.BigEndian.PutUint64(b, uint64(exp.UnixNano()))
	_, _ = rand.Read(b[8:24])
	copy(b[24:], d.mac(b[:24]))
	return base64.RawURLEncoding.EncodeToString(b)
}

func (d *decisions) mac(b []byte) []byte {
	m := hmac.New(sha256.New, d.key)
	m.Write(b)
	return m.Sum(nil)[:16]
}

// expiry reads a challenge this board made: when it expires, or false
// when it is not this board's.
func (d *decisions) expiry(c string) (time.Time, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) != challengeSize || !hmac.Equal(b[24:], d.mac(b[:24])) {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(b))), true
}

func secret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (s *Server) operators() []string {
	if s.opts.Operators == nil {
		return nil
	}
	return s.opts.Operators()
}

// refuse answers a request the board will not serve, with why and what to do.
func refuse(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, map[string]string{"error": fmt.Sprintf(format, args...)})
}

// serveChallenge is GET /api/login/challenge.
func (s *Server) serveChallenge(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"challenge": s.dec.challenge(s.opts.Now().Add(challengeLife))})
}

// LoginRequest is what foreman board-login sends, signed.
type LoginRequest struct {
	ID        string `json:"id"`         // the operator's sender id
	PublicKey string `json:"public_key"` // its key, as the PEM text its id is made from
	Challenge string `json:"challenge"`
	Signature string `json:"signature"` // base64 of the Ed25519 signature over loginMessage
}

// LoginAnswer is the board's answer to a signed login.
type LoginAnswer struct {
	URL   string `json:"url"`   // open this, once, within ticketLife
	Relay string `json:"relay"` // the relay token: ask /api/relay for decisions with it
}

// serveLogin is POST /api/login: a signed challenge in, a ticket out.
func (s *Server) serveLogin(w http.ResponseWriter, r *http.Request) {
	var req LoginRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<10)).Decode(&req); err != nil {
		refuse(w, http.StatusBadRequest, "the login is not JSON: %v", err)
		return
	}
	d := s.dec
	exp, ok := d.expiry(req.Challenge)
	if !ok || s.opts.Now().After(exp) {
		refuse(w, http.StatusUnauthorized, "the challenge is not this board's, or expired; run foreman board-login again")
		return
	}
	if !s.named(r.Host) {
		refuse(w, http.StatusForbidden, "this board is not %s to sign in at (it is %s); reach it by one of those, or list the name operators use under http.names",
			r.Host, strings.Join(s.ownNames(), ", "))
		return
	}
	pub, err := agentchat.ParsePublicPEM(req.PublicKey)
	if err != nil {
		refuse(w, http.StatusBadRequest, "public_key: %v", err)
		return
	}
	if agentchat.AgentIDFor(req.PublicKey) != req.ID {
		refuse(w, http.StatusForbidden, "the key is not %s's (its sender id is %s)", req.ID, agentchat.AgentIDFor(req.PublicKey))
		return
	}
	sig, err := base64.StdEncoding.DecodeString(req.Signature)
	if err != nil || !ed25519.Verify(pub, loginMessage(r.Host, req.Challenge), sig) {
		refuse(w, http.StatusForbidden, "the signature does not verify for this board (%s); sign in with foreman board-login", r.Host)
		return
	}
	if !slices.Contains(s.operators(), req.ID) {
		refuse(w, http.StatusForbidden, "%s is not an operator (roles.operators): only an operator decides on the board", req.ID)
		return
	}
	rl := &relay{operator: req.ID, token: secret(), wake: make(chan struct{}), lastSeen: s.opts.Now()}
	t := secret()
	d.mu.Lock()
	d.prune(s.opts.Now())
	if _, used := d.used[req.Challenge]; used {
		d.mu.Unlock()
		refuse(w, http.StatusUnauthorized, "the challenge was used to sign in already; run foreman board-login again")
		return
	}
	d.used[req.Challenge] = exp
	d.relays[rl.token] = rl
	d.tickets[t] = ticket{relay: rl, expires: s.opts.Now().Add(ticketLife)}
	d.mu.Unlock()
	s.opts.Logger.Info().Str("operator", req.ID).Msg("an operator signed in to decide on the board")
	u := url.URL{Scheme: "http", Host: r.Host, Path: "/", Fragment: "login=" + t}
	if r.TLS != nil {
		u.Scheme = "https"
	}
	writeJSON(w, http.StatusOK, LoginAnswer{URL: u.String(), Relay: rl.token})
}

// notSignedIn is why a request without a session is refused.
const notSignedIn = "not signed in: to decide here, run foreman board-login and open the URL it prints"

// sessionOf returns the live session of a request, or nil and why not.
func (s *Server) sessionOf(r *http.Request) (*session, string) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil, notSignedIn
	}
	d := s.dec
	d.mu.Lock()
	defer d.mu.Unlock()
	se := d.sessions[c.Value]
	if se == nil {
		return nil, notSignedIn
	}
	if s.opts.Now().Sub(se.relay.lastSeen) > relayGone || d.relays[se.relay.token] == nil {
		delete(d.sessions, c.Value)
		return nil, "signed out: the foreman board-login that signed this browser in has stopped; run it again and open the URL it prints"
	}
	return se, ""
}

// operatorOf is r's session when its operator still is one
// (roles.operators): what a decision and an agent's log both ask. Else
// nil, the status to answer and why.
func (s *Server) operatorOf(r *http.Request) (*session, int, string) {
	se, why := s.sessionOf(r)
	if se == nil {
		return nil, http.StatusUnauthorized, why
	}
	if !slices.Contains(s.operators(), se.relay.operator) {
		return nil, http.StatusForbidden, se.relay.operator + " is no longer an operator (roles.operators)"
	}
	return se, 0, ""
}

// SessionAnswer tells the page who decides, and the token to send back;
// empty when nobody is signed in on this browser.
type SessionAnswer struct {
	Operator string `json:"operator,omitempty"`
	CSRF     string `json:"csrf,omitempty"`
}

// serveSession is GET /api/session (who is signed in on this browser) and
// POST /api/session (a ticket traded for a session).
func (s *Server) serveSession(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		// Not signed in is an answer, not an error: a browser reports
		// every failed request as a page error.
		var ans SessionAnswer
		if se, _ := s.sessionOf(r); se != nil {
			ans = SessionAnswer{Operator: se.relay.operator, CSRF: se.csrf}
		}
		writeJSON(w, http.StatusOK, ans)
		return
	}
	if !sameOrigin(r) {
		refuse(w, http.StatusForbidden, "a request from another site (Origin %q): the board takes sign-ins only from its own page", r.Header.Get("Origin"))
		return
	}
	var req struct {
		Ticket string `json:"ticket"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10)).Decode(&req); err != nil {
		refuse(w, http.StatusBadRequest, "the sign-in is not JSON: %v", err)
		return
	}
	d := s.dec
	d.mu.Lock()
	t, ok := d.tickets[req.Ticket]
	delete(d.tickets, req.Ticket) // once
	var se *session
	cookie := secret()
	if ok && s.opts.Now().Before(t.expires) {
		se = &session{relay: t.relay, csrf: secret()}
		d.sessions[cookie] = se
	}
	d.mu.Unlock()
	if se == nil {
		refuse(w, http.StatusUnauthorized, "the sign-in link is unknown, used or expired; run foreman board-login again for a new one")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: cookie, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	writeJSON(w, http.StatusOK, SessionAnswer{Operator: se.relay.operator, CSRF: se.csrf})
}

// sameOrigin reports whether a browser's request comes from the board's
// own page: an Origin, when sent (browsers send it with every POST), must
// be this host.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return r.Header.Get("Sec-Fetch-Site") == "" || r.Header.Get("Sec-Fetch-Site") == "same-origin"
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// DecideAnswer says what became of a decision.
type DecideAnswer struct {
	Queued string `json:"queued"` // the line, as it will be said
	By     string `json:"by"`     // the operator who says it
}

// serveDecide is POST /api/decide: one operator command, said in the room
// by the signed-in operator's foreman board-login.
func (s *Server) serveDecide(w http.ResponseWriter, r *http.Request) {
	se, code, why := s.operatorOf(r)
	if se == nil {
		refuse(w, code, "%s", why)
		return
	}
	if !sameOrigin(r) {
		refuse(w, http.StatusForbidden, "a request from another site (Origin %q): decisions are taken only on the board's own page", r.Header.Get("Origin"))
		return
	}
	if got := r.Header.Get(csrfHeader); subtle.ConstantTimeCompare([]byte(got), []byte(se.csrf)) != 1 {
		refuse(w, http.StatusForbidden, "the request lacks the page's %s token: decide from the board's page", csrfHeader)
		return
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		refuse(w, http.StatusUnsupportedMediaType, "a decision is JSON: {\"line\": \"RESOLVE c note\"}")
		return
	}
	var req struct {
		Line string `json:"line"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10)).Decode(&req); err != nil {
		refuse(w, http.StatusBadRequest, "the decision is not JSON: %v", err)
		return
	}
	line, err := operatorLine(req.Line)
	if err != nil {
		refuse(w, http.StatusBadRequest, "%v", err)
		return
	}
	op := se.relay.operator
	d := s.dec
	d.mu.Lock()
	rl := se.relay
	full := len(rl.queue) >= maxQueued
	if !full {
		rl.queue = append(rl.queue, line)
		close(rl.wake)
		rl.wake = make(chan struct{})
	}
	d.mu.Unlock()
	if full {
		refuse(w, http.StatusServiceUnavailable, "%d decisions are waiting for your foreman board-login already; is it still running?", maxQueued)
		return
	}
	s.opts.Logger.Info().Str("operator", op).Str("line", line).Msg("a decision taken on the board")
	writeJSON(w, http.StatusAccepted, DecideAnswer{Queued: line, By: op})
}

// operatorLine reads one decision as the room would: one line, well
// formed, and one of an operator's own commands (contract section 2).
func operatorLine(raw string) (string, error) {
	line := strings.TrimSpace(protocol.CleanText(raw, protocol.MaxText))
	cmd, err := protocol.Read(line)
	switch {
	case err != nil:
		return "", err
	case !cmd.Verb.IsOperatorCommand():
		return "", fmt.Errorf("%q is not an operator command (%s)", line, verbList())
	}
	return line, nil
}

// verbList names the operator's commands.
func verbList() string {
	var names []string
	for _, v := range protocol.Verbs() {
		if v.IsOperatorCommand() {
			names = append(names, v.String())
		}
	}
	return strings.Join(names, ", ")
}

// RelayAnswer is what a relay is handed: the decisions to say, in order.
type RelayAnswer struct {
	Lines []string `json:"lines"`
}

// serveRelay is GET /api/relay: a board-login's long wait for decisions.
func (s *Server) serveRelay(w http.ResponseWriter, r *http.Request) {
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	d := s.dec
	d.mu.Lock()
	rl := d.relays[token]
	if rl != nil {
		rl.lastSeen = s.opts.Now()
	}
	d.mu.Unlock()
	if rl == nil || token == "" {
		refuse(w, http.StatusUnauthorized, "unknown relay token: run foreman board-login again")
		return
	}
	timer := time.NewTimer(relayWait)
	defer timer.Stop()
	for {
		d.mu.Lock()
		lines, wake := rl.queue, rl.wake
		rl.queue = nil
		rl.lastSeen = s.opts.Now()
		d.mu.Unlock()
		if len(lines) > 0 {
			writeJSON(w, http.StatusOK, RelayAnswer{Lines: lines})
			return
		}
		select {
		case <-wake:
		case <-timer.C:
			writeJSON(w, http.StatusOK, RelayAnswer{})
			return
		case <-r.Context().Done():
			return
		}
	}
}

// Login signs in to the board at boardURL as id (an operator's identity):
// it answers the board's challenge and returns the URL to open and the
// relay token for Relay.
func Login(ctx context.Context, boardURL string, id *agentchat.Identity) (LoginAnswer, error) {
	base, err := url.Parse(boardURL)
	if err != nil || base.Host == "" {
		return LoginAnswer{}, fmt.Errorf("the board's URL %q is not a URL like http://127.0.0.1:8080/", boardURL)
	}
	var ch struct{ Challenge string }
	if err := call(ctx, http.MethodGet, base.JoinPath("api/login/challenge").String(), "", nil, &ch); err != nil {
		return LoginAnswer{}, err
	}
	req := LoginRequest{ID: id.AgentID(), PublicKey: id.PublicPEM(), Challenge: ch.Challenge,
		Signature: base64.StdEncoding.EncodeToString(id.Sign(loginMessage(base.Host, ch.Challenge)))}
	var ans LoginAnswer
	err = call(ctx, http.MethodPost, base.JoinPath("api/login").String(), "", req, &ans)
	return ans, err
}

// Relay says in the room, with say, each decision the operator takes on
// the board, until ctx ends or the board refuses the token.
func Relay(ctx context.Context, boardURL, token string, say func(line string) error) error {
	base, err := url.Parse(boardURL)
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		var ans RelayAnswer
		if err := call(ctx, http.MethodGet, base.JoinPath("api/relay").String(), token, nil, &ans); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		for _, l := range ans.Lines {
			// Read again here: what is said is signed with the
			// operator's key, and whatever answers at boardURL (another
			// process on the port, a mistyped --board) may send anything.
			line, err := operatorLine(l)
			if err != nil {
				return fmt.Errorf("the board at %s asked to say what no board of foreman's would (%v): nothing said; signed out", boardURL, err)
			}
			if err := say(line); err != nil {
				return err
			}
		}
	}
	return nil
}

// call makes one JSON request to the board; a refusal comes back as its
// one-line reason.
func call(ctx context.Context, method, u, token string, in, out any) error {
	var body *strings.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = strings.NewReader(string(b))
	} else {
		body = strings.NewReader("")
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the board: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		if json.NewDecoder(resp.Body).Decode(&e) == nil && e.Error != "" {
			return fmt.Errorf("the board refused: %s", e.Error)
		}
		return fmt.Errorf("the board answered %s at %s", resp.Status, u)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// ownNames are the hosts this board answers sign-ins at: where it listens
// (as 127.0.0.1, localhost and [::1] too when that is this machine's
// loopback or every interface) and the names the configuration gives it
// (http.names: behind a proxy, or reached by a name). A signed login
// names the host its board-login reached; a host the board does not know
// as its own is refused, whatever the request's Host header says, so a
// board that passed this one's challenge on cannot sign in here with the
// signature it was given.
func (s *Server) ownNames() []string {
	names := slices.Clone(s.opts.Names)
	if a, _ := s.addr.Load().(*net.TCPAddr); a != nil {
		port := strconv.Itoa(a.Port)
		if a.IP.IsLoopback() || a.IP.IsUnspecified() {
			names = append(names, net.JoinHostPort("127.0.0.1", port), net.JoinHostPort("localhost", port), net.JoinHostPort("::1", port))
		}
		if !a.IP.IsUnspecified() && !a.IP.Equal(net.IPv4(127, 0, 0, 1)) {
			names = append(names, net.JoinHostPort(a.IP.String(), port))
		}
	}
	return names
}

func (s *Server) named(host string) bool {
	return slices.ContainsFunc(s.ownNames(), func(n string) bool { return strings.EqualFold(n, host) })
}
