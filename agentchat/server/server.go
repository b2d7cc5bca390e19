// Package server is an AgentChat-compatible chat server for local use,
// demos and tests. It behaves like a stock AgentChat server wherever a
// client can tell (handshake, channels, history replay, limits and error
// codes, an answer to every client frame a stock server accepts, presence,
// GET /health; see docs/agentchat-compat.md), so that a client tested
// against it works against the real one unchanged, and stock clients work
// in it.
package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
)

// Config is the server's configuration. Zero fields take the stock
// server's defaults unless said otherwise.
type Config struct {
	Listen  string // address to listen on (default 127.0.0.1:6667; tests use 127.0.0.1:0)
	Name    string // the server's name in WELCOME and /health
	Version string // the version /health reports (default 0.0.0, as a stock server started without npm)

	// Listener, if set, is where to serve instead of Listen: bound already
	// (foreman up binds a free port before it starts anything, to tell
	// every part the room's address). Start then owns it, unless it fails.
	Listener net.Listener

	// Channels to create at start. nil: DefaultChannels (the stock set).
	// #ops admits only verified agents, as on a stock server.
	Channels []string
	// RateLimit: one MSG per RateLimit per connection; 0 turns the limit
	// off. The stock server's is 1s; DefaultConfig sets that.
	RateLimit  time.Duration
	BufferSize int   // frames of history kept per channel (default 20)
	MaxFrame   int64 // largest incoming frame in bytes (default 2 MiB)

	// Lurk makes keys seen for the first time less than LurkPeriod ago
	// read-only, and agents without a key (ephemeral) read-only for good,
	// as a stock server does by default. It is off by default here (a
	// stock server with LURK_DISABLED=true): on a local server a new bot
	// should not have to wait an hour, and an agent without a key may send
	// as soon as it has signed in.
	Lurk       bool
	LurkPeriod time.Duration // default 1h
	// QuietLurk stops WELCOME advertising lurk when Lurk is off. A stock
	// server run with LURK_DISABLED=true still tells every key first seen
	// within LurkPeriod that it lurks (lurk:true, lurk_until) and then lets
	// it send: clients must treat that as advice, and this server, like
	// the stock one, tests that they do.
	QuietLurk bool
	// KeepContent turns off the rewriting a stock server does to every
	// message: what looks like a secret becomes [REDACTED:<kind>]
	// (agentchat.Redact).
	KeepContent bool

	Verified              []string // agent ids treated as vetted by the admin
	Allowed               []string // if not empty, only these agent ids may sign in
	Banned                []string // agent ids refused at sign-in
	AllowUnverifiedCreate bool     // let any signed-in agent create channels

	ChallengeTimeout time.Duration // to answer a CHALLENGE (default 60s)
	VerifyTimeout    time.Duration // for an agent to answer a VERIFY_REQUEST about it (default 30s)
	PingInterval     time.Duration // WebSocket pings (default 30s)
	PongTimeout      time.Duration // silence after which a connection is cut (default 70s)
	DisplaceDelay    time.Duration // how long a second sign-in with one key is held (default 5s)
	FloodFrames      int           // frames per FloodWindow after sign-in (default 60)
	FloodPreIdentify int           // frames per FloodWindow before it (default 10)
	FloodWindow      time.Duration // default 10s

	// State carries what outlives a restart from one server to the next
	// (see State). nil: a fresh one.
	State *State
	// StateFile, if set, carries the State over a restart of the process:
	// Close writes it, and Start reads it (unless State is set) and
	// removes it, so that only a server that stopped in order hands its
	// history on. A room that lost nothing says so by replaying it: the
	// clients' history reaches back to what they last read.
	StateFile string

	Logger zerolog.Logger
}

// DefaultChannels are the channels a stock server starts with.
func DefaultChannels() []string {
	return []string{"#general", "#engineering", "#pull-requests", "#help", "#love", "#agents", "#discovery", "#bounties", "#ops"}
}

