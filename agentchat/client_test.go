package agentchat_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/agentchat/internal/chattest"
	"github.com/agentforeman/foreman/agentchat/server"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

func TestClientSignsInWithItsKey(t *testing.T) {
	s := chattest.Start(t, server.Config{Channels: chattest.WithBuild()})
	id := chattest.NewIdentity(t, "foreman")
	r := run(t, agentchat.Config{URL: s.URL(), Identity: id})
	assert.Equal(t, id.AgentID(), r.c.AgentID(), "known before connecting")

	c := next[agentchat.Connected](r)
	assert.Equal(t, id.AgentID(), c.AgentID)
	assert.Equal(t, "foreman", c.Name)
	assert.True(t, c.Lurk, "the server's advice is passed on")
	assert.False(t, c.Reconnect)
	j := next[agentchat.Joined](r)
	assert.Equal(t, "#build", j.Channel)
	assert.Contains(t, j.Agents, agentchat.Agent{ID: id.AgentID(), Name: "foreman"})
	assert.False(t, j.Reconnect)
}

// A stock server run with LURK_DISABLED=true tells a new key it lurks for an
// hour, then accepts its messages. The client sends at once: only a
// refusal makes it wait.
func TestAdvertisedLurkIsOnlyAdvice(t *testing.T) {
	s := chattest.Start(t, server.Config{Channels: chattest.WithBuild()})
	listener := chattest.Member(t, s, "listener")
	r := run(t, agentchat.Config{URL: s.URL(), Identity: chattest.NewIdentity(t, "foreman")})
	c := next[agentchat.Connected](r)
	require.True(t, c.Lurk)
	require.True(t, c.LurkUntil.After(time.Now().Add(50*time.Minute)), "an hour from now")
	r.c.Send(agentchat.Line{Seq: 1, Text: "TASKS api"})
	r.delivered(1, 1)
	assert.Equal(t, "TASKS api", listener.Msg()["content"])
}

// A stock server redacts what looks like a secret in every message, the
// sender's too. A stamped message is still known for the sender's own.
func TestRedactedEchoIsKnownByItsStamp(t *testing.T) {
	s := chattest.Start(t, server.Config{Channels: chattest.WithBuild()})
	listener := chattest.Member(t, s, "listener")
	r := run(t, agentchat.Config{URL: s.URL(), Identity: chattest.NewIdentity(t, "foreman"), Tag: "foreman shop/abc123"})
	r.ready()
	r.c.Send(agentchat.Line{Seq: 1, Text: "ACK kiosk-paymentterminaldriver @b1", Group: 1})
	r.delivered(1, 1)
	m := listener.Msg()
	assert.Equal(t, "ACK kio[REDACTED:openai_api_key] @b1\n[foreman shop/abc123 #1]", m["content"])
}

// A client without a stamp knows its echo in the form the room gives it
// back: invalid UTF-8 replaced, secrets redacted. Otherwise it would wait
// for an echo that never comes and never send again.
func TestRewrittenEchoOfAnUnstampedClient(t *testing.T) {
	s := chattest.Start(t, server.Config{Channels: chattest.WithBuild()})
	listener := chattest.Member(t, s, "listener")
	r := run(t, agentchat.Config{URL: s.URL(), Identity: chattest.NewIdentity(t, "peer")})
	r.ready()
	r.c.Send(agentchat.Line{Seq: 1, Text: "CLAIM \xff\xfe kiosk-paymentterminaldriver"})
	assert.Equal(t, "CLAIM \uFFFD\uFFFD kio[REDACTED:openai_api_key]", listener.Msg()["content"])
	r.delivered(1, 1)
	r.c.Send(agentchat.Line{Seq: 2, Text: "STATUS"})
	r.delivered(2, 1)
}

func TestEphemeralClientIsToldItLurks(t *testing.T) {
	s := chattest.Start(t, server.Config{Channels: chattest.WithBuild()})
	r := run(t, agentchat.Config{URL: s.URL(), Name: "watcher"})
	c := next[agentchat.Connected](r)
	assert.True(t, c.Lurk)
	assert.True(t, c.LurkUntil.IsZero(), "an ephemeral agent never unlocks")
	assert.Regexp(t, `^@[0-9a-z]{8}$`, c.AgentID)
	assert.Equal(t, c.AgentID, r.c.AgentID())
	next[agentchat.Joined](r)
	r.c.Send(agentchat.Line{Seq: 1, Text: "hello"})
	assert.Equal(t, 1, r.c.Stats().Queued)
}

