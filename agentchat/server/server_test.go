package server_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat/server"
)

func TestKeyedHandshake(t *testing.T) {
	s := start(t, server.Config{})
	p := dial(t, s)
	id := newIdentity(t, "foreman")

	p.Send(obj{"type": "IDENTIFY", "name": "foreman", "pubkey": id.PublicPEM()})
	ch := p.Expect("CHALLENGE")
	assert.Regexp(t, `^chal_[0-9a-z]+_[0-9a-f]{8}$`, ch["challenge_id"])
	assert.Regexp(t, `^[0-9a-f]{32}$`, ch["nonce"])
	expires := time.UnixMilli(int64(ch["expires_at"].(float64)))
	assert.WithinDuration(t, time.Now().Add(time.Minute), expires, 5*time.Second)

	ts := time.Now().UnixMilli()
	p.Send(obj{"type": "VERIFY_IDENTITY", "challenge_id": ch["challenge_id"], "timestamp": ts,
		"signature": id.SignChallenge(ch["nonce"].(string), ch["challenge_id"].(string), ts)})
	w := p.Expect("WELCOME")
	assert.Equal(t, id.AgentID(), w["agent_id"])
	assert.Equal(t, "foreman", w["name"])
	assert.Equal(t, false, w["verified"])
	// Lurking is off by default, but WELCOME advertises it to a new key all
	// the same, as a stock server run with LURK_DISABLED=true does.
	assert.Equal(t, true, w["lurk"])
	assert.InDelta(t, float64(time.Now().Add(time.Hour).UnixMilli()), w["lurk_until"], 5000)
	assert.NotEmpty(t, w["server"])
	assert.Equal(t, []string{id.AgentID()}, s.Agents())

	p.Send(obj{"type": "IDENTIFY", "name": "again"})
	assert.Equal(t, "Already identified", p.ExpectError("INVALID_MSG")["message"])
}

func TestEphemeralAgentsSendOnceJoined(t *testing.T) {
	s := start(t, server.Config{Channels: withBuild()})
	listener := member(t, s, "bob")
	p := dial(t, s)
	p.Send(obj{"type": "IDENTIFY", "name": "nokey"})
	w := p.Expect("WELCOME")
	assert.Regexp(t, `^@[0-9a-z]{8}$`, w["agent_id"])
	// WELCOME says it lurks, as a stock server run with LURK_DISABLED=true
	// says, and then lets it send.
	assert.Equal(t, true, w["lurk"])
	assert.Equal(t, "Persistent identity required to send messages. Connect with a saved keypair.", w["lurk_reason"])
	p.ID = w["agent_id"].(string)
	p.Join("#build")
	echo := p.Say("hello")
	assert.Equal(t, echo, listener.Msg())
	assert.Equal(t, "nokey", echo["from_name"])
}

func TestEphemeralAgentsOnlyListenWithLurk(t *testing.T) {
	s := start(t, server.Config{Channels: withBuild(), Lurk: true, RateLimit: time.Hour})
	p := dial(t, s)
	p.Send(obj{"type": "IDENTIFY", "name": "lurker"})
	p.ID = p.Expect("WELCOME")["agent_id"].(string)
	p.Join("#build")
	for range 2 { // refused before the rate limit: no slot is taken
		p.Send(obj{"type": "MSG", "to": "#build", "content": "hello"})
		assert.Equal(t, "Persistent identity required to send messages", p.ExpectError("LURK_MODE")["message"])
	}
}

func TestWrongSignatureKeepsTheConnection(t *testing.T) {
	s := start(t, server.Config{})
	p := dial(t, s)
	id := newIdentity(t, "foreman")
	p.Send(obj{"type": "IDENTIFY", "name": "foreman", "pubkey": id.PublicPEM()})
	ch := p.Expect("CHALLENGE")
	ts := time.Now().UnixMilli()
	p.Send(obj{"type": "VERIFY_IDENTITY", "challenge_id": ch["challenge_id"], "timestamp": ts + 1,
		"signature": id.SignChallenge(ch["nonce"].(string), ch["challenge_id"].(string), ts)})
	p.ExpectError("VERIFICATION_FAILED")

	w := p.SignIn(id, "foreman")
	assert.Equal(t, id.AgentID(), w["agent_id"])
}

