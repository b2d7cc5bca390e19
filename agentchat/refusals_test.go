package agentchat_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/agentchat/internal/chattest"
	"github.com/agentforeman/foreman/agentchat/server"
)

func serverError(t *testing.T, err error) *agentchat.ServerError {
	t.Helper()
	var se *agentchat.ServerError
	require.True(t, errors.As(err, &se), "want a *ServerError, got %v", err)
	return se
}

func TestNewIdentityWaitsForItsUnlockTime(t *testing.T) {
	s := chattest.Start(t, server.Config{Channels: chattest.WithBuild(), Lurk: true, LurkPeriod: 150 * time.Millisecond})
	listener := chattest.Member(t, s, "listener")
	r := run(t, agentchat.Config{URL: s.URL(), Identity: chattest.NewIdentity(t, "foreman")})
	c := next[agentchat.Connected](r)
	require.True(t, c.Lurk)
	require.False(t, c.LurkUntil.IsZero())
	r.c.Send(agentchat.Line{Seq: 1, Text: "TASKS api"})

	r.delivered(1, 1)
	m := listener.Msg()
	assert.Equal(t, "TASKS api", m["content"])
	assert.GreaterOrEqual(t, int64(m["ts"].(float64)), c.LurkUntil.UnixMilli(), "sent only once unlocked")
}

// TestLurkModeRefusalKeepsTheLines plays a server that refuses the first
// MSG with LURK_MODE, as a stock server does when a new key tries to send.
func TestLurkModeRefusalKeepsTheLines(t *testing.T) {
	unlocks := make(chan time.Time, 1)
	arrivals := make(chan time.Time, 4)
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		send := func(f map[string]any) {
			f["ts"] = time.Now().UnixMilli()
			ws.WriteJSON(f)
		}
		msgs := 0
		for {
			var f map[string]any
			if ws.ReadJSON(&f) != nil {
				return
			}
			switch f["type"] {
			case "IDENTIFY":
				send(map[string]any{"type": "WELCOME", "agent_id": "@abcdefgh", "name": f["name"], "server": "fake"})
			case "JOIN":
				send(map[string]any{"type": "JOINED", "channel": f["channel"], "agents": []any{}})
			case "PING":
				send(map[string]any{"type": "PONG"})
			case "MSG":
				arrivals <- time.Now()
				if msgs++; msgs == 1 {
					unlock := time.Now().Add(150 * time.Millisecond)
					unlocks <- unlock
					send(map[string]any{"type": "ERROR", "code": "LURK_MODE",
						"message": "New identity — sending unlocks at " + unlock.UTC().Format("2006-01-02T15:04:05.000Z")})
					continue
				}
				send(map[string]any{"type": "MSG", "from": "@abcdefgh", "from_name": "foreman", "to": f["to"],
					"content": f["content"], "msg_id": "1-abcdef", "verified": false})
			}
		}
	}))
	defer fake.Close()

	r := run(t, agentchat.Config{URL: "ws" + strings.TrimPrefix(fake.URL, "http")})
	r.ready()
	r.c.Send(agentchat.Line{Seq: 7, Text: "hello"})
	se := next[agentchat.ServerError](r)
	assert.Equal(t, "LURK_MODE", se.Code)
	assert.Contains(t, se.Advice, "keeps its replies and sends them from")
	d := next[agentchat.Delivered](r)
	assert.Equal(t, []uint64{7}, d.Seqs)

	unlock := <-unlocks
	<-arrivals
	assert.False(t, (<-arrivals).Before(unlock.Truncate(time.Millisecond)), "retried only once unlocked")
}

// The same key twice: the server drops the first connection for the
// second. The first comes back after a short wait; when the second has
// left by then (a foreman that refuses to coordinate does), it is in the
// room again and what it queued meanwhile goes out.
func TestDisplacedComesBackOnceTheOtherLeaves(t *testing.T) {
	s := chattest.Start(t, server.Config{Channels: chattest.WithBuild(), DisplaceDelay: 10 * time.Millisecond})
	id := chattest.NewIdentity(t, "foreman")
	first := run(t, agentchat.Config{URL: s.URL(), Identity: id, DisplacedWait: 300 * time.Millisecond})
	first.ready()
	second := run(t, agentchat.Config{URL: s.URL(), Identity: id})

	d := next[agentchat.Disconnected](first)
	se := serverError(t, d.Err)
	assert.Equal(t, "SESSION_DISPLACED", se.Code)
	assert.Contains(t, se.Error(), "another program connected with the same identity ("+id.AgentID()+")")
	second.ready()
	first.c.Send(agentchat.Line{Seq: 1, Text: "said while away"})
	second.cancel()
	require.NoError(t, second.fatal())

	j := next[agentchat.Joined](first)
	assert.True(t, j.Reconnect)
	assert.Equal(t, []uint64{1}, next[agentchat.Delivered](first).Seqs)
	select {
	case err := <-first.done:
		t.Fatalf("the first gave up: %v", err)
	default:
	}
}

// Only an identity taken again and again gives up, saying why: here a
// rival with the same key that never gives up itself.
func TestDisplacedAgainAndAgainGivesUp(t *testing.T) {
	s := chattest.Start(t, server.Config{Channels: chattest.WithBuild(), DisplaceDelay: 10 * time.Millisecond})
	id := chattest.NewIdentity(t, "foreman")
	first := run(t, agentchat.Config{URL: s.URL(), Identity: id, DisplacedWait: 20 * time.Millisecond, MaxDisplaced: 3})
	first.ready()
	rival := run(t, agentchat.Config{URL: s.URL(), Identity: id, DisplacedWait: 20 * time.Millisecond, MaxDisplaced: 1000})

	se := serverError(t, first.fatal())
	assert.Equal(t, "SESSION_DISPLACED", se.Code)
	assert.Equal(t, "another program keeps connecting with this identity ("+id.AgentID()+"): the server dropped this one 3 times within 10m0s, so it gives up rather than take turns; stop the other, or give each its own identity file", se.Error())
	for e := range first.c.Events() {
		_ = e // drained: Events is closed once Run has returned
	}
	select {
	case err := <-rival.done:
		t.Fatalf("the rival gave up too: %v", err)
	default:
	}
}

