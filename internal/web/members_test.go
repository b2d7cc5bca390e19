package web

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
)

func TestBoardSaysWhoIsInTheRoom(t *testing.T) {
	src := &fakeSource{view: shopView(), health: healthy()}
	s := New(Options{Refresh: time.Hour})
	s.Attach(src)
	s.Members(agentchat.Connected{AgentID: "@f"})
	s.Members(agentchat.Joined{Agents: []agentchat.Agent{{ID: "@b2", Name: "bob"}, {ID: "@b1", Name: "alice", Verified: true}}})
	ts := newTestServer(t, s)

	var b Board
	getJSON(t, ts.URL+"/api/view", &b)
	assert.Equal(t, "@f", b.Self)
	require.NotNil(t, b.Members)
	assert.Equal(t, []Member{{ID: "@f"}, {ID: "@b1", Name: "alice", Verified: true}, {ID: "@b2", Name: "bob"}}, *b.Members,
		"by name; foreman itself too")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := openStream(t, ctx, ts.URL)
	first := stream.next()
	require.NotNil(t, first.Members)
	assert.Len(t, *first.Members, 3)
	views := src.views.Load()

	s.Members(agentchat.AgentLeft{Agent: agentchat.Agent{ID: "@b2", Name: "bob"}})
	s.Members(agentchat.AgentJoined{Agent: agentchat.Agent{ID: "@b3", Name: "carol\nx"}})
	var ev Board
	for ev = stream.next(); ev.Members == nil || len(*ev.Members) != 3 || (*ev.Members)[2].ID != "@b3"; ev = stream.next() {
	}
	assert.Equal(t, []Member{{ID: "@f"}, {ID: "@b1", Name: "alice", Verified: true}, {ID: "@b3", Name: "carol x"}}, *ev.Members)
	assert.Equal(t, views, src.views.Load(), "who is here is no reason to ask the bot for its view")

	s.Members(agentchat.Disconnected{Err: errors.New("gone")})
	getJSON(t, ts.URL+"/api/view", &b)
	require.NotNil(t, b.Members)
	assert.Empty(t, *b.Members, "out of the room, foreman does not know who is in it")
}

// A board whose bot does not tell it who is here (no Members hook) sends
// no list, rather than an empty room.
func TestNoMemberListWithoutTheHook(t *testing.T) {
	s := New(Options{})
	s.Attach(&fakeSource{view: shopView(), health: healthy()})
	var b Board
	getJSON(t, newTestServer(t, s).URL+"/api/view", &b)
	assert.Nil(t, b.Members)
}
