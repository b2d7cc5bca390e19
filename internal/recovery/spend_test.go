package recovery

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/journal"
)

// Spend is refused before the build and out of the room (the exporter
// sends it again), taken in it, in milliseconds as the journal keeps it,
// and a restart reads the same back.
func TestSpendOnlyInTheRoom(t *testing.T) {
	st, err := journal.Open(t.TempDir(), journal.Options{})
	require.NoError(t, err)
	defer st.Close()
	eng := engine("db")
	eng.Rules.MaxBuildTime = 0
	s := open(t, st, eng)
	sp := coordinator.Spend{Agent: "@a", Source: coordinator.SpendRequest, At: t0.Add(1500*time.Millisecond + 700*time.Microsecond),
		Cost: coordinator.Cost{USD: 1000}}
	assert.False(t, s.Spend(t0, sp), "before the build")
	_, err = s.Join(Join{At: t0, Created: true})
	require.NoError(t, err)
	require.NoError(t, s.Hear(msg("m1", "@a", "CLAIM db", 1)))
	assert.True(t, s.Spend(t0.Add(2*time.Second+300*time.Microsecond), sp))
	commit(t, s)
	live := s.Node().Engine().View()
	assert.Equal(t, coordinator.Cost{USD: 1000}, live.Components[0].Spent)

	again := open(t, st, eng)
	assert.Equal(t, live, again.Node().Engine().View(), "the journal gives the same back")
	assert.False(t, again.Spend(t0.Add(3*time.Second), sp), "out of the room: refused, sent again later")
	_, err = again.Join(Join{At: t0.Add(4 * time.Second), Replayed: 1, History: []agentchat.Message{msg("m1", "@a", "CLAIM db", 1)}})
	require.NoError(t, err)
	assert.True(t, again.Spend(t0.Add(5*time.Second), sp))
	assert.Equal(t, coordinator.Cost{USD: 2000}, again.Node().Engine().View().Components[0].Spent)
}
