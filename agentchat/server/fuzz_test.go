package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat/internal/chattest"
	"github.com/agentforeman/foreman/agentchat/server"
)

// FuzzFrames sends one arbitrary client frame, over a real WebSocket, from
// a connection that is signed in or not. Whatever it holds, the server
// must go on: it answers that connection's next PING or closes that one
// connection, and a member watching the room is still served. The seeds
// are every frame of the conformance table and some broken ones; `go test`
// runs the seeds, `go test -fuzz FuzzFrames ./agentchat/server` searches.
func FuzzFrames(f *testing.F) {
	for _, rows := range conformanceRows() {
		for _, row := range rows {
			data, err := json.Marshal(row.frame)
			require.NoError(f, err)
			f.Add(data, row.from == "anon")
			f.Add(data, row.from != "anon")
		}
	}
	for _, broken := range []string{
		``, `{`, `null`, `[]`, `"MSG"`, `{"type":null}`, `{"type":7}`, `{"type":"MSG","to":["#build"],"content":{}}`,
		`{"type":"MSG","to":"#build","content":"` + string(make([]byte, 70000)) + `"}`,
		`{"type":"JOIN","channel":"#` + string(make([]byte, 300)) + `"}`,
		`{"type":"IDENTIFY","name":"x","pubkey":"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----"}`,
		`{"type":"RESPONDING_TO","channel":"#build","msg_id":"","started_at":-1e308}`,
		`{"type":"SET_PRESENCE","status":"away","status_text":` + `"` + string(make([]byte, 5000)) + `"}`,
	} {
		f.Add([]byte(broken), true)
		f.Add([]byte(broken), false)
	}
	// The server logs nowhere: its log would go through f, which a fuzz
	// function may not touch. The watcher PINGs once per input, so the
	// flood limit after sign-in is lifted; no input's connection sends more
	// than four frames.
	s, err := server.Start(context.Background(), server.Config{Listen: "127.0.0.1:0", Channels: withBuild(),
		Logger: zerolog.Nop(), FloodFrames: 1 << 30})
	require.NoError(f, err)
	f.Cleanup(func() { s.Close() })
	watcher := member(f, s, "watcher")

	f.Fuzz(func(t *testing.T, frame []byte, anon bool) {
		p := chattest.Dial(t, s.URL())
		if !anon {
			// A fresh key each time: the same key again while its last
			// connection is still closing would wait out the displacement.
			p.SignIn(newIdentity(t, "fuzz"), "fuzz")
			p.Join("#build")
		}
		p.SendRaw(frame)
		if err := p.WS.WriteMessage(websocket.TextMessage, []byte(`{"type":"PING"}`)); err == nil {
			answeredOrClosed(t, p)
		}
		w := *watcher
		w.T = t
		settle(&w)
	})
}

// answeredOrClosed reads p until the server's PONG or its close of this
// connection; a server that says nothing at all fails.
func answeredOrClosed(t *testing.T, p *chattest.Peer) {
	p.WS.SetReadDeadline(time.Now().Add(chattest.Wait))
	for {
		_, data, err := p.WS.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			require.True(t, errors.As(err, &ce), "neither a PONG nor a close: %v", err)
			return
		}
		var fr map[string]any
		require.NoError(t, json.Unmarshal(data, &fr), "the server sent a frame that is not JSON: %q", data)
		if fr["type"] == "PONG" {
			return
		}
	}
}