func TestUnansweredChallengeExpires(t *testing.T) {
	s := start(t, server.Config{ChallengeTimeout: 50 * time.Millisecond})
	p := dial(t, s)
	p.Send(obj{"type": "IDENTIFY", "name": "slow", "pubkey": newIdentity(t, "slow").PublicPEM()})
	p.Expect("CHALLENGE")
	p.ExpectError("VERIFICATION_EXPIRED")
	assert.Equal(t, websocket.CloseNormalClosure, p.Closed())
}

func TestAllowlistAndBans(t *testing.T) {
	good, banned := newIdentity(t, "good"), newIdentity(t, "bad")
	s := start(t, server.Config{Allowed: []string{good.AgentID(), banned.AgentID()}, Banned: []string{banned.AgentID()}})

	p := dial(t, s)
	p.Send(obj{"type": "IDENTIFY", "name": "stranger", "pubkey": newIdentity(t, "x").PublicPEM()})
	p.ExpectError("NOT_ALLOWED")
	p.SignIn(good, "good")

	b := dial(t, s)
	b.Send(obj{"type": "IDENTIFY", "name": "bad", "pubkey": banned.PublicPEM()})
	ch := b.Expect("CHALLENGE")
	ts := time.Now().UnixMilli()
	b.Send(obj{"type": "VERIFY_IDENTITY", "challenge_id": ch["challenge_id"], "timestamp": ts,
		"signature": banned.SignChallenge(ch["nonce"].(string), ch["challenge_id"].(string), ts)})
	b.ExpectError("BANNED")
	assert.Equal(t, websocket.CloseNormalClosure, b.Closed())
}

func TestChannelsAreCreatedOnlyByVerifiedAgents(t *testing.T) {
	admin := newIdentity(t, "admin")
	s := start(t, server.Config{Verified: []string{admin.AgentID()}})

	a := dial(t, s)
	assert.Equal(t, true, a.SignIn(admin, "admin")["verified"])
	b := dial(t, s)
	b.SignIn(newIdentity(t, "bob"), "bob")

	b.Send(obj{"type": "JOIN", "channel": "#build"})
	assert.Equal(t, "Channel #build not found", b.ExpectError("CHANNEL_NOT_FOUND")["message"])
	b.Send(obj{"type": "CREATE_CHANNEL", "channel": "#build"})
	assert.Equal(t, "Only verified agents can create channels", b.ExpectError("AUTH_REQUIRED")["message"])

	a.Send(obj{"type": "CREATE_CHANNEL", "channel": "#build"})
	created := a.Expect("JOINED")
	assert.Equal(t, []any{admin.AgentID()}, created["agents"], "CREATE_CHANNEL answers with bare ids")
	a.Send(obj{"type": "CREATE_CHANNEL", "channel": "#build"})
	a.ExpectError("CHANNEL_EXISTS")

	joined := b.Join("#build")
	require.Len(t, joined["agents"], 2)
	assert.Equal(t, obj{"id": admin.AgentID(), "name": "admin", "verified": true}, joined["agents"].([]any)[0])

	aj := a.Expect("AGENT_JOINED")
	assert.Equal(t, obj{"type": "AGENT_JOINED", "ts": aj["ts"], "channel": "#build", "agent": b.ID, "name": "bob", "verified": false}, aj)
	notice := a.Expect("MSG")
	assert.Equal(t, "@server", notice["from"])
	assert.Contains(t, notice["content"], "bob")
	assert.NotContains(t, notice, "msg_id")

	b.Send(obj{"type": "JOIN", "channel": "#ops"})
	assert.Equal(t, "Channel #ops requires verified identity", b.ExpectError("AUTH_REQUIRED")["message"])
}

func TestMessagesReachEveryMemberAndAreReplayed(t *testing.T) {
	s := start(t, server.Config{Channels: withBuild(), BufferSize: 3})
	a := member(t, s, "alice")
	b := member(t, s, "bob")

	echo := a.Say("CLAIM api\nCLAIM web")
	assert.Regexp(t, `^\d{13}-[0-9a-z]{6}$`, echo["msg_id"])
	got := b.Msg()
	assert.Equal(t, echo, got)
	assert.Equal(t, obj{
		"type": "MSG", "ts": echo["ts"], "from": a.ID, "from_name": "alice", "to": "#build",
		"content": "CLAIM api\nCLAIM web", "msg_id": echo["msg_id"], "verified": false,
	}, echo)

	a.Say("two")
	a.Say("three")
	a.Say("four")

	// A newcomer gets the last BufferSize frames, unchanged but for replay.
	c := dial(t, s)
	c.SignIn(newIdentity(t, "carol"), "carol")
	c.Join("#build")
	var replayed []string
	for range 3 {
		f := c.Read()
		require.Equal(t, "MSG", f["type"])
		require.Equal(t, true, f["replay"], f)
		replayed = append(replayed, f["content"].(string))
	}
	assert.Equal(t, []string{"two", "three", "four"}, replayed)

	// Joining again replays again.
	c.Send(obj{"type": "JOIN", "channel": "#build"})
	c.Expect("JOINED")
	f := c.Next()
	assert.Equal(t, true, f["replay"])
}

