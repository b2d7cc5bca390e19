package server_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentforeman/foreman/agentchat/server"
)

func TestFloorGoesToTheEarliestStart(t *testing.T) {
	s := start(t, server.Config{Channels: withBuild()})
	a := member(t, s, "alice")
	b := member(t, s, "bob")
	c := member(t, s, "carol")
	settle(a)
	settle(b)
	settle(c)
	claim := func(msgID string, started int) obj {
		return obj{"type": "RESPONDING_TO", "msg_id": msgID, "channel": "#build", "started_at": started}
	}
	ids := map[string]string{"alice": a.ID, "bob": b.ID, "carol": c.ID}

	// bob claims first: the others hear of it, bob hears nothing.
	b.Send(claim("m1", 2000))
	expectNext(t, b, nil, ids, "bob")
	claimed := obj{"type": "FLOOR_CLAIMED", "msg_id": "m1", "channel": "#build", "holder": "bob", "holder_name": "bob", "started_at": 2000.0}
	expectNext(t, a, claimed, ids, "alice")
	expectNext(t, c, claimed, ids, "carol")

	// carol started later: she is told to yield, nobody else hears.
	c.Send(claim("m1", 3000))
	expectNext(t, c, obj{"type": "YIELD", "msg_id": "m1", "channel": "#build", "holder": "bob",
		"holder_started_at": 2000.0, "reason": "Another agent claimed first"}, ids, "carol")
	expectNext(t, a, nil, ids, "alice")

	// alice started earlier: she takes the floor and bob must yield.
	a.Send(claim("m1", 1000))
	expectNext(t, a, nil, ids, "alice")
	expectFrames(t, b, ids, "bob", obj{"type": "FLOOR_CLAIMED", "holder": "alice"},
		obj{"type": "YIELD", "msg_id": "m1", "channel": "#build", "holder": "alice",
			"holder_started_at": 1000.0, "reason": "Earlier started_at timestamp"})
	expectNext(t, c, obj{"type": "FLOOR_CLAIMED", "holder": "alice"}, ids, "carol")

	// Claiming again what one holds is refused; another message is free.
	a.Send(claim("m1", 1000))
	expectNext(t, a, obj{"type": "YIELD", "holder": "alice", "reason": "Another agent claimed first"}, ids, "alice")
	b.Send(claim("m2", 5000))
	expectNext(t, a, obj{"type": "FLOOR_CLAIMED", "msg_id": "m2", "holder": "bob"}, ids, "alice")

	// A message in the channel ends the sender's claims there.
	a.Say("my answer")
	settle(b)
	settle(c)
	c.Send(claim("m1", 3000))
	expectNext(t, c, nil, ids, "carol")
	expectNext(t, b, obj{"type": "FLOOR_CLAIMED", "msg_id": "m1", "holder": "carol"}, ids, "bob")
}

func TestFloorTieGoesToTheSmallerID(t *testing.T) {
	s := start(t, server.Config{Channels: withBuild()})
	a := member(t, s, "alice")
	b := member(t, s, "bob")
	settle(a)
	settle(b)
	first, second := a, b
	if b.ID < a.ID {
		first, second = b, a
	}
	second.Send(obj{"type": "RESPONDING_TO", "msg_id": "m", "channel": "#build", "started_at": 1000})
	expectNext(t, first, obj{"type": "FLOOR_CLAIMED", "holder": second.ID}, nil, "the first")
	first.Send(obj{"type": "RESPONDING_TO", "msg_id": "m", "channel": "#build", "started_at": 1000})
	expectFrames(t, second, nil, "the second", obj{"type": "FLOOR_CLAIMED", "holder": first.ID}, obj{"type": "YIELD", "holder": first.ID})
}

func TestFloorClaimsAreCheckedOrIgnored(t *testing.T) {
	s := start(t, server.Config{Channels: withBuild()})
	a := member(t, s, "alice")
	for _, tc := range []struct {
		frame obj
		want  string
	}{
		{obj{"type": "RESPONDING_TO", "channel": "#build", "started_at": 1}, "Missing or invalid msg_id"},
		{obj{"type": "RESPONDING_TO", "msg_id": "m", "channel": "build", "started_at": 1}, "Missing or invalid channel"},
		{obj{"type": "RESPONDING_TO", "msg_id": "m", "channel": "#build", "started_at": "1"}, "Missing or invalid started_at timestamp"},
		{obj{"type": "RESPONDING_TO", "msg_id": "m", "channel": "#build", "started_at": 0}, "Missing or invalid started_at timestamp"},
	} {
		a.Send(tc.frame)
		assert.Equal(t, tc.want, a.ExpectError("INVALID_MSG")["message"], tc.frame)
	}
	// Strangers and unknown channels: dropped without a word.
	stranger := dial(t, s)
	stranger.Send(obj{"type": "RESPONDING_TO", "msg_id": "m", "channel": "#build", "started_at": 1})
	expectNext(t, stranger, nil, nil, "a stranger")
	expectNext(t, a, nil, nil, "alice")
}
