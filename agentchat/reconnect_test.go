package agentchat_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/agentchat/internal/chattest"
	"github.com/agentforeman/foreman/agentchat/server"
)

func TestServerRestartMidStream(t *testing.T) {
	cfg := server.Config{Channels: chattest.WithBuild(), RateLimit: 50 * time.Millisecond, State: server.NewState()}
	s1 := chattest.Start(t, cfg)
	proxy := chattest.NewProxy(t, s1.Addr())
	r := run(t, agentchat.Config{URL: proxy.URL(), Identity: chattest.NewIdentity(t, "foreman")})
	r.ready()

	bob := chattest.Member(t, s1, "bob")
	bob.Say("before")
	assert.Equal(t, "before", chat(r).Content)
	r.c.Send(numbered("ACK", 1, 3)...)
	r.delivered(1, 3)
	assert.Equal(t, "ACK 1\nACK 2\nACK 3", bob.Msg()["content"])

	// The server goes down; the client cannot get back until it is up and
	// someone has spoken meanwhile.
	proxy.Hold()
	require.NoError(t, s1.Close())
	next[agentchat.Disconnected](r)
	r.c.Send(numbered("ACK", 4, 3)...)
	assert.Equal(t, 3, r.c.Stats().Queued)

	cfg.Listen = s1.Addr()
	s2 := chattest.Start(t, cfg)
	carol := chattest.Member(t, s2, "carol")
	carol.Say("while away")
	proxy.Release()

	c := next[agentchat.Connected](r)
	assert.True(t, c.Reconnect)
	j := next[agentchat.Joined](r)
	assert.True(t, j.Reconnect)
	var caughtUp []string
	for _, m := range j.History {
		assert.True(t, m.Replay)
		if !m.Notice {
			caughtUp = append(caughtUp, m.Content)
		}
	}
	assert.Equal(t, []string{"while away"}, caughtUp, "only what the client missed; not what it saw or sent")

	r.delivered(4, 3)
	assert.Equal(t, "ACK 4\nACK 5\nACK 6", carol.Msg()["content"])
	st := r.c.Stats()
	assert.Equal(t, int64(1), st.Reconnects)
	assert.Equal(t, int64(2), st.MessagesSent)
	assert.Zero(t, st.Queued)
}

func TestEchoLostInADisconnectIsFoundInTheReplay(t *testing.T) {
	s := chattest.Start(t, server.Config{Channels: chattest.WithBuild(), RateLimit: 50 * time.Millisecond})
	proxy := chattest.NewProxy(t, s.Addr())
	r := run(t, agentchat.Config{URL: proxy.URL(), Identity: chattest.NewIdentity(t, "foreman")})
	r.ready()
	bob := chattest.Member(t, s, "bob")

	proxy.Freeze() // the room gets the message; the client never sees the echo
	r.c.Send(agentchat.Line{Seq: 1, Text: "REVIEW api @bob pr-1"})
	sent := bob.Msg()
	proxy.Cut()

	j := next[agentchat.Joined](r)
	assert.True(t, j.Reconnect)
	for _, m := range j.History {
		assert.NotEqual(t, "REVIEW api @bob pr-1", m.Content, "a confirmed message is not history")
	}
	d := next[agentchat.Delivered](r)
	assert.Equal(t, []uint64{1}, d.Seqs)
	assert.Equal(t, sent["msg_id"], d.MsgID)

	r.c.Send(agentchat.Line{Seq: 2, Text: "after"})
	assert.Equal(t, "after", bob.Msg()["content"], "the first message was not sent twice")
	r.delivered(2, 1)
	assert.Equal(t, int64(2), r.c.Stats().MessagesSent)
}

func TestUnconfirmedMessageIsSentAgainWhenTheRoomLostIt(t *testing.T) {
	cfg := server.Config{Channels: chattest.WithBuild(), RateLimit: 50 * time.Millisecond}
	s1 := chattest.Start(t, cfg)
	proxy := chattest.NewProxy(t, s1.Addr())
	r := run(t, agentchat.Config{URL: proxy.URL(), Identity: chattest.NewIdentity(t, "foreman")})
	r.ready()
	bob := chattest.Member(t, s1, "bob")

	proxy.Freeze()
	r.c.Send(agentchat.Line{Seq: 1, Text: "TASKS api web"})
	bob.Msg()
	// A stock server forgets its history when it restarts.
	proxy.Hold()
	require.NoError(t, s1.Close())
	cfg.Listen = s1.Addr()
	s2 := chattest.Start(t, cfg)
	carol := chattest.Member(t, s2, "carol")
	proxy.Release()

	d := next[agentchat.Delivered](r)
	assert.Equal(t, []uint64{1}, d.Seqs)
	assert.Equal(t, "TASKS api web", carol.Msg()["content"])
}

func TestRestartedBotSeesItsOwnEarlierMessages(t *testing.T) {
	s := chattest.Start(t, server.Config{Channels: chattest.WithBuild(), RateLimit: 50 * time.Millisecond, DisplaceDelay: 10 * time.Millisecond})
	id := chattest.NewIdentity(t, "foreman")
	before := run(t, agentchat.Config{URL: s.URL(), Identity: id})
	before.ready()
	before.c.Send(agentchat.Line{Seq: 1, Text: "ACK api @bob"})
	d := next[agentchat.Delivered](before)
	before.cancel()
	require.NoError(t, before.fatal())

	after := run(t, agentchat.Config{URL: s.URL(), Identity: id})
	j := after.ready()
	var own []agentchat.Message
	for _, m := range j.History {
		if m.Self {
			own = append(own, m)
		}
	}
	require.Len(t, own, 1)
	assert.Equal(t, d.MsgID, own[0].ID)
	assert.Equal(t, "ACK api @bob", own[0].Content)
	assert.False(t, own[0].Notice)
}

func TestNetworkDropReconnectsAndCatchesUp(t *testing.T) {
	s := chattest.Start(t, server.Config{Channels: chattest.WithBuild(), DisplaceDelay: 10 * time.Millisecond})
	r := run(t, agentchat.Config{URL: s.URL(), Identity: chattest.NewIdentity(t, "foreman")})
	r.ready()
	bob := chattest.Member(t, s, "bob")
	bob.Say("seen live")
	assert.Equal(t, "seen live", chat(r).Content)

	s.DropConnections()
	next[agentchat.Disconnected](r)
	j := next[agentchat.Joined](r)
	assert.True(t, j.Reconnect)
	for _, m := range j.History {
		assert.NotEqual(t, "seen live", m.Content, "no duplicates")
	}
}
