package bot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/agentchat/server"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

func newID(t *testing.T) *agentchat.Identity {
	t.Helper()
	id, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	return id
}

// What the room said before the build started is never a command: an
// operator's old PAUSE is not obeyed and an old CLAIM is not ACKed, on the
// first start and on a restart before any line was handled.
func TestLinesFromBeforeTheBuildAreNotCommands(t *testing.T) {
	r := roomtest.Start(t)
	op, b1 := r.Join(t, "op"), r.Join(t, "b1")
	op.Say("PAUSE")
	b1.Say("CLAIM db")
	id := newID(t)
	cfg := fastConfig(t, r.URL(), t.TempDir(), coordinator.Component{Name: "db"})
	cfg.Roles.Operators = []string{op.ID}
	bot := id.AgentID()
	for life := range 2 {
		_, stop := runBot(t, cfg, id)
		if life == 0 {
			b1.Await(bot, "TASKS db")
		}
		b1.Say("STATUS db")
		status, seen := b1.Await(bot, "STATUS db")
		assert.True(t, strings.HasPrefix(status, "STATUS db pending"), "life %d: %s", life, status)
		assert.NotContains(t, status, "paused")
		for _, l := range seen {
			assert.False(t, strings.HasPrefix(l, "ACK") || strings.HasPrefix(l, "OK"), "life %d: acted on an old line: %s", life, l)
		}
		require.NoError(t, stop())
	}
}

// With its journal gone, foreman sees its own build in the room's history
// and refuses to start another, saying why in the room; --new-build starts
// one deliberately, and the old build's lines are not its commands.
func TestJournalGoneRefusesToGuess(t *testing.T) {
	r := roomtest.Start(t)
	b1 := r.Join(t, "b1")
	id := newID(t)
	cfg := fastConfig(t, r.URL(), t.TempDir(), coordinator.Component{Name: "db"})
	bot := id.AgentID()
	_, stop := runBot(t, cfg, id)
	b1.Await(bot, "TASKS db")
	b1.Say("CLAIM db")
	b1.Await(bot, "ACK db "+b1.ID)
	require.NoError(t, stop())

	require.NoError(t, os.RemoveAll(cfg.Journal))
	_, stop = runBot(t, cfg, id)
	line, _ := b1.Await(bot, "ERROR build foreman will not coordinate here")
	assert.Contains(t, line, "--new-build")
	var refused *RefusedError
	require.True(t, errors.As(stop(), &refused), "Run returns the refusal")

	require.NoError(t, os.RemoveAll(cfg.Journal))
	_, stop = runBot(t, cfg, id, func(o *Options) { o.NewBuild = true })
	_, seen := b1.Await(bot, "TASKS db")
	for _, l := range seen {
		assert.False(t, strings.HasPrefix(l, "ACK"), "the old CLAIM is not a command of the new build: %s", l)
	}
	require.NoError(t, stop())
}

// A second foreman with the same key and its own journal sees the first
// one's build in the room, refuses to coordinate a parallel one and leaves
// at once; the first, dropped by the server for it, comes back and goes
// on. Started again, the second refuses again without saying it twice.
func TestSecondForemanWithTheSameKeyRefuses(t *testing.T) {
	r := roomtest.StartWith(t, func(c *server.Config) { c.DisplaceDelay = 50 * time.Millisecond })
	b1 := r.Join(t, "b1")
	id := newID(t)
	cfg := fastConfig(t, r.URL(), t.TempDir(), coordinator.Component{Name: "db"}, coordinator.Component{Name: "api"})
	bot := id.AgentID()
	first, stop := runBot(t, cfg, id)
	b1.Await(bot, "TASKS db api")

	for attempt := range 2 {
		other := fastConfig(t, r.URL(), t.TempDir(), coordinator.Component{Name: "db"}, coordinator.Component{Name: "api"})
		var logs roomtest.SyncBuffer
		second, err := New(Options{Config: other, Identity: id, Logger: zerolog.New(&logs)})
		require.NoError(t, err)
		ran := make(chan error, 1)
		go func() { ran <- second.Run(context.Background()) }()
		if attempt == 0 {
			line, _ := b1.Await(bot, "ERROR build foreman will not coordinate here")
			assert.Contains(t, line, "so it left: nothing to do while that foreman runs; if it is gone, restore its journal or start over with foreman run --new-build")
		}
		var refused *RefusedError
		select {
		case err := <-ran:
			require.True(t, errors.As(err, &refused), "attempt %d: Run returns the refusal: %v", attempt, err)
		case <-time.After(20 * time.Second):
			t.Fatalf("attempt %d: the second foreman did not leave", attempt)
		}
		if attempt == 1 {
			assert.Contains(t, logs.String(), "the room shows this refusal already")
		}

		// The first is back, and answers.
		b1.Say("STATUS api")
		_, seen := b1.Await(bot, "STATUS api pending")
		for _, l := range seen {
			assert.False(t, strings.HasPrefix(l, "ERROR build"), "attempt %d: said again: %s", attempt, l)
		}
	}
	assert.True(t, first.Health().Joined)
	require.NoError(t, stop())
}

