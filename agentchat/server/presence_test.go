package server_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat/internal/chattest"
	"github.com/agentforeman/foreman/agentchat/server"
)

// listAgents asks for channel's members and returns them by name.
func listAgents(p *chattest.Peer, channel string) map[string]obj {
	p.Send(obj{"type": "LIST_AGENTS", "channel": channel})
	f := p.Expect("AGENTS")
	out := map[string]obj{}
	for _, a := range f["list"].([]any) {
		out[a.(obj)["name"].(string)] = a.(obj)
	}
	return out
}

func TestAgentsStartOnline(t *testing.T) {
	s := start(t, server.Config{Channels: withBuild()})
	a := member(t, s, "alice")
	eph := dial(t, s)
	eph.Send(obj{"type": "IDENTIFY", "name": "nokey"})
	eph.Expect("WELCOME")
	eph.Join("#build")

	agents := listAgents(a, "#build")
	require.Len(t, agents, 2)
	assert.Equal(t, obj{"id": a.ID, "name": "alice", "presence": "online", "status_text": nil, "verified": false}, agents["alice"])
	assert.Equal(t, "online", agents["nokey"]["presence"])

	a.Send(obj{"type": "LIST_AGENTS", "channel": "#nowhere"})
	assert.Equal(t, "Channel #nowhere not found", a.ExpectError("CHANNEL_NOT_FOUND")["message"])
	a.Send(obj{"type": "LIST_AGENTS", "channel": "nowhere"})
	assert.Equal(t, "Invalid channel name", a.ExpectError("INVALID_MSG")["message"])
}

func TestPresenceIsToldToEveryOtherMemberOnce(t *testing.T) {
	s := start(t, server.Config{Channels: withBuild()})
	a := member(t, s, "alice")
	b := member(t, s, "bob") // shares #build and the stock channels with alice
	settle(a)
	settle(b)

	a.Send(obj{"type": "SET_PRESENCE", "status": "away", "status_text": "Be right back"})
	expectNext(t, a, nil, nil, "alice") // no answer to the sender
	got := nextFrame(b)
	assert.Equal(t, obj{"type": "PRESENCE_CHANGED", "ts": got["ts"], "agent_id": a.ID, "name": "alice",
		"presence": "away", "status_text": "Be right back"}, got)
	expectNext(t, b, nil, nil, "bob") // once, though they share nine channels

	mine := listAgents(b, "#build")["alice"]
	assert.Equal(t, "away", mine["presence"])
	assert.Equal(t, "Be right back", mine["status_text"])

	a.Send(obj{"type": "SET_PRESENCE", "status": "listening"})
	assert.Equal(t, nil, nextFrame(b)["status_text"], "no text is null")
	for _, status := range []string{"online", "busy", "offline"} {
		a.Send(obj{"type": "SET_PRESENCE", "status": status})
		assert.Equal(t, status, nextFrame(b)["presence"])
	}
}

func TestPresenceIsChecked(t *testing.T) {
	s := start(t, server.Config{})
	p := dial(t, s)
	p.Send(obj{"type": "SET_PRESENCE", "status": "away"})
	assert.Equal(t, "Must IDENTIFY first", p.ExpectError("AUTH_REQUIRED")["message"])
	p.SignIn(newIdentity(t, "alice"), "alice")
	long := make([]byte, 101)
	for i := range long {
		long[i] = 'x'
	}
	for _, tc := range []struct {
		frame obj
		want  string
	}{
		{obj{"type": "SET_PRESENCE", "status": "invalid-status"}, "Invalid presence status. Must be one of: online, away, busy, offline, listening"},
		{obj{"type": "SET_PRESENCE"}, "Invalid presence status. Must be one of: online, away, busy, offline, listening"},
		{obj{"type": "SET_PRESENCE", "status": "away", "status_text": nil}, "status_text must be a string"},
		{obj{"type": "SET_PRESENCE", "status": "away", "status_text": 7}, "status_text must be a string"},
		{obj{"type": "SET_PRESENCE", "status": "away", "status_text": string(long)}, "status_text too long (max 100 chars)"},
	} {
		p.Send(tc.frame)
		assert.Equal(t, tc.want, p.ExpectError("INVALID_MSG")["message"], tc.frame)
	}
}

func TestNickChanges(t *testing.T) {
	s := start(t, server.Config{Channels: withBuild()})
	a := member(t, s, "alice")
	b := member(t, s, "bob")
	settle(a)
	settle(b)

	a.Send(obj{"type": "SET_NICK", "nick": "alicia"})
	want := obj{"type": "NICK_CHANGED", "agent_id": a.ID, "old_nick": "alice", "new_nick": "alicia"}
	for _, p := range []*chattest.Peer{a, b} {
		got := nextFrame(p)
		want["ts"] = got["ts"]
		assert.Equal(t, want, got)
		expectNext(t, p, nil, nil, "a member")
	}
	assert.Equal(t, "alicia", a.Say("new name")["from_name"])
	assert.Contains(t, listAgents(b, "#build"), "alicia")

	a.Send(obj{"type": "SET_NICK", "nick": "Admin"})
	assert.Equal(t, `Nick "Admin" is reserved`, a.ExpectError("INVALID_NAME")["message"])
	a.Send(obj{"type": "SET_NICK", "nick": "again"})
	assert.Regexp(t, `^Nick change rate limited\. Try again in (30|29|28)s$`, a.ExpectError("RATE_LIMITED")["message"])
	a.Send(obj{"type": "SET_NICK", "nick": "no spaces"})
	assert.Equal(t, "Nick must contain only alphanumeric characters, hyphens, and underscores", a.ExpectError("INVALID_MSG")["message"])
	a.Send(obj{"type": "SET_NICK", "nick": "a_very_long_nick_of_25_ch"})
	assert.Equal(t, "Nick must be 1-24 characters", a.ExpectError("INVALID_MSG")["message"])
}

func TestTypingGoesToTheOthers(t *testing.T) {
	s := start(t, server.Config{Channels: withBuild()})
	a := member(t, s, "alice")
	b := member(t, s, "bob")
	settle(a)
	settle(b)

	a.Send(obj{"type": "TYPING", "channel": "#build"})
	expectNext(t, a, nil, nil, "alice")
	got := nextFrame(b)
	assert.Equal(t, obj{"type": "TYPING", "ts": got["ts"], "from": a.ID, "from_name": "alice", "channel": "#build"}, got)

	// Unknown channels and strangers are ignored without a word.
	a.Send(obj{"type": "TYPING", "channel": "#nowhere"})
	expectNext(t, a, nil, nil, "alice")
	stranger := dial(t, s)
	stranger.Send(obj{"type": "TYPING", "channel": "#build"})
	expectNext(t, stranger, nil, nil, "a stranger")
	expectNext(t, b, nil, nil, "bob")
}