func TestMissingChannel(t *testing.T) {
	s := chattest.Start(t, server.Config{})

	r := run(t, agentchat.Config{URL: s.URL(), Identity: chattest.NewIdentity(t, "foreman")})
	se := serverError(t, r.fatal())
	assert.Equal(t, "CHANNEL_NOT_FOUND", se.Code)
	assert.Contains(t, se.Error(), "channel #build does not exist")

	r = run(t, agentchat.Config{URL: s.URL(), Identity: chattest.NewIdentity(t, "foreman"), CreateChannel: true})
	se = serverError(t, r.fatal())
	assert.Equal(t, "AUTH_REQUIRED", se.Code)
	assert.Equal(t, "channel #build does not exist and only verified agents can create channels; create #build with a verified identity or ask the server's admin", se.Error())

	admin := chattest.NewIdentity(t, "admin")
	s = chattest.Start(t, server.Config{Verified: []string{admin.AgentID()}})
	r = run(t, agentchat.Config{URL: s.URL(), Identity: admin, CreateChannel: true})
	c := next[agentchat.Connected](r)
	assert.True(t, c.Verified)
	j := next[agentchat.Joined](r)
	assert.True(t, j.Created)
	assert.Equal(t, []agentchat.Agent{{ID: admin.AgentID()}}, j.Agents)
}

func TestKeyNotOnTheAllowlist(t *testing.T) {
	s := chattest.Start(t, server.Config{Channels: chattest.WithBuild(), Allowed: []string{"@0000000000000000"}})
	id := chattest.NewIdentity(t, "foreman")
	r := run(t, agentchat.Config{URL: s.URL(), Identity: id})
	se := serverError(t, r.fatal())
	assert.Equal(t, "NOT_ALLOWED", se.Code)
	assert.Contains(t, se.Error(), "ask the server's admin to approve it")
	assert.Contains(t, se.Error(), id.AgentID())
}

func TestRunOnlyOnce(t *testing.T) {
	s := chattest.Start(t, server.Config{Channels: chattest.WithBuild()})
	r := run(t, agentchat.Config{URL: s.URL()})
	r.ready()
	assert.Error(t, r.c.Run(t.Context()))
}

// The client's frames must be what a stock server expects, byte for byte
// where it matters: the public key and the integer timestamp.
func TestIdentifyFrameCarriesTheExactPEM(t *testing.T) {
	frames := make(chan map[string]json.RawMessage, 2)
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		read := func() {
			var f map[string]json.RawMessage
			if ws.ReadJSON(&f) == nil {
				frames <- f
			}
		}
		read()
		ws.WriteJSON(map[string]any{"type": "CHALLENGE", "challenge_id": "chal_x_1", "nonce": "00ff", "expires_at": 1, "ts": 1})
		read()
		ws.WriteJSON(map[string]any{"type": "ERROR", "code": "VERIFICATION_FAILED", "message": "Invalid signature", "ts": 1})
		ws.ReadMessage()
	}))
	defer fake.Close()
	id := chattest.NewIdentity(t, "foreman")
	r := run(t, agentchat.Config{URL: "ws" + strings.TrimPrefix(fake.URL, "http"), Identity: id})

	identify := <-frames
	var pem string
	require.NoError(t, json.Unmarshal(identify["pubkey"], &pem))
	assert.Equal(t, id.PublicPEM(), pem)
	verify := <-frames
	assert.Regexp(t, `^\d{13}$`, string(verify["timestamp"]))
	assert.Equal(t, "VERIFICATION_FAILED", serverError(t, r.fatal()).Code)
}

// A new key on a server that lets it send anyway (foreman's own, or a
// stock one with LURK_DISABLED) is advised it may only listen: that advice
// is debug, not info, since nothing comes of it; a refusal would be warned.
func TestLurkAdviceThatDoesNotBiteIsDebug(t *testing.T) {
	s := chattest.Start(t, server.Config{Channels: chattest.WithBuild()})
	var logs strings.Builder
	var mu sync.Mutex
	w := zerolog.SyncWriter(writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(p) }))
	c := agentchat.New(agentchat.Config{URL: s.URL(), Channel: chattest.Channel, Identity: chattest.NewIdentity(t, "foreman"),
		Logger: zerolog.New(w).Level(zerolog.DebugLevel)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var connected agentchat.Connected
	for e := range c.Events() {
		if ev, ok := e.(agentchat.Connected); ok {
			connected = ev
		}
		if _, ok := e.(agentchat.Joined); ok {
			break
		}
	}
	c.Send(agentchat.Line{Seq: 1, Text: "TASKS api"})
	for e := range c.Events() {
		if _, ok := e.(agentchat.Delivered); ok {
			break
		}
	}
	cancel()
	require.NoError(t, <-done)
	for range c.Events() { // drained: closed once Run has returned
	}
	require.True(t, connected.Lurk, "the server advised lurking")
	mu.Lock()
	defer mu.Unlock()
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "may send only from") {
			assert.Contains(t, l, `"level":"debug"`)
			return
		}
	}
	t.Fatalf("the advice was not logged at all: %s", logs.String())
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
