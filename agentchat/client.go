package agentchat

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/time/rate"
)

// The transport's defaults, for the Config fields of the same names. The
// timeouts follow a stock server: it pings every 30 s and cuts a connection
// silent for 70 s, and takes one MSG a second.
const (
	DefaultRateLimit     = time.Second
	DefaultMaxMessage    = 1 << 20
	DefaultMinBackoff    = 250 * time.Millisecond
	DefaultMaxBackoff    = 30 * time.Second
	DefaultReadTimeout   = 75 * time.Second
	DefaultWriteTimeout  = 10 * time.Second
	DefaultHistoryWait   = 2 * time.Second
	DefaultEchoTimeout   = 30 * time.Second
	DefaultFirstAttempts = 6
	// A connection dropped because another took its identity waits this
	// long before coming back: a foreman that started with the same key and
	// refuses (its journal does not know the build) has left by then.
	DefaultDisplacedWait = 3 * time.Second
	// Only an identity taken this many times within DefaultDisplacedWindow
	// gives up: another program keeps taking it, and taking turns helps nobody.
	DefaultMaxDisplaced    = 3
	DefaultDisplacedWindow = 10 * time.Minute
)

// Config says where the room is and how to behave in it. Zero fields take
// the defaults above.
type Config struct {
	URL      string
	Channel  string
	Name     string    // display name; default the identity's name, else "foreman"
	Identity *Identity // nil: ephemeral, which a stock server lets only listen

	// RateLimit is the room's pace: one MSG per RateLimit (default 1s). The
	// client keeps a margin above it, and slows down further if the room
	// still refuses a message as too fast. A negative value means the room
	// has no rate limit: each batch goes out as soon as the last is echoed.
	RateLimit time.Duration
	// MaxMessage is the most content bytes per MSG (default 1 MiB).
	MaxMessage int
	// CreateChannel: when the channel does not exist, try to create it
	// (a stock server lets only verified agents do so).
	CreateChannel bool

	MinBackoff, MaxBackoff time.Duration // reconnect delays (default 250ms, 30s)

	ReadTimeout  time.Duration // silence before the connection counts as dead (default 75s; the server pings every 30s)
	WriteTimeout time.Duration // per frame and for the WebSocket handshake (default 10s)
	PingInterval time.Duration // WebSocket pings from the client; 0: none (the server pings)
	HistoryWait  time.Duration // how long to wait for the replay to end when the server is silent (default 2s)
	EchoTimeout  time.Duration // how long an unanswered MSG may wait before the client reconnects to check on it (default 30s)
	// FloodLimit is how many frames the server accepts in 10 seconds before
	// it closes the connection (a stock server: 60). 0 takes the stock
	// value; a negative value means the server has no such limit.
	FloodLimit int
	// FirstAttempts is how many times the first connection is tried before
	// Run gives up and says the server cannot be reached (default 6, about
	// 16 seconds). Once connected, the client retries for ever.
	FirstAttempts int
	// Tag, if set, stamps every message with the numbers of its lines (see
	// Stamp); SetTag sets it later.
	Tag string
	// DisplacedWait is how long the client waits to reconnect after the
	// server dropped it for another connection with the same identity
	// (SESSION_DISPLACED; default 3s). MaxDisplaced drops within
	// DisplacedWindow (default 3 in 10m) end Run with a *ServerError.
	DisplacedWait   time.Duration
	MaxDisplaced    int
	DisplacedWindow time.Duration
	// Gate, if set, is asked right before each message is written to the
	// connection: false drops it unsent. It stays unconfirmed, so a later
	// connection sends it again if the gate is open then. A cluster leader
	// that may have lost its lease must not say another line.
	Gate func() bool

	Logger zerolog.Logger
}

