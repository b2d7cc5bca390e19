// Package roomtest runs AgentChat rooms for tests: an embedded server on a
// random 127.0.0.1 port, and scripted peers that say lines and wait for the
// coordinator's answers.
package roomtest

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/agentchat/server"
)

// Pace is the rate limit of test rooms: fast, but still a limit.
const Pace = 10 * time.Millisecond

// Room is an embedded AgentChat server with one channel, #build, and a
// history long enough that nothing said during a test falls out of it.
type Room struct {
	Server *server.Server // nil for a room At a URL
	url    string
	rate   time.Duration
}

// Start starts a room paced at Pace, closed when the test ends.
func Start(t testing.TB) *Room { return StartRate(t, Pace) }

// StartRate starts a room that allows one message per rate per sender (a
// stock server: one a second).
func StartRate(t testing.TB, rate time.Duration) *Room {
	t.Helper()
	return StartWith(t, func(c *server.Config) { c.RateLimit = rate })
}

// StartWith starts a room paced at Pace with a history of 5,000 frames,
// as changed by mutate: a test of what a stock room forgets sets
// BufferSize back to the stock 20.
func StartWith(t testing.TB, mutate func(*server.Config)) *Room {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.Channels = []string{"#build"}
	cfg.RateLimit = Pace
	cfg.BufferSize = 5000
	mutate(&cfg)
	rate := cfg.RateLimit
	srv, err := server.Start(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	return &Room{Server: srv, rate: rate}
}

// At is a room someone else runs (foreman serve, a stock server) at url,
// paced at rate, for peers to join.
func At(url string, rate time.Duration) *Room { return &Room{url: url, rate: rate} }

// Rate is the room's rate limit.
func (r *Room) Rate() time.Duration {
	if r.rate == 0 {
		return Pace
	}
	return r.rate
}

// URL is where clients connect.
func (r *Room) URL() string {
	if r.Server == nil {
		return r.url
	}
	return r.Server.URL()
}

// Peer is a scripted participant: a real client that says lines and reads
// what others say.
type Peer struct {
	t      testing.TB
	Name   string
	ID     string
	client *agentchat.Client
	seq    atomic.Uint64
	lines  chan Said
}

// Said is one line someone said.
type Said struct {
	From string
	Name string // the sender's display name as the room gave it
	Text string
	Msg  int // which message it came in, counting every message the peer heard
	At   time.Time
	// Again: the sender's stamp says the message is sent again after a
	// restart and may repeat what the room already has.
	Again bool
}

// Join connects a new peer with a fresh key and waits until it is in #build.
func (r *Room) Join(t testing.TB, name string) *Peer {
	t.Helper()
	return r.JoinWith(t, name, func(*agentchat.Config) {})
}

// JoinWith is Join with the peer's client configured as mutate changes it
// (a benchmark lifts its flood pacing in a room that allows it).
func (r *Room) JoinWith(t testing.TB, name string, mutate func(*agentchat.Config)) *Peer {
	t.Helper()
	id, err := agentchat.NewIdentity(name)
	require.NoError(t, err)
	cfg := agentchat.Config{URL: r.URL(), Channel: "#build", Identity: id,
		RateLimit: r.Rate(), Logger: zerolog.Nop()}
	mutate(&cfg)
	c := agentchat.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	p := &Peer{t: t, Name: name, ID: id.AgentID(), client: c, lines: make(chan Said, 100000)}
	joined := make(chan struct{})
	go func() {
		once, msgs := false, 0
		for ev := range c.Events() {
			switch ev := ev.(type) {
			case agentchat.Joined:
				if !once {
					once = true
					close(joined)
				}
			case agentchat.Message:
				if ev.Self || ev.Notice {
					continue
				}
				msgs++
				now := time.Now()
				again := ev.Stamp != nil && ev.Stamp.Again
				for _, l := range strings.Split(ev.Body(), "\n") {
					p.lines <- Said{From: ev.From, Name: ev.FromName, Text: l, Msg: msgs, At: now, Again: again}
				}
			}
		}
	}()
	select {
	case <-joined:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s could not join the room", name)
	}
	return p
}

// Say sends a message (one or more lines).
func (p *Peer) Say(text string) {
	p.client.Send(agentchat.Line{Seq: p.seq.Add(1), Text: text})
}

// SayLines sends lines, which the client batches into as few messages as
// the room allows.
func (p *Peer) SayLines(lines []string) {
	batch := make([]agentchat.Line, len(lines))
	for i, l := range lines {
		batch[i] = agentchat.Line{Seq: p.seq.Add(1), Text: l}
	}
	p.client.Send(batch...)
}

// Queued is how many lines wait in the peer's client to be sent.
func (p *Peer) Queued() int { return p.client.Stats().Queued }

// Lines is every line the peer hears from others, in room order.
func (p *Peer) Lines() <-chan Said { return p.lines }

// Await reads lines from sender until one starts with prefix, and returns
// it with every line from sender read on the way.
func (p *Peer) Await(sender, prefix string) (string, []string) {
	p.t.Helper()
	return p.AwaitMatch(sender, prefix, func(string) bool { return true })
}

// AwaitMatch is Await for a line that starts with prefix and satisfies ok.
func (p *Peer) AwaitMatch(sender, prefix string, ok func(string) bool) (string, []string) {
	p.t.Helper()
	var seen []string
	deadline := time.After(20 * time.Second)
	for {
		select {
		case l := <-p.lines:
			if l.From != sender {
				continue
			}
			seen = append(seen, l.Text)
			if strings.HasPrefix(l.Text, prefix) && ok(l.Text) {
				return l.Text, seen
			}
		case <-deadline:
			p.t.Fatalf("%s waited in vain for %q from %s; saw %q", p.Name, prefix, sender, seen)
			return "", seen
		}
	}
}

// From lists the texts of lines said by sender that start with prefix, in
// order.
func From(lines []Said, sender, prefix string) []string {
	var out []string
	for _, l := range lines {
		if l.From == sender && strings.HasPrefix(l.Text, prefix) {
			out = append(out, l.Text)
		}
	}
	return out
}

// Dump writes lines as a test failure shows them: a line each, the
// sender by the name names gives its id.
func Dump(lines []Said, names map[string]string) string {
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "  %s: %s\n", names[l.From], l.Text)
	}
	return b.String()
}