// A stock room keeps 20 frames of history. When more than that was said
// while foreman was away, it cannot know what it missed: it says so in the
// room, naming the time span, and answers what it still can, once.
func TestHistoryGapIsSaidInTheRoom(t *testing.T) {
	r := roomtest.StartWith(t, func(c *server.Config) { c.BufferSize = 20 })
	b1, chatty := r.Join(t, "b1"), r.Join(t, "chatty")
	id := newID(t)
	cfg := fastConfig(t, r.URL(), t.TempDir(), coordinator.Component{Name: "db"}, coordinator.Component{Name: "web"})
	cfg.Rules.CheckinInterval = time.Minute
	bot := id.AgentID()
	_, stop := runBot(t, cfg, id)
	b1.Await(bot, "TASKS db web")
	b1.Say("CLAIM db")
	b1.Await(bot, "ACK db "+b1.ID)
	require.NoError(t, stop())

	b1.Say("CLAIM web") // lost: 25 messages follow it
	for i := range 25 { // one message each: a client batches what is queued
		chatty.Say(fmt.Sprintf("chat %d", i))
		b1.Await(chatty.ID, fmt.Sprintf("chat %d", i))
	}
	chatty.Say("STATUS db") // a line the history still has
	b1.Await(chatty.ID, "STATUS db")
	_, stop = runBot(t, cfg, id)
	gap, _ := b1.Await(bot, "ERROR build foreman may have missed lines said between")
	assert.Contains(t, gap, "say it again")
	b1.Await(bot, "STATUS db building owner="+b1.ID)
	b1.Say("CLAIM web")
	_, seen := b1.Await(bot, "REJECT web "+b1.ID)
	for _, l := range seen {
		assert.False(t, strings.HasPrefix(l, "ACK db"), "said twice: %s", l)
	}
	require.NoError(t, stop())
}

// The log says "queued" when a reply is handed to the room and "said" only
// when the room has echoed it (with the server down, nothing is "said").
func TestLogSaysSaidOnlyOnceEchoed(t *testing.T) {
	r := roomtest.Start(t)
	b1 := r.Join(t, "b1")
	id := newID(t)
	cfg := fastConfig(t, r.URL(), t.TempDir(), coordinator.Component{Name: "db"})
	var logs roomtest.SyncBuffer
	_, stop := runBot(t, cfg, id, func(o *Options) { o.Logger = zerolog.New(&logs).Level(zerolog.DebugLevel) })
	b1.Await(id.AgentID(), "TASKS db")
	b1.Say("CLAIM db")
	b1.Await(id.AgentID(), "ACK db "+b1.ID)
	// The bot reads its own echo about when b1 hears the ACK, maybe after.
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), `"said":"ACK db `) }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, stop())
	out := logs.String()
	queued := strings.Index(out, `"line":"ACK db `+b1.ID+`","message":"queued"`)
	said := strings.Index(out, `"said":"ACK db `+b1.ID+`"`)
	require.True(t, queued >= 0 && said >= 0, out)
	assert.Less(t, queued, said, "queued first, said on the echo")
}