func (c *Config) defaults() {
	if c.Name == "" && c.Identity != nil {
		c.Name = c.Identity.Name
	}
	if c.Name == "" {
		c.Name = "foreman"
	}
	if c.RateLimit == 0 { // negative: the room has no limit
		c.RateLimit = DefaultRateLimit
	}
	setDefault(&c.MinBackoff, DefaultMinBackoff)
	setDefault(&c.MaxBackoff, DefaultMaxBackoff)
	setDefault(&c.ReadTimeout, DefaultReadTimeout)
	setDefault(&c.WriteTimeout, DefaultWriteTimeout)
	setDefault(&c.HistoryWait, DefaultHistoryWait)
	setDefault(&c.EchoTimeout, DefaultEchoTimeout)
	if c.MaxMessage <= 0 {
		c.MaxMessage = DefaultMaxMessage
	}
	if c.MaxBackoff < c.MinBackoff {
		c.MaxBackoff = c.MinBackoff
	}
	if c.FirstAttempts <= 0 {
		c.FirstAttempts = DefaultFirstAttempts
	}
	setDefault(&c.DisplacedWait, DefaultDisplacedWait)
	setDefault(&c.DisplacedWindow, DefaultDisplacedWindow)
	if c.MaxDisplaced <= 0 {
		c.MaxDisplaced = DefaultMaxDisplaced
	}
}

func setDefault(d *time.Duration, v time.Duration) {
	if *d <= 0 {
		*d = v
	}
}

// Stats are the client's counters.
type Stats struct {
	MessagesSent int64 // MSGs the room confirmed by echoing them
	LinesSent    int64 // lines in those
	Resent       int64 // MSGs refused as too fast (RATE_LIMITED) and sent again
	Reconnects   int64
	Queued       int // lines waiting or in flight
}

// Client is a connection to one AgentChat channel that survives
// disconnects: it reconnects, catches up from the channel's history, and
// delivers every queued line exactly once as far as the room lets it tell.
type Client struct {
	cfg    Config
	log    zerolog.Logger
	events *eventQueue
	wake   chan struct{}

	mu        sync.Mutex
	queue     sendQueue
	inflightN int
	agentID   string
	tag       string
	pings     chan struct{} // asks for a clock reading (Ping)
	flatOnce  sync.Once
	flat      chan Event

	started      atomic.Bool
	messagesSent atomic.Int64
	linesSent    atomic.Int64
	resent       atomic.Int64
	reconnects   atomic.Int64

	// Owned by Run's goroutine.
	inflight    *batch    // sent, not yet echoed; survives a reconnect
	sentAt      time.Time // when the inflight batch was sent
	skew        skew      // the server's clock against ours
	seen        *recent
	nextSend    time.Time // no MSG before this: one period after the room took the last
	flood       *rate.Limiter
	interval    time.Duration // the current pace: RateLimit and a margin, or slower after a refusal
	base        time.Duration // the pace the configuration asks for
	smooth      int           // MSGs confirmed in a row since the last change of pace
	lurkUntil   time.Time
	lurkForever bool
	everJoined  bool
	displaced   []time.Time // when the server dropped this client for another with its identity, within DisplacedWindow
}

// A stock server closes a connection that sends more than 60 frames in 10
// seconds. With any RateLimit the client sends at most half its budget at
// once and the rest spread over the window: 25 + 10s*2.5/s = 50 MSGs in 10
// seconds against the stock limit, which leaves room for the frames of
// signing in and joining.
const (
	floodWindow     = 10 * time.Second
	floodHeadroom   = 10 // frames kept for signing in, joining and pings
	stockFloodLimit = 60
)

// floodLimiter paces MSGs under the server's frame-flood limit.
func floodLimiter(limit int) *rate.Limiter {
	if limit < 0 {
		return rate.NewLimiter(rate.Inf, 0)
	}
	if limit == 0 {
		limit = stockFloodLimit
	}
	budget := max(limit-floodHeadroom, 2)
	return rate.NewLimiter(rate.Limit(float64(budget)/2/floodWindow.Seconds()), budget/2)
}

