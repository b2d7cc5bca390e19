package recovery

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/node"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func engine(comps ...string) coordinator.Config {
	cfg := coordinator.Config{Build: "shop", Self: "@foreman", Rules: coordinator.DefaultRules()}
	for _, c := range comps {
		cfg.Components = append(cfg.Components, coordinator.Component{Name: c})
	}
	return cfg
}

func open(t *testing.T, st node.Storage, eng coordinator.Config) *Session {
	t.Helper()
	s, err := Open(Config{Node: node.Config{Engine: eng, Storage: st, SnapshotEvery: -1}, Build: "shop", History: 20,
		Instance: func() string { return "abc123" }})
	require.NoError(t, err)
	return s
}

func commit(t *testing.T, s *Session) node.Ready {
	t.Helper()
	rd, err := s.Commit()
	require.NoError(t, err)
	return rd
}

func msg(id, from, text string, sec int) agentchat.Message {
	return agentchat.Message{ID: id, From: from, Content: text, TS: t0.Add(time.Duration(sec) * time.Second)}
}

// A restart after the configuration changed (a component added, the
// config edited and foreman restarted before any snapshot) replays its log
// with the components the build started with, so that every reply keeps
// its number; the change is applied afterwards, as a reload. Found by the
// simulator: replayed with the new list, the start's TASKS already named
// the new component, the reload's TASKS was never said, and every later
// reply was numbered one lower than the room had it.
func TestRestartWithAChangedConfigKeepsTheNumbers(t *testing.T) {
	st := node.NewMemoryStorage()
	s := open(t, st, engine("db", "api"))
	_, err := s.Join(Join{At: t0, Created: true})
	require.NoError(t, err)
	require.NoError(t, s.Hear(msg("m1", "@b", "CLAIM db", 1)))
	rd := commit(t, s)
	require.Equal(t, []string{"TASKS db api", "ACK db @b"}, lineTexts(rd.Messages))

	again := open(t, st, engine("db", "api", "web"))
	assert.Equal(t, uint64(2), again.Node().Produced(), "the log replays as it was said")
	j, err := again.Join(Join{At: t0.Add(time.Minute)})
	require.NoError(t, err)
	assert.True(t, j.Reloaded)
	rd = commit(t, again)
	assert.Equal(t, []string{"TASKS api web"}, lineTexts(rd.Messages))
	assert.Equal(t, uint64(3), rd.Messages[0].Seq)

	third := open(t, st, engine("db", "api", "web"))
	assert.Equal(t, uint64(3), third.Node().Produced())
	j, err = third.Join(Join{At: t0.Add(2 * time.Minute)})
	require.NoError(t, err)
	assert.False(t, j.Reloaded, "the log holds the reload now")
}

func lineTexts(ls []node.Line) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Text
	}
	return out
}
