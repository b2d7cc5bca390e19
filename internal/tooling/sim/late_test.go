package sim

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/agentchat/server"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/bot"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// An auditor that joins long after the review was asked for (50 lines of
// chatter since, more than the room's history of 20 holds: neither TASKS
// nor the REVIEW is in what it is shown) finds foreman by the stamp on its
// messages, asks for the board, and takes up every review waiting for it.
// (Found by a new user: a late auditor ignored REVIEW lexer for good.)
func TestALateAuditorTakesUpTheReviewsWaiting(t *testing.T) {
	r := roomtest.StartWith(t, func(c *server.Config) { c.BufferSize = 20 }) // a stock room's history
	b1, b2 := r.Join(t, "b1"), r.Join(t, "b2")
	var chat []*roomtest.Peer
	for i := range 5 {
		chat = append(chat, r.Join(t, fmt.Sprintf("chat%d", i+1)))
	}
	fid, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	audID, err := agentchat.NewIdentity("aud")
	require.NoError(t, err)
	c, err := config.Load("", nil, nil)
	require.NoError(t, err)
	c.Server.URL, c.Server.RateLimit = r.URL(), roomtest.Pace
	c.Build.Name = "shop"
	c.Build.Components = []coordinator.Component{{Name: "lexer"}, {Name: "parser"}}
	c.Rules.MaxBuildTime = 0
	c.Roles.Auditors = []string{audID.AgentID()}
	c.Journal = filepath.Join(t.TempDir(), "journal")
	c.HTTP = ""
	b, err := bot.New(bot.Options{Config: c, Identity: fid, Logger: zerolog.Nop(), ShutdownGrace: time.Second})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = b.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	foreman := fid.AgentID()
	b1.Await(foreman, "TASKS lexer parser")
	b1.Say("CLAIM lexer")
	b1.Await(foreman, "ACK lexer "+b1.ID)
	b2.Say("CLAIM parser")
	b2.Await(foreman, "ACK parser "+b2.ID)
	b1.Say("READY lexer b1/lexer")
	b2.Say("READY parser b2/parser")
	b1.Await(foreman, "REVIEW lexer")
	b2.Await(foreman, "REVIEW parser")
	for i := range 50 { // each a message of its own: 50 frames of history
		p := chat[i%len(chat)] // five voices, so that no one's pace holds the others back
		p.Say(fmt.Sprintf("chatter %d: has anyone seen the style guide?", i+1))
		b1.Await(p.ID, fmt.Sprintf("chatter %d:", i+1))
	}
	aud, err := NewAuditor(Config{URL: r.URL(), Channel: "#build", Name: "aud", Identity: audID, Minute: 10 * time.Millisecond,
		RateLimit: roomtest.Pace, Logger: zerolog.Nop()}, Auditor{}) // no coordinator given
	require.NoError(t, err)
	actx, stop := context.WithCancel(context.Background())
	adone := make(chan struct{})
	go func() { defer close(adone); _ = aud.Run(actx) }()
	t.Cleanup(func() { stop(); <-adone })
	b1.Await(foreman, "MERGED lexer")
	b2.Await(foreman, "MERGED parser")
	b1.Await(foreman, "COMPLETE shop")
	assert.Equal(t, foreman, aud.Coordinator(), "found by its stamp")
}