// New makes a client; Run connects it.
func New(cfg Config) *Client {
	cfg.defaults()
	c := &Client{
		cfg:    cfg,
		log:    cfg.Logger,
		events: newEventQueue(),
		wake:   make(chan struct{}, 1),
		pings:  make(chan struct{}, 1),
		seen:   newRecent(4096),
		tag:    cfg.Tag,
	}
	// Periods start when the room has taken the previous MSG (its echo or
	// its refusal came back), so a busy server cannot see two MSGs closer
	// than a period; the small margin covers clock granularity.
	if cfg.RateLimit > 0 {
		c.interval = cfg.RateLimit + max(cfg.RateLimit/50, 10*time.Millisecond)
	}
	c.base = c.interval
	c.flood = floodLimiter(cfg.FloodLimit)
	if cfg.Identity != nil {
		c.agentID = cfg.Identity.AgentID()
	}
	return c
}

// Batches is the stream of room events, each time everything that came in
// since the last: a consumer that handles them together (the bot commits
// its journal once per batch) never waits for them one by one. It is
// closed after Run returns and everything before that has been delivered
// (or Run's context is done). Use Batches or Events, not both.
func (c *Client) Batches() <-chan []Event { return c.events.out }

// Events is Batches one event at a time, for consumers that take them so.
func (c *Client) Events() <-chan Event {
	c.flatOnce.Do(func() {
		c.flat = make(chan Event)
		go func() {
			defer close(c.flat)
			for batch := range c.events.out {
				for _, e := range batch {
					c.flat <- e
				}
			}
		}()
	})
	return c.flat
}

// SetTag sets the tag stamped on every message from now on ("" for none).
func (c *Client) SetTag(tag string) {
	c.mu.Lock()
	c.tag = tag
	c.mu.Unlock()
}

// Ping asks the room for its clock: a Clock event follows once the room has
// answered, after every message it had sent before. A ping already on its
// way answers this one too.
func (c *Client) Ping() {
	select {
	case c.pings <- struct{}{}:
	default:
	}
}

// Send queues lines for the room without blocking. Lines are never dropped:
// they wait through disconnects and refusals until the room has them.
func (c *Client) Send(lines ...Line) {
	if len(lines) == 0 {
		return
	}
	c.mu.Lock()
	c.queue.push(lines)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// AgentID is the client's sender id: known up front for a keyed identity,
// assigned by the server otherwise ("" until connected).
func (c *Client) AgentID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.agentID
}

// Stats returns the counters.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	queued := c.queue.len() + c.inflightN
	c.mu.Unlock()
	return Stats{
		MessagesSent: c.messagesSent.Load(),
		LinesSent:    c.linesSent.Load(),
		Resent:       c.resent.Load(),
		Reconnects:   c.reconnects.Load(),
		Queued:       queued,
	}
}

// Run connects, signs in, joins the channel and keeps at it, reconnecting
// with backoff, until ctx is done (it then returns nil). It returns a
// *ServerError when the server refuses in a way retrying cannot cure.
// Run may be called once.
func (c *Client) Run(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return errors.New("agentchat: Run called twice")
	}
	go c.events.pump(ctx)
	defer c.events.finish()
	attempt := 0
	everConnected := false
	for {
		s, err := c.session(ctx, everConnected)
		if s != nil && s.connected {
			everConnected = true
			c.events.push(Disconnected{Err: err})
		}
		if ctx.Err() != nil {
			c.log.Info().Msg("left the chat room")
			return nil
		}
		var se *ServerError
		if errors.As(err, &se) && se.Code == CodeSessionDisplaced {
			if se = c.wasDisplaced(time.Now()); se != nil {
				return se
			}
			attempt = 0
			if !c.sleep(ctx, c.cfg.DisplacedWait) {
				return nil
			}
			continue
		}
		if se != nil {
			return se
		}
		if s != nil && s.live {
			attempt = 0
		}
		d := c.backoff(attempt)
		attempt++
		if !everConnected {
			if attempt >= c.cfg.FirstAttempts {
				return &UnreachableError{URL: c.cfg.URL, Attempts: attempt, Err: err}
			}
			c.log.Warn().Err(err).Msgf("cannot reach the chat server at %s (attempt %d of %d); trying again in %s",
				c.cfg.URL, attempt, c.cfg.FirstAttempts, d.Round(time.Millisecond))
		} else {
			c.log.Warn().Err(err).Msgf("lost the chat server at %s; trying again in %s", c.cfg.URL, d.Round(time.Millisecond))
		}
		if !c.sleep(ctx, d) {
			return nil
		}
	}
}

