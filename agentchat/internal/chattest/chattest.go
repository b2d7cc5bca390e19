// Package chattest holds helpers for tests against the embedded server: a
// raw WebSocket peer that speaks frame by frame, and a TCP proxy that can
// cut, hold and freeze a client's connections. Everything listens on
// 127.0.0.1 with a random port.
package chattest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/agentchat/server"
)

// Wait bounds every wait in tests; nothing here should take long.
const Wait = 5 * time.Second

// Channel is the channel tests talk in.
const Channel = "#build"

// Start starts a server on a random port, stopped when the test ends.
func Start(t testing.TB, cfg server.Config) *server.Server {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	cfg.Logger = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	s, err := server.Start(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// WithBuild is the stock channels and Channel.
func WithBuild() []string { return append(server.DefaultChannels(), Channel) }

// NewIdentity is a fresh key pair.
func NewIdentity(t testing.TB, name string) *agentchat.Identity {
	t.Helper()
	id, err := agentchat.NewIdentity(name)
	require.NoError(t, err)
	return id
}

// Obj is a frame.
type Obj = map[string]any

// Peer is a raw WebSocket client that speaks frame by frame.
type Peer struct {
	T  testing.TB
	WS *websocket.Conn
	ID string // agent id, once signed in
}

// Dial connects a peer to url.
func Dial(t testing.TB, url string) *Peer {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	require.NoError(t, err)
	t.Cleanup(func() { ws.Close() })
	return &Peer{T: t, WS: ws}
}

// Member dials s, signs a fresh identity in and joins Channel.
func Member(t testing.TB, s *server.Server, name string) *Peer {
	t.Helper()
	p := Dial(t, s.URL())
	p.SignIn(NewIdentity(t, name), name)
	p.Join(Channel)
	return p
}

// Send sends v as JSON.
func (p *Peer) Send(v any) {
	p.T.Helper()
	data, err := json.Marshal(v)
	require.NoError(p.T, err)
	p.SendRaw(data)
}

// SendRaw sends data as one text frame.
func (p *Peer) SendRaw(data []byte) {
	p.T.Helper()
	require.NoError(p.T, p.WS.WriteMessage(websocket.TextMessage, data))
}

// Read returns the next frame.
func (p *Peer) Read() Obj {
	p.T.Helper()
	p.WS.SetReadDeadline(time.Now().Add(Wait))
	_, data, err := p.WS.ReadMessage()
	require.NoError(p.T, err)
	var f Obj
	require.NoError(p.T, json.Unmarshal(data, &f), string(data))
	require.Contains(p.T, f, "ts", "every server frame carries ts")
	return f
}

// Next returns the next frame that is neither traffic of another channel
// (WELCOME joins every public channel) nor a server notice.
func (p *Peer) Next() Obj {
	p.T.Helper()
	for {
		f := p.Read()
		if f["type"] == "MSG" && (f["to"] != Channel || f["from"] == "@server") {
			continue
		}
		return f
	}
}

// Msg returns the next agent message in Channel, skipping everything else.
func (p *Peer) Msg() Obj {
	p.T.Helper()
	for {
		if f := p.Next(); f["type"] == "MSG" {
			return f
		}
	}
}

// Expect returns the next frame of type typ, skipping others.
func (p *Peer) Expect(typ string) Obj {
	p.T.Helper()
	for {
		if f := p.Read(); f["type"] == typ {
			return f
		}
	}
}

// ExpectError returns the next ERROR, which must have code.
func (p *Peer) ExpectError(code string) Obj {
	p.T.Helper()
	f := p.Expect("ERROR")
	require.Equal(p.T, code, f["code"], f)
	return f
}

// Closed reads until the connection ends and returns the close code
// (1006 when it ended without a close frame).
func (p *Peer) Closed() int {
	p.T.Helper()
	p.WS.SetReadDeadline(time.Now().Add(Wait))
	for {
		_, _, err := p.WS.ReadMessage()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		require.True(p.T, errors.As(err, &ce), "want a close, got %v", err)
		return ce.Code
	}
}

// SignIn identifies with id's key and answers the challenge; it returns
// WELCOME.
func (p *Peer) SignIn(id *agentchat.Identity, name string) Obj {
	p.T.Helper()
	p.Send(Obj{"type": "IDENTIFY", "name": name, "pubkey": id.PublicPEM()})
	ch := p.Expect("CHALLENGE")
	ts := time.Now().UnixMilli()
	p.Send(Obj{
		"type": "VERIFY_IDENTITY", "challenge_id": ch["challenge_id"], "timestamp": ts,
		"signature": id.SignChallenge(ch["nonce"].(string), ch["challenge_id"].(string), ts),
	})
	w := p.Expect("WELCOME")
	p.ID = w["agent_id"].(string)
	return w
}

// Join joins channel and returns JOINED.
func (p *Peer) Join(channel string) Obj {
	p.T.Helper()
	p.Send(Obj{"type": "JOIN", "channel": channel})
	return p.Expect("JOINED")
}

// Say sends content to Channel and returns its echo.
func (p *Peer) Say(content string) Obj {
	p.T.Helper()
	p.Send(Obj{"type": "MSG", "to": Channel, "content": content})
	for {
		f := p.Next()
		require.NotEqual(p.T, "ERROR", f["type"], f)
		if f["type"] == "MSG" && f["from"] == p.ID && f["content"] == content {
			return f
		}
	}
}