func TestMessageErrors(t *testing.T) {
	s := start(t, server.Config{Channels: withBuild()})
	p := member(t, s, "alice")

	p.Send(obj{"type": "MSG", "to": "@someone", "content": "psst"})
	p.ExpectError("INVALID_MSG")
	p.Send(obj{"type": "MSG", "to": "#nowhere", "content": "hello"})
	p.ExpectError("CHANNEL_NOT_FOUND")
	p.Send(obj{"type": "LEAVE", "channel": "#general"})
	assert.Equal(t, "#general", p.Expect("LEFT")["channel"])
	p.Send(obj{"type": "MSG", "to": "#general", "content": "hello"})
	assert.Equal(t, "Not a member of #general", p.ExpectError("NOT_INVITED")["message"])
}

func TestRateLimitDropsTheSecondMessage(t *testing.T) {
	s := start(t, server.Config{Channels: withBuild(), RateLimit: time.Second})
	p := member(t, s, "alice")
	p.Say("first")
	p.Send(obj{"type": "MSG", "to": "#build", "content": "second"})
	assert.Equal(t, "Rate limit exceeded (max 1 message per second)", p.ExpectError("RATE_LIMITED")["message"])

	// The refused message was dropped: nobody else ever sees it.
	q := member(t, s, "bob")
	q.Send(obj{"type": "PING"})
	for {
		f := q.Next()
		if f["type"] == "PONG" {
			break
		}
		assert.NotEqual(t, "second", f["content"])
	}
}

func TestBadFramesGetAnErrorAndHarmNobody(t *testing.T) {
	s := start(t, server.Config{Channels: withBuild()})
	bystander := member(t, s, "bob")
	p := dial(t, s)

	for _, tc := range []struct{ frame, msg string }{
		{`not json`, "Invalid JSON"},
		{`{"name":"x"}`, "Missing message type"},
		{`[1,2]`, "Missing message type"},
		{`{"type":"DANCE"}`, "Unknown message type: DANCE"},
		{`{"type":"IDENTIFY","name":"bad name!"}`, "Invalid agent name"},
		{`{"type":"IDENTIFY","name":"x","pubkey":"not a key"}`, "Invalid public key format (must be Ed25519 PEM)"},
		{`{"type":"JOIN"}`, "Invalid channel name"},
	} {
		p.SendRaw([]byte(tc.frame))
		assert.Equal(t, tc.msg, p.ExpectError("INVALID_MSG")["message"], tc.frame)
	}
	p.Send(obj{"type": "JOIN", "channel": "#build"})
	p.ExpectError("AUTH_REQUIRED")

	p.SignIn(newIdentity(t, "alice"), "alice")
	p.Join("#build")
	for _, tc := range []struct{ frame, msg string }{
		{`{"type":"MSG","content":"x"}`, "Missing target"},
		{`{"type":"MSG","to":"build","content":"x"}`, "Invalid target (must start with # or @)"},
		{`{"type":"MSG","to":"#build","content":42}`, "Missing or invalid content"},
		{`{"type":"VERIFY_IDENTITY","challenge_id":"c","signature":"s"}`, "Missing or invalid timestamp"},
	} {
		p.SendRaw([]byte(tc.frame))
		assert.Equal(t, tc.msg, p.ExpectError("INVALID_MSG")["message"], tc.frame)
	}
	p.Say("still here")
	assert.Equal(t, "still here", bystander.Msg()["content"])
}

