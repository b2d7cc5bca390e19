package agentchat_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/agentchat/internal/chattest"
	"github.com/agentforeman/foreman/agentchat/server"
)

// A closed gate holds every message back, checked right before the
// socket: a cluster leader that may have lost its lease says nothing, while
// it still hears the room.
func TestGateHoldsMessagesBack(t *testing.T) {
	s := chattest.Start(t, server.Config{Channels: chattest.WithBuild()})
	asked := make(chan struct{}, 10)
	bob := run(t, agentchat.Config{URL: s.URL(), Name: "bob", Identity: chattest.NewIdentity(t, "bob"),
		Gate: func() bool { asked <- struct{}{}; return false }})
	bob.ready()
	alice := run(t, agentchat.Config{URL: s.URL(), Name: "alice", Identity: chattest.NewIdentity(t, "alice")})
	alice.ready()

	bob.c.Send(agentchat.Line{Seq: 1, Text: "CLAIM api"})
	<-asked // the message reached the gate, and was dropped there
	carol := run(t, agentchat.Config{URL: s.URL(), Name: "carol", Identity: chattest.NewIdentity(t, "carol")})
	carol.ready()
	carol.c.Send(agentchat.Line{Seq: 1, Text: "TASKS api"})
	m := chat(alice)
	assert.Equal(t, "TASKS api", m.Content, "nothing of bob's came before carol's line, said after it")
	m = chat(bob)
	assert.Equal(t, "TASKS api", m.Content, "bob still hears the room")
}