func TestTwoClientsTalk(t *testing.T) {
	// No rate limit: the raw peer below does not pace itself.
	s := chattest.Start(t, server.Config{Channels: chattest.WithBuild()})
	alice := run(t, agentchat.Config{URL: s.URL(), Name: "alice", Identity: chattest.NewIdentity(t, "alice")})
	alice.ready()
	bobID := chattest.NewIdentity(t, "bob")
	bob := run(t, agentchat.Config{URL: s.URL(), Name: "bob", Identity: bobID})
	bob.ready()
	joined := next[agentchat.AgentJoined](alice)
	assert.Equal(t, agentchat.AgentJoined{Channel: "#build", Agent: agentchat.Agent{ID: bobID.AgentID(), Name: "bob"}}, joined)
	notice := next[agentchat.Message](alice)
	assert.True(t, notice.Notice)
	assert.Equal(t, "@server", notice.From)

	// Traffic of other channels never shows: the first message alice gets
	// is the second one carol sends.
	carol := chattest.Dial(t, s.URL())
	carol.SignIn(chattest.NewIdentity(t, "carol"), "carol")
	carol.Send(chattest.Obj{"type": "MSG", "to": "#general", "content": "elsewhere"})
	carol.Send(chattest.Obj{"type": "MSG", "to": "#build", "content": "here"})
	m := chat(alice)
	assert.Equal(t, "here", m.Content)
	assert.Equal(t, carol.ID, m.From)

	bob.c.Send(agentchat.Line{Seq: 1, Text: "CLAIM api"}, agentchat.Line{Seq: 2, Text: "PROGRESS api 10"})
	d := next[agentchat.Delivered](bob)
	assert.Equal(t, []uint64{1, 2}, d.Seqs)
	assert.NotEmpty(t, d.MsgID)

	m = chat(alice)
	assert.Equal(t, agentchat.Message{
		ID: d.MsgID, From: bobID.AgentID(), FromName: "bob", To: "#build",
		Content: "CLAIM api\nPROGRESS api 10", TS: d.TS,
	}, m)

	// Bob's own message came back as a confirmation, not as a Message:
	// the next one he gets is alice's answer.
	alice.c.Send(agentchat.Line{Seq: 1, Text: "ACK api @bob"})
	m = chat(bob)
	assert.Equal(t, "ACK api @bob", m.Content)
	assert.False(t, m.Self)
	assert.Equal(t, agentchat.Stats{MessagesSent: 1, LinesSent: 2}, bob.c.Stats())

	bob.cancel()
	left := next[agentchat.AgentLeft](alice)
	assert.Equal(t, bobID.AgentID(), left.Agent.ID)
}

func TestBurstOfLinesGoesOutInOneOrTwoMessages(t *testing.T) {
	s := chattest.Start(t, server.Config{Channels: chattest.WithBuild(), RateLimit: 100 * time.Millisecond})
	listener := chattest.Member(t, s, "listener")
	r := run(t, agentchat.Config{URL: s.URL(), Identity: chattest.NewIdentity(t, "foreman"), RateLimit: 100 * time.Millisecond})
	r.ready()

	lines := numbered("STATUS c", 1, 100)
	for _, l := range lines {
		r.c.Send(l)
	}
	ds := r.delivered(1, 100)
	assert.LessOrEqual(t, len(ds), 2, "the first line may go alone; the rest wait for the next slot together")

	var got []string
	for len(got) < 100 {
		m := listener.Msg()
		got = append(got, strings.Split(m["content"].(string), "\n")...)
	}
	want := make([]string, 100)
	for i, l := range lines {
		want[i] = l.Text
	}
	assert.Equal(t, want, got, "every line once, in order")
	st := r.c.Stats()
	assert.Equal(t, int64(100), st.LinesSent)
	assert.Equal(t, int64(len(ds)), st.MessagesSent)
	assert.Zero(t, st.Queued)
}