// verifiedOnly channels admit only verified agents.
var verifiedOnly = map[string]bool{"#ops": true}

// DefaultConfig is a stock server's configuration, listening on
// 127.0.0.1:6667 with lurking off.
func DefaultConfig() Config {
	return Config{Listen: "127.0.0.1:6667", RateLimit: time.Second}
}

func (c *Config) defaults() {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:6667"
	}
	if c.Name == "" {
		c.Name = "agentchat (foreman embedded)"
	}
	if c.Version == "" {
		c.Version = "0.0.0"
	}
	if c.Channels == nil {
		c.Channels = DefaultChannels()
	}
	if c.BufferSize <= 0 {
		c.BufferSize = 20
	}
	if c.MaxFrame <= 0 {
		c.MaxFrame = 2 << 20
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.LurkPeriod, time.Hour)
	def(&c.ChallengeTimeout, 60*time.Second)
	def(&c.VerifyTimeout, 30*time.Second)
	def(&c.PingInterval, 30*time.Second)
	def(&c.PongTimeout, 70*time.Second)
	def(&c.DisplaceDelay, 5*time.Second)
	def(&c.FloodWindow, 10*time.Second)
	if c.FloodFrames <= 0 {
		c.FloodFrames = 60
	}
	if c.FloodPreIdentify <= 0 {
		c.FloodPreIdentify = 10
	}
	if c.State == nil {
		c.State = NewState()
	}
}

// State is what one server hands to the next when restarted: the times keys
// were first seen (a stock server keeps those on disk too), and the
// channels with their history (a stock server loses those; keeping them
// stands in for a room that outlived the restart). One server at a time
// may use a State.
type State struct {
	firstSeen map[string]time.Time // by agent id
	channels  map[string]*channel
}

// NewState is an empty State.
func NewState() *State {
	return &State{firstSeen: map[string]time.Time{}, channels: map[string]*channel{}}
}

type channel struct {
	name         string
	verifiedOnly bool
	history      []*msgFrame
	members      map[*conn]*membership
	joins        int     // orders members as they joined
	ordered      []*conn // members in join order, nil when it must be rebuilt
}

// membership: announced is false for channels WELCOME joined silently;
// the first JOIN announces the agent.
type membership struct {
	announced bool
	order     int
}

// Server is a running server.
type Server struct {
	cfg  Config
	log  zerolog.Logger
	ln   net.Listener
	http *http.Server
	st   *State
	wg   sync.WaitGroup
	once sync.Once
	done chan struct{}

	verified, allowed, banned map[string]bool

	started time.Time

	mu            sync.Mutex
	closed        bool
	conns         map[*conn]struct{}
	byID          map[string]*conn
	challenges    map[string]*challenge
	verifications map[string]*verification
	floor         floor
	timers        map[*time.Timer]struct{}
}

