package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/agentchat/server"
)

// held is a port this test listens on, so that anything else binding it
// fails: a command that binds a port before checking its config would say
// so instead of the config's error.
func held(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// run without a config file give validate's one line, before
// they bind a port. (serve needs none: a chat room is no build.)
func TestRunNeedsAConfigFile(t *testing.T) {
	t.Chdir(t.TempDir())
	port := held(t)
	for _, args := range [][]string{
		{"validate"},
		{"run", "--http", port},
	} {
		code, out, errOut := foreman(t, args...)
		assert.Equal(t, 1, code, args)
		assert.Empty(t, out, args)
		assert.Equal(t, "foreman: no config file: name one (foreman "+args[0]+" CONFIG, or -c), set FOREMAN_CONFIG, or write foreman.yaml here with foreman init\n", errOut, args)
	}
}

const cycleConfig = `build:
  name: loop
  components:
    - name: a
      depends_on: [b]
    - name: b
      depends_on: [a]
`

// A cycle stops run with validate's line, before a port is bound, unless
// it is asked to start halted: then the room hears the cycle.
func TestRunRefusesACycleUnlessHalted(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "loop.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cycleConfig), 0o600))
	code, out, _ := foreman(t, "validate", path)
	assert.Equal(t, 1, code)
	assert.True(t, strings.HasSuffix(out, "\nbuild loop: dependency cycle: a -> b -> a\n"), out)

	code, _, errOut := foreman(t, "run", path, "--http", held(t))
	assert.Equal(t, 1, code)
	assert.Equal(t, "foreman: build loop: dependency cycle: a -> b -> a (fix the config, or start it halted with --halted and mend it in the room with UNDEPEND)\n", errOut)

	r := newAgentRoom(t)
	require.NoError(t, os.WriteFile(path, []byte(cycleConfig+"server:\n  url: "+r.url+"\n  rate_limit: 5ms\nhttp:\n  listen: \"\"\n"), 0o600))
	_, stderr, done, stop := startAgent(t, strings.NewReader(""), "run", path, "--halted", "--log-level", "warn")
	r.expect("ERROR build dependency cycle: a -> b -> a")
	stop()
	assert.Equal(t, 0, <-done, stderr.String())
}

func TestRunHelpSaysTheJournalIsADirectory(t *testing.T) {
	code, out, _ := foreman(t, "run", "--help")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "journal directory, created and locked by foreman")
	assert.Contains(t, out, "--halted")
}

// A second foreman run with the same key and its own journal refuses,
// says so once in the room and leaves; the first, dropped by the server
// for it, comes back and goes on. Both are the whole command, over real
// WebSockets.
func TestSecondRunWithTheSameKeyLeavesTheFirstCoordinating(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := server.DefaultConfig()
	cfg.Listen, cfg.Channels, cfg.RateLimit, cfg.DisplaceDelay, cfg.Logger = "127.0.0.1:0", []string{"#build"}, 5*time.Millisecond, 100*time.Millisecond, zerolog.Nop()
	room, err := server.Start(ctx, cfg)
	require.NoError(t, err)
	defer room.Close()

	dir := t.TempDir()
	config := writeFile(t, dir, "foreman.yaml", "server:\n  url: "+room.URL()+"\n  rate_limit: 5ms\n"+
		"build:\n  name: shop\n  components:\n    - name: db\n    - name: api\n      depends_on: [db]\nhttp:\n  listen: \"\"\n")
	_, firstErr, firstDone, stopFirst := startAgent(t, strings.NewReader(""), "run", config, "--log-format", "json")

	b1 := roomPeer(t, room.URL(), "b1")
	b1.await("TASKS db")
	b1.say("CLAIM db")
	b1.await("ACK db " + b1.id)

	_, secondErr, secondDone, _ := startAgent(t, strings.NewReader(""), "run", config, "--journal", filepath.Join(dir, "other-journal"))
	select {
	case code := <-secondDone:
		assert.Equal(t, 1, code)
	case <-time.After(30 * time.Second):
		t.Fatal("the second foreman did not leave")
	}
	assert.Contains(t, secondErr.String(), "has no record of it")
	b1.await("ERROR build foreman will not coordinate here")

	b1.say("READY db b1/db")
	b1.await("REVIEW db " + b1.id)
	select {
	case code := <-firstDone:
		t.Fatalf("the first foreman stopped (%d): %s", code, firstErr.String())
	default:
	}
	stopFirst()
	assert.Equal(t, 0, <-firstDone, firstErr.String())
}

// peer is a plain room member for the run tests.
type peer struct {
	t     *testing.T
	id    string
	c     *agentchat.Client
	lines chan string
}

func roomPeer(t *testing.T, url, name string) *peer {
	t.Helper()
	id, err := agentchat.NewIdentity(name)
	require.NoError(t, err)
	return peerAs(t, url, id)
}

// peerAs is a room member with the key id (an operator's, say).
func peerAs(t *testing.T, url string, id *agentchat.Identity) *peer {
	t.Helper()
	p := &peer{t: t, id: id.AgentID(), lines: make(chan string, 1000),
		c: agentchat.New(agentchat.Config{URL: url, Channel: "#build", Identity: id, RateLimit: 5 * time.Millisecond, Logger: zerolog.Nop()})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.c.Run(ctx) }()
	go func() {
		heard := func(m agentchat.Message) {
			if !m.Self && !m.Notice {
				for _, l := range strings.Split(m.Body(), "\n") {
					p.lines <- l
				}
			}
		}
		for e := range p.c.Events() {
			switch e := e.(type) {
			case agentchat.Joined:
				for _, m := range e.History {
					heard(m)
				}
			case agentchat.Message:
				heard(e)
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return p
}

func (p *peer) say(l string) { p.c.Send(agentchat.Line{Text: l}) }

// await reads until a line starts with prefix.
func (p *peer) await(prefix string) string {
	p.t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l := <-p.lines:
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-timeout:
			p.t.Fatalf("nobody said %q", prefix)
			return ""
		}
	}
}