func TestRateLimitedMessagesAreSentAgain(t *testing.T) {
	// The room is five times stricter than the client believes.
	s := chattest.Start(t, server.Config{Channels: chattest.WithBuild(), RateLimit: 100 * time.Millisecond})
	listener := chattest.Member(t, s, "listener")
	r := run(t, agentchat.Config{URL: s.URL(), Identity: chattest.NewIdentity(t, "foreman"), RateLimit: 10 * time.Millisecond})
	r.ready()

	const rounds = 4
	for i := 1; i <= rounds; i++ {
		r.c.Send(numbered("PROGRESS api", uint64(i), 1)...)
		r.delivered(uint64(i), 1)
	}
	count := map[string]int{}
	for len(count) < rounds {
		count[listener.Msg()["content"].(string)]++
	}
	for i := 1; i <= rounds; i++ {
		assert.Equal(t, 1, count[numbered("PROGRESS api", uint64(i), 1)[0].Text])
	}
	st := r.c.Stats()
	assert.Positive(t, st.Resent, "the room refused at least one message as too fast")
	assert.Equal(t, int64(rounds), st.MessagesSent)
}

// chat returns the client's next message that is not a server notice.
func chat(r *running) agentchat.Message {
	r.t.Helper()
	for {
		if m := next[agentchat.Message](r); !m.Notice {
			return m
		}
	}
}

// A server that was never reached is not retried for ever: Run says which
// URL it could not reach.
func TestFirstConnectionGivesUp(t *testing.T) {
	dead := chattest.Start(t, server.Config{Channels: chattest.WithBuild()})
	url := dead.URL()
	dead.Close()
	r := run(t, agentchat.Config{URL: url, FirstAttempts: 3})
	err := r.fatal()
	var ue *agentchat.UnreachableError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, 3, ue.Attempts)
	assert.Contains(t, err.Error(), "cannot reach the chat server at "+url)
}

// Ping reads the room's clock after everything the room sent before it.
func TestPingReadsTheRoomsClock(t *testing.T) {
	s := chattest.Start(t, server.Config{Channels: chattest.WithBuild()})
	other := chattest.Member(t, s, "other")
	r := run(t, agentchat.Config{URL: s.URL(), Identity: chattest.NewIdentity(t, "foreman")})
	r.ready()
	said := other.Say("CLAIM api")
	r.c.Ping()
	var m agentchat.Message
	for m = next[agentchat.Message](r); m.Notice; m = next[agentchat.Message](r) {
	}
	assert.Equal(t, "CLAIM api", m.Content)
	c := next[agentchat.Clock](r)
	assert.GreaterOrEqual(t, c.TS.UnixMilli(), int64(said["ts"].(float64)), "no earlier line is still to come")
}

// A stock room is full of frames foreman has no use for: presence, typing,
// floor control, nick changes, verification requests. The client reads
// past them without a log line each and carries on.
func TestFramesForemanDoesNotUseAreIgnoredQuietly(t *testing.T) {
	s := chattest.Start(t, server.Config{Channels: chattest.WithBuild()})
	var log roomtest.SyncBuffer
	id := chattest.NewIdentity(t, "foreman")
	r := runLogged(t, agentchat.Config{URL: s.URL(), Identity: id}, &log)
	r.ready()
	before := log.String()

	other := chattest.Member(t, s, "other")
	for range 3 {
		other.Send(chattest.Obj{"type": "SET_PRESENCE", "status": "busy", "status_text": "thinking"})
		other.Send(chattest.Obj{"type": "TYPING", "channel": "#build"})
		other.Send(chattest.Obj{"type": "RESPONDING_TO", "msg_id": "m", "channel": "#build", "started_at": 1})
		other.Send(chattest.Obj{"type": "VERIFY_REQUEST", "target": id.AgentID(), "nonce": "0123456789abcdef"})
	}
	other.Send(chattest.Obj{"type": "SET_NICK", "nick": "renamed"})
	other.Say("CLAIM api")
	m := chat(r)
	assert.Equal(t, "CLAIM api", m.Content)
	assert.Equal(t, "renamed", m.FromName)

	after := strings.TrimPrefix(log.String(), before)
	for _, typ := range []string{"PRESENCE", "TYPING", "FLOOR", "VERIFY", "NICK", "cannot read"} {
		assert.NotContains(t, after, typ)
	}
	assert.LessOrEqual(t, strings.Count(after, "\n"), 2, "a line or two for the newcomer at most:\n%s", after)
}
