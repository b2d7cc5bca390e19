package coordinator

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/protocol"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func newEngine(t *testing.T, mutate func(*Config)) *Engine {
	t.Helper()
	cfg := Config{
		Build:      "shop",
		Self:       "@foreman",
		Mentions:   []string{"@foreman"},
		Components: []Component{{Name: "db"}, {Name: "api", Deps: []string{"db"}}},
		Rules:      DefaultRules(),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	e, err := New(cfg)
	require.NoError(t, err)
	return e
}

func msg(from, content string, d time.Duration) Message {
	return Message{From: from, Verified: true, At: at(d), Content: content}
}

func TestNewRefusesBadGraphs(t *testing.T) {
	for _, comps := range [][]Component{
		{{Name: "a"}, {Name: "a"}},
		{{Name: "a b"}},
		{{Name: "a", Deps: []string{"nope"}}},
	} {
		_, err := New(Config{Components: comps, Rules: DefaultRules()})
		assert.Error(t, err, "%v", comps)
	}
}

func TestNothingHappensBeforeStart(t *testing.T) {
	e := newEngine(t, nil)
	assert.Nil(t, e.doReceive(msg("@b1", "CLAIM db", 0)))
	assert.Nil(t, e.doAdvance(at(time.Hour)))
	assert.Equal(t, []string{"TASKS db"}, e.doStart(t0))
	assert.Nil(t, e.doStart(t0), "starting twice does nothing")
}

func TestIgnoredSenders(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Rules.RequireVerified = true })
	e.doStart(t0)
	assert.Nil(t, e.doReceive(msg("@foreman", "CLAIM db", time.Second)), "its own lines")
	assert.Nil(t, e.doReceive(msg("@server", "CLAIM db", time.Second)), "room notices")
	unverified := msg("@b1", "CLAIM db", time.Second)
	unverified.Verified = false
	assert.Nil(t, e.doReceive(unverified), "unverified senders when verification is required")
	assert.Equal(t, []string{"ACK db @b1"}, e.doReceive(msg("@b1", "CLAIM db", time.Second)))
}

func TestReplayedMessagesAreHandledOnce(t *testing.T) {
	e := newEngine(t, nil)
	e.doStart(t0)
	m := msg("@b1", "CLAIM db", time.Second)
	m.ID = "1700000000000-abc123"
	assert.Equal(t, []string{"ACK db @b1"}, e.doReceive(m))
	assert.Nil(t, e.doReceive(m), "the same message id again, as history replays it")
	m.ID = "1700000000001-abc124"
	m.Content = "PROGRESS db 5"
	assert.Nil(t, e.doReceive(m))
}

func TestSeenWindowForgetsOldest(t *testing.T) {
	s := newSeenIDs(3)
	for _, id := range []string{"a", "b", "c", "d"} {
		assert.True(t, s.add(id))
	}
	assert.False(t, s.add("d"))
	assert.True(t, s.add("a"), "a fell out of the window")
	assert.Equal(t, []string{"c", "d", "a"}, s.ids())
}

func TestOneMessageManyLines(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Components = append(c.Components, Component{Name: "web"}) })
	e.doStart(t0)
	out := e.doReceive(msg("@b1", "morning!\nCLAIM db\n> CLAIM web\nPROGRESS db 200\nSTATUS db", time.Second))
	require.Len(t, out, 3)
	assert.Equal(t, "ACK db @b1", out[0])
	assert.Contains(t, out[1], "ERROR @b1 PROGRESS:")
	assert.Contains(t, out[2], "STATUS db building owner=@b1")
}

func TestTimersFireAtTheirDeadlines(t *testing.T) {
	e := newEngine(t, nil)
	e.doStart(t0)
	e.doReceive(msg("@b1", "CLAIM db", 0))
	d, ok := e.NextDeadline()
	require.True(t, ok)
	assert.Equal(t, at(30*time.Minute), d, "the check-in deadline comes before overtime")
	e.doReceive(msg("@b1", "PROGRESS db 1", time.Minute))

	firedAt, out, ok := e.doTick(at(3 * time.Hour))
	require.True(t, ok)
	assert.Equal(t, at(31*time.Minute), firedAt, "the check-in deadline: 30m after the last check-in")
	assert.Equal(t, []string{"TIMEOUT db @b1", "TASKS db"}, out)

	firedAt, out, ok = e.doTick(at(3 * time.Hour))
	require.True(t, ok)
	assert.Equal(t, at(2*time.Hour), firedAt)
	assert.Contains(t, out[0], "ESCALATE build overtime")
	_, _, ok = e.doTick(at(3 * time.Hour))
	assert.False(t, ok)
}

func TestClockNeverGoesBack(t *testing.T) {
	e := newEngine(t, nil)
	e.doStart(t0)
	e.doReceive(msg("@b1", "CLAIM db", 10*time.Minute))
	e.doReceive(msg("@b2", "STATUS", 5*time.Minute)) // an older room timestamp
	assert.Equal(t, at(10*time.Minute), e.Now())
}

// The coordinator's own downtime never counts against a builder (contract
// section 5): Recover treats it as a pause.
func TestRecoverExtendsDeadlines(t *testing.T) {
	e := newEngine(t, nil)
	e.doStart(t0)
	e.doReceive(msg("@b1", "CLAIM db", 0))
	e.doReceive(msg("@b1", "PROGRESS db 10", 20*time.Minute))
	// Down from 20m to 1h20m; the builder kept working and checks in at 1h21m.
	e.doRecover(at(80 * time.Minute))
	out := e.doReceive(msg("@b1", "PROGRESS db 50", 81*time.Minute))
	assert.Empty(t, out, "no TIMEOUT: the deadline moved by the downtime")
	d, _ := e.NextDeadline()
	assert.Equal(t, at(111*time.Minute), d)
}

func TestRecoverDuringOperatorPause(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Roles.Operators = []string{"@op"} })
	e.doStart(t0)
	e.doReceive(msg("@b1", "CLAIM db", 0))
	e.doReceive(msg("@op", "PAUSE", 10*time.Minute))
	e.doRecover(at(60 * time.Minute)) // the pause already covers the gap
	assert.Equal(t, []string{"OK RESUME"}, e.doReceive(msg("@op", "RESUME", 70*time.Minute)))
	d, _ := e.NextDeadline()
	assert.Equal(t, at(90*time.Minute), d, "20 minutes were left when the pause began")
}

func TestHandleTakesTypedCommands(t *testing.T) {
	e := newEngine(t, nil)
	e.doStart(t0)
	out := e.doHandle(at(time.Second), "@b1", protocol.Command{Verb: protocol.Claim, Component: "db"})
	assert.Equal(t, []string{"ACK db @b1"}, out)
}

func TestAddReopensACompleteBuild(t *testing.T) {
	e := newEngine(t, func(c *Config) {
		c.Components = []Component{{Name: "db"}}
		c.Roles.Operators = []string{"@op"}
	})
	e.doStart(t0)
	e.doReceive(msg("@op", "MERGED db", time.Second))
	out := e.doReceive(msg("@op", "ADD cache db", 2*time.Second))
	assert.Equal(t, []string{"OK ADD cache db", "TASKS cache"}, out)
	out = e.doReceive(msg("@op", "MERGED cache", 3*time.Second))
	assert.Equal(t, []string{"OK MERGED cache", "COMPLETE shop"}, out)
}
