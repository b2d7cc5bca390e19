package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
)

func TestChatHandlesSlashCommandsLocally(t *testing.T) {
	r := newAgentRoom(t)
	in, typing := io.Pipe()
	stdout, stderr, done, _ := startAgent(t, in, "agent", "--url", r.url, "--role", "chat", "--name", "me", "--rate-limit", "5ms")
	go func() { _, _ = io.WriteString(typing, "/help\n/bogus x\nSTATUS\n/quit\n") }()

	timeout := time.After(agentWait)
	for said := false; !said; {
		select {
		case m := <-r.lines:
			assert.NotContains(t, m.Content, "/", "a /command is never sent")
			said = strings.Contains(m.Content, "STATUS")
		case <-timeout:
			t.Fatal("STATUS never reached the room")
		}
	}
	select {
	case code := <-done:
		assert.Equal(t, 0, code, stderr.String())
	case <-time.After(agentWait):
		t.Fatal("/quit did not end the chat")
	}
	assert.Contains(t, stderr.String(), "/help lists them,\n/quit leaves", "the local commands are announced at start")
	assert.Contains(t, stderr.String(), "operators  ASSIGN c @id | RELEASE c | RESOLVE c [note]")
	assert.Contains(t, stderr.String(), "/bogus is not a command here")
	assert.Regexp(t, `\d\d:\d\d:\d\d  me +chat +STATUS\n`, stdout.String(), "its own line is shown, with a time, once the room has it")
}

func TestChatShowsHistoryAtItsOwnTime(t *testing.T) {
	var out bytes.Buffer
	show := newRoomShow(&out, false, "")
	said := time.Date(2020, 1, 2, 3, 4, 5, 0, time.Local)
	showMessage(show, agentchat.Message{From: "@f", FromName: "foreman", Content: "TASKS api\nACK api @b1", TS: said, Replay: true})
	showMessage(show, agentchat.Message{From: "@server", Content: "b1 joined", Notice: true})
	assert.Equal(t, "Jan 02 03:04:05  foreman  coordinator TASKS api\nJan 02 03:04:05  foreman  coordinator ACK api @b1\n", out.String())

	out.Reset()
	show = newRoomShow(&out, false, "")
	stamp := agentchat.Stamp{Tag: "foreman shop/7f3a9c", Seqs: []agentchat.SeqRange{{From: 12, To: 12}}}
	showMessage(show, agentchat.Message{From: "@f", FromName: "foreman", Content: "STATUS db pending\n" + stamp.String(), Stamp: &stamp, TS: said})
	assert.Equal(t, "Jan 02 03:04:05  foreman  coordinator STATUS db pending\n", out.String(), "the stamp is not shown, and names the coordinator")

	now := time.Now()
	assert.Equal(t, now.Add(-time.Second).Format(time.TimeOnly), clock(now.Add(-time.Second), now), "today's lines show the time of day")
	assert.Equal(t, now.Format(time.TimeOnly), clock(time.Time{}, now))
}

func TestAgentSaysItIsInTheRoomOnlyOnceJoined(t *testing.T) {
	in, typing := io.Pipe()
	t.Cleanup(func() { typing.Close() })
	_, stderr, done, _ := startAgent(t, in, "agent", "--url", "ws://127.0.0.1:1", "--role", "chat", "--name", "me", "--log-level", "warn")
	select {
	case code := <-done: // after a few attempts, however long they take
		assert.Equal(t, 1, code)
	case <-time.After(time.Minute):
		t.Fatal("the agent kept trying a server that is not there")
	}
	assert.Contains(t, stderr.String(), "me: agent id ")
	assert.Contains(t, stderr.String(), "cannot reach the chat server at ws://127.0.0.1:1 ", "the URL at fault")
	assert.NotContains(t, stderr.String(), "me: in #build", "no room, so not in it")

	r := newAgentRoom(t)
	_, stderr, _, stop := startAgent(t, strings.NewReader(""), "agent", "--url", r.url, "--role", "auditor", "--name", "aud", "--rate-limit", "5ms")
	r.joined("aud")
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "aud: in #build\n") }, agentWait, 5*time.Millisecond)
	stop()
}
