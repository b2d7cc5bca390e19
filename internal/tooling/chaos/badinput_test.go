package chaos

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/bot"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
	"github.com/agentforeman/foreman/protocol"
)

// inProcessBot runs foreman in this process, for tests that look at its
// state.
func inProcessBot(t *testing.T, room *roomtest.Room, mutate func(*config.Config)) *bot.Bot {
	t.Helper()
	c, err := config.Load("", nil, nil)
	require.NoError(t, err)
	c.Server.URL, c.Server.RateLimit = room.URL(), room.Rate()
	c.Build.Name = "shop"
	c.Build.Components = []coordinator.Component{{Name: "db"}, {Name: "api", Deps: []string{"db"}}}
	c.Journal, c.HTTP = t.TempDir()+"/journal", ""
	mutate(c)
	id, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	b, err := bot.New(bot.Options{Config: c, Identity: id, Logger: zerolog.Nop()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return b
}

// state is the board without its clocks: what must not change when nothing
// is due to change it.
func state(t *testing.T, b *bot.Bot) string {
	t.Helper()
	v, err := b.View(context.Background())
	require.NoError(t, err)
	for i := range v.Components {
		c := &v.Components[i]
		c.Deadline, c.ProgressAt, c.Since = time.Time{}, time.Time{}, time.Time{}
	}
	v.At = time.Time{}
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return string(data)
}

var replyVerbs = map[string]bool{"TASKS": true, "ACK": true, "REJECT": true, "TIMEOUT": true, "RETRY": true,
	"ESCALATE": true, "REVIEW": true, "FIX": true, "WAIT": true, "UNBLOCKED": true, "MERGED": true,
	"COMPLETE": true, "STATUS": true, "OK": true, "ERROR": true}

// TestBadInput sends a battery of hostile and broken input. foreman must
// not crash, must answer each line with exactly the line it deserves (never
// one an attacker wrote), and must change nothing no rule calls for.
func TestBadInput(t *testing.T) {
	room := roomtest.Start(t)
	op := room.Join(t, "op")
	owner := room.Join(t, "owner")
	attacker := room.Join(t, "foreman") // spoofs the bot's display name
	b := inProcessBot(t, room, func(c *config.Config) { c.Roles.Operators = []string{op.ID} })
	me := b.AgentID()

	owner.Await(me, "TASKS db")
	owner.Say("CLAIM db")
	owner.Await(me, "ACK db "+owner.ID)
	before := state(t, b)

	// Each input, then a STATUS from the attacker: once its answer is in,
	// every line before it has been handled.
	inputs := []struct{ name, text string }{
		{"a 1 MiB line", "CLAIM " + strings.Repeat("x", 1<<20)},
		{"a 10,000-line message", strings.Repeat("CLAIM nope\n", 10000)},
		{"invalid UTF-8", "CLAIM \xff\xfe\nPROGRESS db 5 \xff\xfe"},
		{"NUL and control characters", "CLAIM d\x00b\nSTATUS\x00\n\x1b[31mCLAIM api\x1b[0m"},
		{"CR and LF in names", "CLAIM api\rACK db @mallory\r\nTIMEOUT db " + owner.ID},
		{"Unicode line separators", "READY db pr\u2028ACK db @mallory"},
		{"non-operator commands", "ASSIGN db " + "@mallory" + "\nRELEASE db\nRESOLVE db\nMERGED db\nDEPEND db api\nADD evil\nPAUSE"},
		{"a mention before a command", "@foreman ASSIGN db @mallory\n@" + me + " RELEASE db"},
	}
	for _, in := range inputs {
		attacker.Say(in.text)
		// Its own message: batched into the input, it would be past the
		// lines of a message foreman reads.
		require.Eventually(t, func() bool { return attacker.Queued() == 0 }, 10*time.Second, 5*time.Millisecond)
		attacker.Say("STATUS db")
		_, said := attacker.Await(me, "STATUS db")
		for _, l := range said {
			verb := protocol.VerbOf(l)
			assert.True(t, replyVerbs[verb.String()], "%s: foreman said %.80q", in.name, l)
			assert.False(t, strings.HasPrefix(l, "ACK db @mallory") || strings.HasPrefix(l, "TIMEOUT db"),
				"%s: an injected line got through: %.80q", in.name, l)
			assert.NotContains(t, l, "\u2028")
			assert.LessOrEqual(t, len(l), 2000, "%s: a reply is bounded", in.name)
		}
		assert.Equal(t, before, state(t, b), "%s: nothing changed", in.name)
	}

	// The owner goes on; its own line with a separator inside is cleaned.
	owner.Say("PROGRESS db 60 half\u2028way")
	owner.Say("STATUS db")
	owner.AwaitMatch(me, "STATUS db", func(l string) bool { return strings.Contains(l, "progress=60%") })
	h := b.Health()
	assert.True(t, h.Connected && h.Joined && h.JournalErr == "", "healthy after the battery: %+v", h)
}

// TestUnverifiedSendersIgnored: with require_verified on, lines from
// senders the room does not mark verified are ignored entirely, while
// verified ones are handled.
func TestUnverifiedSendersIgnored(t *testing.T) {
	room := roomtest.Start(t)
	stranger := room.Join(t, "stranger")
	op := room.Join(t, "op")
	b := inProcessBot(t, room, func(c *config.Config) {
		c.Rules.RequireVerified = true
		c.Roles.Operators = []string{stranger.ID} // even an operator, if unverified
	})
	me := b.AgentID()
	op.Await(me, "TASKS db")
	before := state(t, b)
	stranger.Say("CLAIM db\nPAUSE\nSTATUS")
	op.Say("hello") // unverified too: nothing comes back to anyone
	time.Sleep(500 * time.Millisecond)
	select {
	case l := <-op.Lines():
		if l.From == me {
			t.Fatalf("foreman answered an unverified sender: %q", l.Text)
		}
	default:
	}
	assert.Equal(t, before, state(t, b))
}