// Start listens and serves until ctx is done or Close is called.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	fresh := cfg.State == nil
	cfg.defaults()
	var channels []string
	for _, name := range cfg.Channels {
		if !validChannel(name) {
			return nil, fmt.Errorf("%q is not a channel name: # and 1 to 31 letters, digits, _ or -", name)
		}
		if !slices.Contains(channels, name) {
			channels = append(channels, name)
		}
	}
	cfg.Channels = channels
	ln := cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cfg.Listen); err != nil {
			return nil, err
		}
	}
	// The state file is read once the server can serve: reading removes it.
	restored := false
	if cfg.StateFile != "" && fresh {
		st, ok, err := loadStateFile(cfg.StateFile, cfg.BufferSize)
		if err != nil {
			if cfg.Listener == nil {
				ln.Close() // the caller's listener stays the caller's when Start fails
			}
			return nil, err
		}
		cfg.State, restored = st, ok
	}
	s := &Server{
		cfg:        cfg,
		log:        cfg.Logger,
		ln:         ln,
		st:         cfg.State,
		done:       make(chan struct{}),
		verified:   set(cfg.Verified),
		allowed:    set(cfg.Allowed),
		banned:     set(cfg.Banned),
		conns:      map[*conn]struct{}{},
		byID:       map[string]*conn{},
		challenges: map[string]*challenge{},
		timers:     map[*time.Timer]struct{}{},
		started:    time.Now(),

		verifications: map[string]*verification{},
		floor:         floor{},
	}
	for _, ch := range s.st.channels {
		ch.members, ch.ordered = map[*conn]*membership{}, nil
	}
	for _, name := range cfg.Channels {
		s.createChannel(name)
	}
	s.http = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error().Err(err).Msg("the chat server stopped serving")
		}
	}()
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-s.done:
		}
	}()
	lurk := "new identities, and agents without a key, may send at once"
	if cfg.Lurk {
		lurk = fmt.Sprintf("new identities may send %s after they are first seen, agents without a key never", cfg.LurkPeriod)
	}
	s.log.Info().Msgf("chat server listening on %s; channels %s; %s; the last %d messages of each channel are replayed on JOIN; %s",
		s.URL(), strings.Join(cfg.Channels, " "), rateText(cfg.RateLimit), cfg.BufferSize, lurk)
	if restored {
		s.log.Info().Msgf("the channels and their history are as the room left them when it last stopped (%s)", cfg.StateFile)
	}
	return s, nil
}

func rateText(d time.Duration) string {
	if d <= 0 {
		return "no rate limit"
	}
	return "one message per " + d.String() + " per connection"
}

func set(ids []string) map[string]bool {
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is the ws:// URL clients connect to.
func (s *Server) URL() string { return "ws://" + s.Addr() }

// State is the server's State, to hand to the next server.
func (s *Server) State() *State { return s.st }

// Done is closed when the server has stopped.
func (s *Server) Done() <-chan struct{} { return s.done }

// Close stops the server the way a killed process stops: every connection
// is cut without a closing handshake. It returns when all is stopped, so a
// new server may listen on the same address at once. With a StateFile it
// writes the channels and their history there first, frames taken after
// it had stopped taking any.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		for t := range s.timers {
			t.Stop()
		}
		conns := make([]*conn, 0, len(s.conns))
		for c := range s.conns {
			conns = append(conns, c)
		}
		s.mu.Unlock()
		s.http.Close()
		for _, c := range conns {
			c.ws.Close()
		}
		s.wg.Wait()
		if s.cfg.StateFile != "" {
			s.mu.Lock()
			err := s.st.save(s.cfg.StateFile, time.Now())
			s.mu.Unlock()
			if err != nil {
				s.log.Error().Err(err).Msgf("could not save the room's history to %s: the next room starts empty", s.cfg.StateFile)
			}
		}
		s.log.Info().Msgf("chat server on %s stopped", s.Addr())
		close(s.done)
	})
	return nil
}

// Agents lists the ids signed in, sorted; for tests and status output.
func (s *Server) Agents() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.byID))
	for id := range s.byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// DropConnections cuts every connection as a network failure would, and
// keeps serving: clients reconnect and catch up from history.
func (s *Server) DropConnections() {
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.ws.Close()
	}
}

var upgrader = websocket.Upgrader{
	// Agents are not browsers; a stock server takes any origin.
	CheckOrigin: func(*http.Request) bool { return true },
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !websocket.IsWebSocketUpgrade(r) {
		s.serveHTTP(w, r)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has answered the request
	}
	c := newConn(s, ws, r.RemoteAddr)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ws.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.wg.Add(2)
	s.mu.Unlock()
	go c.readLoop()
	go c.writeLoop()
}

// after runs f under the server's lock after d, unless the server has
// stopped by then.
func (s *Server) after(d time.Duration, f func()) *time.Timer {
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.timers, t)
		if !s.closed {
			f()
		}
	})
	s.timers[t] = struct{}{}
	return t
}

// cancel stops a timer from after; under s.mu.
func (s *Server) cancel(t *time.Timer) {
	t.Stop()
	delete(s.timers, t)
}
