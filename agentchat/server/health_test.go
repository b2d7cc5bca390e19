package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat/server"
)

func get(t *testing.T, method, url string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body), resp.Header
}

func TestHealthOnTheChatPort(t *testing.T) {
	before := time.Now().Truncate(time.Millisecond)
	s := start(t, server.Config{Name: "room", Version: "v1.2.3", Channels: withBuild()})
	member(t, s, "alice")
	eph := dial(t, s)
	eph.Send(obj{"type": "IDENTIFY", "name": "nokey"})
	eph.Expect("WELCOME")
	dial(t, s) // connected, not signed in: not counted
	base := "http://" + s.Addr()

	status, body, header := get(t, "GET", base+"/health")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "application/json", header.Get("Content-Type"))
	var h map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &h), body)
	started, err := time.Parse("2006-01-02T15:04:05.000Z", h["started_at"].(string))
	require.NoError(t, err)
	assert.False(t, started.Before(before), "started_at %s", started)
	_, err = time.Parse("2006-01-02T15:04:05.000Z", h["timestamp"].(string))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, h["uptime_seconds"], 0.0)
	delete(h, "started_at")
	delete(h, "timestamp")
	delete(h, "uptime_seconds")
	assert.Equal(t, map[string]any{
		"status": "healthy", "server": "room", "version": "v1.2.3",
		"agents":    map[string]any{"connected": 2.0, "with_identity": 1.0},
		"channels":  map[string]any{"total": 10.0, "public": 10.0},
		"proposals": map[string]any{"total": 0.0, "byStatus": map[string]any{}, "agents": 0.0},
	}, h)

	for _, path := range []string{"/unknown", "/", "/health?x=1", "/health/"} {
		status, body, _ = get(t, "GET", base+path)
		assert.Equal(t, http.StatusNotFound, status, path)
		assert.Equal(t, "Not Found", body, path)
	}
	status, _, _ = get(t, "POST", base+"/health")
	assert.Equal(t, http.StatusNotFound, status)
	status, body, _ = get(t, "GET", base+"/api/connections")
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.JSONEq(t, `{"error":"Unauthorized"}`, body)

	// The WebSocket side is unchanged.
	p := dial(t, s)
	p.Send(obj{"type": "PING"})
	p.Expect("PONG")
	assert.True(t, strings.HasPrefix(s.URL(), "ws://"))
}

func TestHealthVersionDefaultsLikeAStockServer(t *testing.T) {
	s := start(t, server.Config{})
	assert.Equal(t, "0.0.0", s.Health().Version)
	assert.Equal(t, 9, s.Health().Channels.Total)
}
