package main

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/agentchat/server"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// syncBuffer is written by the command while the test reads it.
type syncBuffer = roomtest.SyncBuffer

func TestServeRunsUntilInterrupted(t *testing.T) {
	var stdout, stderr syncBuffer
	config := writeFile(t, t.TempDir(), "foreman.yaml", "server:\n  channel: \"#build\"\n")
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"serve", config, "--listen", "127.0.0.1:0", "--rate-limit", "100ms", "--log-format", "json"}, &stdout, &stderr)
	}()

	listening := regexp.MustCompile(`listening on (ws://127\.0\.0\.1:\d+)`)
	var url string
	require.Eventually(t, func() bool {
		m := listening.FindStringSubmatch(stderr.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	}, 5*time.Second, 5*time.Millisecond, "no listening line in %q", stderr.String())

	id, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	c := agentchat.New(agentchat.Config{URL: url, Channel: "#build", Identity: id, Logger: zerolog.Nop()})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- c.Run(ctx) }()
	timeout := time.After(5 * time.Second)
	for joined := false; !joined; {
		select {
		case e := <-c.Events():
			if j, ok := e.(agentchat.Joined); ok {
				assert.Equal(t, "#build", j.Channel)
				joined = true
			}
		case <-timeout:
			t.Fatal("the client never joined #build")
		}
	}
	cancel()
	require.NoError(t, <-ran)

	resp, err := http.Get("http" + strings.TrimPrefix(url, "ws") + "/health")
	require.NoError(t, err)
	var health server.Health
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&health))
	resp.Body.Close()
	assert.Equal(t, "healthy", health.Status)
	assert.NotEmpty(t, health.Version)
	assert.Equal(t, 10, health.Channels.Total, "the stock channels and #build")

	require.NoError(t, syscall.Kill(syscall.Getpid(), syscall.SIGINT))
	select {
	case code := <-done:
		assert.Equal(t, 0, code, stderr.String())
	case <-time.After(5 * time.Second):
		t.Fatal("serve did not stop on SIGINT")
	}
	assert.Contains(t, stderr.String(), "stopped")
}

func TestServeRefusesABadChannel(t *testing.T) {
	config := writeFile(t, t.TempDir(), "foreman.yaml", "server:\n  channel: \"#build\"\n")
	code, _, errOut := foreman(t, "serve", config, "--listen", "127.0.0.1:0", "--channel", "build")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `"build" is not a channel name`)
}

// foreman serve starts without a build config, as a stock AgentChat
// server starts with no file: scripts that run foreman serve --listen ADDR
// keep working.
func TestServeNeedsNoConfig(t *testing.T) {
	t.Chdir(t.TempDir())
	_, stderr, done, stop := startAgent(t, strings.NewReader(""), "serve", "--listen", "127.0.0.1:0")
	listening := regexp.MustCompile(`listening on (ws://127\.0\.0\.1:\d+)`)
	require.Eventually(t, func() bool { return listening.MatchString(stderr.String()) }, agentWait, 5*time.Millisecond, "%s", stderr)
	url := listening.FindStringSubmatch(stderr.String())[1]
	p := roomPeer(t, url, "b1") // in #build, the default server.channel
	p.say("hello")
	stop()
	assert.Equal(t, 0, <-done, stderr.String())
}