// sleep waits d, or until ctx is done (then it reports false).
func (c *Client) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		c.log.Info().Msg("left the chat room")
		return false
	}
}

// wasDisplaced counts a drop for another connection with this identity.
// Two foremen with one key take it from each other; a second foreman that
// refuses to coordinate (its journal does not know the build) leaves at
// once, so after a short wait the first comes back and goes on. Only an
// identity taken again and again gives up, with the error Run returns.
func (c *Client) wasDisplaced(now time.Time) *ServerError {
	keep := c.displaced[:0]
	for _, t := range c.displaced {
		if now.Sub(t) < c.cfg.DisplacedWindow {
			keep = append(keep, t)
		}
	}
	c.displaced = append(keep, now)
	id := c.AgentID()
	if n := len(c.displaced); n >= c.cfg.MaxDisplaced {
		return &ServerError{Code: CodeSessionDisplaced, Message: "displaced",
			Advice: fmt.Sprintf("another program keeps connecting with this identity (%s): the server dropped this one %d times within %s, so it gives up rather than take turns; stop the other, or give each its own identity file",
				id, n, c.cfg.DisplacedWindow)}
	}
	c.log.Warn().Msgf("another program connected with this identity (%s) and the server dropped this one; coming back in %s, in case the other leaves (a second foreman that refuses to coordinate does); giving up if it happens %d times within %s",
		id, c.cfg.DisplacedWait, c.cfg.MaxDisplaced, c.cfg.DisplacedWindow)
	return nil
}

// backoff doubles from MinBackoff to MaxBackoff, with jitter so that many
// clients cut off by one server restart do not all return at once.
func (c *Client) backoff(attempt int) time.Duration {
	d := c.cfg.MaxBackoff
	if attempt < 30 {
		d = min(c.cfg.MinBackoff<<attempt, c.cfg.MaxBackoff)
	}
	half := d / 2
	return half + rand.N(half+1)
}

func (c *Client) setAgentID(id string) {
	c.mu.Lock()
	c.agentID = id
	c.mu.Unlock()
}

// requeue puts an unconfirmed batch back in front of the queue.
func (c *Client) requeue(b *batch) {
	c.mu.Lock()
	c.queue.pushFront(b.lines)
	c.inflightN = 0
	c.mu.Unlock()
	c.inflight = nil
}

func (c *Client) queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queue.len()
}

// stampRoom is what a message keeps free for its stamp: the tag, and the
// runs of numbers (at most maxRuns of them).
func stampRoom(tag string) int {
	if tag == "" {
		return 0
	}
	return len(tag) + len(againNote) + maxRuns*42 + 8
}

// take removes the next batch from the queue, stamped if a tag is set.
func (c *Client) take() *batch {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := takeBatch(&c.queue, c.cfg.MaxMessage, c.tag)
	if b == nil {
		return nil
	}
	c.inflightN = len(b.lines)
	if b.cut > 0 {
		c.log.Warn().Msgf("a line of %d bytes is longer than a whole message may be (%d bytes); only its start is sent", b.cut, c.cfg.MaxMessage)
	}
	return b
}