func TestOversizedFrameClosesWith1009(t *testing.T) {
	s := start(t, server.Config{Channels: withBuild()})
	bystander := member(t, s, "bob")
	p := member(t, s, "alice")

	// Exactly the limit is fine.
	limit := 2 << 20
	frame := []byte(`{"type":"PING","pad":"`)
	frame = append(frame, bytes.Repeat([]byte("x"), limit-len(frame)-2)...)
	frame = append(frame, `"}`...)
	require.Len(t, frame, limit)
	p.SendRaw(frame)
	p.Expect("PONG")

	p.SendRaw(append(frame[:len(frame)-2:len(frame)-2], `x"}`...))
	assert.Equal(t, websocket.CloseMessageTooBig, p.Closed())

	alice := member(t, s, "alice2")
	alice.Say("after")
	assert.Equal(t, "after", bystander.Msg()["content"])
}

func TestFloodClosesWith1008(t *testing.T) {
	s := start(t, server.Config{FloodFrames: 5})
	p := dial(t, s)
	p.SignIn(newIdentity(t, "alice"), "alice")
	for range 6 {
		p.Send(obj{"type": "PING"})
	}
	assert.Equal(t, websocket.ClosePolicyViolation, p.Closed())

	// Before signing in the limit is 10.
	q := dial(t, s)
	for range 11 {
		q.Send(obj{"type": "PING"})
	}
	assert.Equal(t, websocket.ClosePolicyViolation, q.Closed())
}

func TestSecondSessionDisplacesTheFirst(t *testing.T) {
	s := start(t, server.Config{Channels: withBuild(), DisplaceDelay: 20 * time.Millisecond})
	id := newIdentity(t, "foreman")
	first := dial(t, s)
	first.SignIn(id, "foreman")

	second := dial(t, s)
	second.SignIn(id, "foreman") // returns once the hold is over

	d := first.Expect("SESSION_DISPLACED")
	assert.Equal(t, "127.0.0.1", d["new_ip"])
	assert.Equal(t, websocket.CloseNormalClosure, first.Closed())
	second.Join("#build")
	second.Say("mine now")
}

func TestSilentConnectionIsCut(t *testing.T) {
	s := start(t, server.Config{PingInterval: 10 * time.Millisecond, PongTimeout: 100 * time.Millisecond})
	p := dial(t, s)
	p.WS.SetPingHandler(func(string) error { return nil }) // never answers
	assert.Equal(t, websocket.CloseAbnormalClosure, p.Closed(), "cut without a close frame")
}

func TestNewKeysLurkWhenAsked(t *testing.T) {
	s := start(t, server.Config{Channels: withBuild(), Lurk: true})
	p := dial(t, s)
	w := p.SignIn(newIdentity(t, "newbie"), "newbie")
	require.Equal(t, true, w["lurk"])
	until := time.UnixMilli(int64(w["lurk_until"].(float64)))
	assert.WithinDuration(t, time.Now().Add(time.Hour), until, 5*time.Second)

	p.Join("#build")
	p.Send(obj{"type": "MSG", "to": "#build", "content": "hello"})
	msg := p.ExpectError("LURK_MODE")["message"].(string)
	assert.Equal(t, "New identity — sending unlocks at "+until.UTC().Format("2006-01-02T15:04:05.000Z"), msg)
}

func TestRestartOnTheSamePortKeepsState(t *testing.T) {
	id := newIdentity(t, "foreman")
	s := start(t, server.Config{Channels: withBuild(), Lurk: true, LurkPeriod: time.Hour})
	p := dial(t, s)
	first := p.SignIn(id, "foreman")
	p.Join("#build")
	require.NoError(t, s.Close())
	assert.Equal(t, websocket.CloseAbnormalClosure, p.Closed(), "a stopped server says no goodbye")

	again := start(t, server.Config{Listen: s.Addr(), State: s.State(), Channels: withBuild(), Lurk: true, LurkPeriod: time.Hour})
	assert.Equal(t, s.Addr(), again.Addr())
	q := dial(t, again)
	w := q.SignIn(id, "foreman")
	assert.Equal(t, first["lurk_until"], w["lurk_until"], "first-seen times outlive a restart")
}

func TestApplicationPing(t *testing.T) {
	s := start(t, server.Config{})
	p := dial(t, s)
	p.Send(obj{"type": "PING"})
	p.Expect("PONG")
}

func TestStartStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := server.Start(ctx, server.Config{Listen: "127.0.0.1:0"})
	require.NoError(t, err)
	cancel()
	select {
	case <-s.Done():
	case <-time.After(wait):
		t.Fatal("the server did not stop with its context")
	}
}
