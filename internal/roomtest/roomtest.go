// Package roomtest runs AgentChat rooms for tests: an embedded server on a
// random 127.0.0.1 port, and scripted peers that say lines and wait for the
// coordinator's answers.
package roomtest

import (
	"context"
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
type Room struct{ Server *server.Server }

// Start starts a room, closed when the test ends.
func Start(t testing.TB) *Room {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.Channels = []string{"#build"}
	cfg.RateLimit = Pace
	cfg.BufferSize = 5000
	srv, err := server.Start(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	return &Room{Server: srv}
}

// URL is where clients connect.
func (r *Room) URL() string { return r.Server.URL() }

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
	Text string
}

// Join connects a new peer with a fresh key and waits until it is in #build.
func (r *Room) Join(t testing.TB, name string) *Peer {
	t.Helper()
	id, err := agentchat.NewIdentity(name)
	require.NoError(t, err)
	c := agentchat.New(agentchat.Config{URL: r.URL(), Channel: "#build", Identity: id,
		RateLimit: Pace, Logger: zerolog.Nop()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	p := &Peer{t: t, Name: name, ID: id.AgentID(), client: c, lines: make(chan Said, 100000)}
	joined := make(chan struct{})
	go func() {
		once := false
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
				for _, l := range strings.Split(ev.Content, "\n") {
					p.lines <- Said{From: ev.From, Text: l}
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

// Lines is every line the peer hears from others, in room order.
func (p *Peer) Lines() <-chan Said { return p.lines }

// Await reads lines from sender until one starts with prefix, and returns
// it with every line from sender read on the way.
func (p *Peer) Await(sender, prefix string) (string, []string) {
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
			if strings.HasPrefix(l.Text, prefix) {
				return l.Text, seen
			}
		case <-deadline:
			p.t.Fatalf("%s waited in vain for %q from %s; saw %q", p.Name, prefix, sender, seen)
			return "", seen
		}
	}
}
