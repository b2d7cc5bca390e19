package coordinator

import (
	"testing"
	"time"

	"github.com/agentforeman/foreman/protocol"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Deadlines armed in a burst fall due together: 10,000 builders claimed a
// millisecond apart (10 s of claims) time out in a handful of instants, so
// the room hears a handful of TASKS, not 10,000 ever-longer ones.
func TestMassTimeoutSaysFewTasks(t *testing.T) {
	const n = 10000
	e := armedBuild(t, n)
	timeouts, tasks := 0, 0
	var last time.Time
	for {
		at, out, ok := e.doTick(t0.Add(24 * time.Hour))
		if !ok {
			break
		}
		require.True(t, at.After(last), "one instant per tick")
		last = at
		for _, l := range out {
			switch protocol.VerbOf(l) {
			case protocol.ReplyTimeout:
				timeouts++
			case protocol.ReplyTasks:
				tasks++
			}
		}
	}
	assert.Equal(t, n, timeouts)
	assert.LessOrEqual(t, tasks, 11, "one TASKS per second of claims")
	deadline := DefaultRules().CheckinInterval * time.Duration(DefaultRules().MissedCheckins)
	assert.Equal(t, t0.Add(10*time.Second+deadline), last, "the last claim's deadline, on a whole second")
}

func TestSlack(t *testing.T) {
	for d, want := range map[time.Duration]time.Duration{
		0: time.Millisecond, 50 * time.Millisecond: time.Millisecond, 100 * time.Millisecond: 10 * time.Millisecond,
		2 * time.Second: 100 * time.Millisecond, 10 * time.Second: time.Second, 30 * time.Minute: time.Second,
	} {
		assert.Equal(t, want, slack(d), "%s", d)
	}
}
