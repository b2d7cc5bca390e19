package bot

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// Replies that go out together, in one chat message, are logged one line
// per entry: a said= value never holds a newline.
func TestEachLineSaidIsLoggedOnItsOwn(t *testing.T) {
	r := roomtest.Start(t)
	b1 := r.Join(t, "b1")
	id, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	cfg := fastConfig(t, r.URL(), t.TempDir(), coordinator.Component{Name: "db"}, coordinator.Component{Name: "web"})
	var log roomtest.SyncBuffer
	_, stop := runBot(t, cfg, id, func(o *Options) { o.Logger = zerolog.New(&log) })
	bot := id.AgentID()

	b1.Await(bot, "TASKS db web")
	b1.Say("CLAIM db\nSTATUS db\nSTATUS web")
	b1.Await(bot, "STATUS web")
	// "said" is logged on the bot's own echo, which it may read after b1.
	require.Eventually(t, func() bool { return strings.Contains(log.String(), `"said":"STATUS web`) }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, stop())

	var said []string
	sc := bufio.NewScanner(strings.NewReader(log.String()))
	for sc.Scan() {
		var entry struct{ Said string }
		require.NoError(t, json.Unmarshal(sc.Bytes(), &entry), sc.Text())
		if entry.Said != "" {
			assert.NotContains(t, entry.Said, "\n")
			said = append(said, entry.Said)
		}
	}
	require.GreaterOrEqual(t, len(said), 3, log.String())
	assert.Equal(t, "ACK db "+b1.ID, said[1])
	assert.True(t, strings.HasPrefix(said[2], "STATUS db building"), said[2])
}

// An observer that panics mid-build (a bug in the board, say) is turned
// off and said in the log, with its stack; the coordinator goes on, and
// the build completes.
func TestAnObserverThatPanicsDoesNotStopTheBuild(t *testing.T) {
	r := roomtest.Start(t)
	b1, aud := r.Join(t, "b1"), r.Join(t, "aud")
	id, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	cfg := fastConfig(t, r.URL(), t.TempDir(), coordinator.Component{Name: "db"})
	cfg.Rules.CheckinInterval = time.Minute
	cfg.Roles.Auditors = []string{aud.ID}
	var logs roomtest.SyncBuffer
	events := 0
	_, stop := runBot(t, cfg, id, func(o *Options) {
		o.Logger = zerolog.New(&logs)
		o.Observe = func(*coordinator.Event, []coordinator.Reply) {
			if events++; events == 3 {
				var views map[string]int
				views["escalations"]++ // assignment to entry in nil map, as the board's once did
			}
		}
		o.Handled = func(time.Duration, int) { panic("a metric gone wrong") }
	})
	bot := id.AgentID()
	b1.Await(bot, "TASKS db")
	b1.Say("CLAIM db")
	b1.Await(bot, "ACK db "+b1.ID)
	b1.Say("READY db pr/1")
	aud.Await(bot, "REVIEW db")
	aud.Say("AUDIT db PASS")
	aud.Await(bot, "COMPLETE shop")
	require.NoError(t, stop())
	assert.Equal(t, 3, events, "turned off after its panic")
	out := logs.String()
	assert.Contains(t, out, `"observer":"Observe (the board, metrics)"`)
	assert.Contains(t, out, `"observer":"Handled"`)
	assert.Contains(t, out, "assignment to entry in nil map")
	assert.Contains(t, out, "observe_test.go", "with its stack")
	assert.Equal(t, 2, strings.Count(out, "an observer of the build panicked"), "each said once")
}
