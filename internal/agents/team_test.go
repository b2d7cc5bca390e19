package agents

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func rules() Rules {
	return Rules{Backoff: time.Second, MaxBackoff: 4 * time.Second, FastExit: 10 * time.Second, FastExits: 5}
}

func team() *Team {
	return NewTeam(rules(), []Status{{Name: "b1", Role: "builder", ID: "@b1", Log: "b1.log"}, {Name: "aud", Role: "auditor", ID: "@aud"}})
}

func kinds(acts []Action, k ActionKind) []string {
	var out []string
	for _, a := range acts {
		if a.Kind == k {
			out = append(out, a.Agent)
		}
	}
	return out
}

func started(t *Team, acts []Action, now time.Time) {
	for _, n := range kinds(acts, Start) {
		t.Started(n, 100, now)
	}
}

func state(t *Team, name string) Status {
	for _, s := range t.Status() {
		if s.Name == name {
			return s
		}
	}
	panic(name)
}

// A crash after a long run is restarted after the first backoff, not
// before, and counted.
func TestCrashIsRestartedAfterBackoff(t *testing.T) {
	tm := team()
	acts := tm.Begin(t0)
	assert.Equal(t, []string{"b1", "aud"}, kinds(acts, Start))
	started(tm, acts, t0)
	now := t0.Add(time.Hour)
	assert.Empty(t, tm.Exited("b1", "signal: killed", now), "a crash after a long run is not said")
	s := state(tm, "b1")
	assert.Equal(t, Restarting, s.State)
	assert.Equal(t, "signal: killed", s.LastExit)
	assert.Empty(t, tm.Tick(now.Add(999*time.Millisecond)))
	next, ok := tm.Next()
	require.True(t, ok)
	assert.Equal(t, now.Add(time.Second), next)
	acts = tm.Tick(now.Add(time.Second))
	assert.Equal(t, []string{"b1"}, kinds(acts, Start))
	tm.Started("b1", 101, now.Add(time.Second))
	s = state(tm, "b1")
	assert.Equal(t, Running, s.State)
	assert.Equal(t, 1, s.Restarts)
	assert.Equal(t, 101, s.Pid)
}

// An agent that exits at once is said once, waits longer each time, and
// after FastExits in a row is stopped for good with the reason.
func TestFastExitsBackOffAndStop(t *testing.T) {
	tm := team()
	now := t0
	var waits []time.Duration
	var says []string
	acts := tm.Begin(now)
	for range 5 {
		started(tm, acts, now)
		now = now.Add(100 * time.Millisecond)
		for _, a := range tm.Exited("b1", "exit status 127", now) {
			if a.Kind == Say {
				says = append(says, a.Text)
			}
		}
		next, ok := tm.Next()
		if !ok {
			break
		}
		waits = append(waits, next.Sub(now))
		now = next
		acts = tm.Tick(now)
		require.Equal(t, []string{"b1"}, kinds(acts, Start))
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second}, waits, "doubled, capped at MaxBackoff")
	s := state(tm, "b1")
	assert.Equal(t, Stopped, s.State)
	assert.Contains(t, s.Reason, "exited 5 times in a row within 10s of starting (last: exit status 127)")
	require.Len(t, says, 2, "the first fast exit and the stop, nothing between")
	assert.Contains(t, says[0], "agent b1 exited 100ms after it started (exit status 127)")
	assert.Contains(t, says[1], "not started again")
	assert.Empty(t, tm.Tick(now.Add(time.Hour)), "stopped stays stopped")
	_, ok := tm.Next()
	assert.False(t, ok)
}

// A start that fails (the program vanished) is a fast exit too.
func TestStartFailureIsAFastExit(t *testing.T) {
	tm := team()
	tm.Begin(t0)
	acts := tm.StartFailed("b1", errors.New("exec: no such file"), t0)
	require.Len(t, acts, 1)
	assert.Contains(t, acts[0].Text, "could not start: exec: no such file")
	assert.Equal(t, Restarting, state(tm, "b1").State)
}

// A long run between crashes starts the count of fast exits again.
func TestLongRunResetsFastExits(t *testing.T) {
	tm := team()
	started(tm, tm.Begin(t0), t0)
	now := t0
	for i := range 4 {
		now = now.Add(time.Second)
		tm.Exited("b1", "exit status 1", now)
		next, _ := tm.Next()
		now = next
		started(tm, tm.Tick(now), now)
		_ = i
	}
	now = now.Add(time.Minute) // ran well
	tm.Exited("b1", "exit status 1", now)
	next, _ := tm.Next()
	assert.Equal(t, time.Second, next.Sub(now), "back to the first backoff")
	assert.Equal(t, Restarting, state(tm, "b1").State)
}

// An agent foreman timed out, or an operator released, is stopped, and
// not started again.
func TestTimedOutIsStoppedForGood(t *testing.T) {
	tm := team()
	started(tm, tm.Begin(t0), t0)
	acts := tm.TimedOut("@b1", "foreman timed it out on api (TIMEOUT api)", t0.Add(time.Hour))
	require.Equal(t, []Action{{Kind: Stop, Agent: "b1", Text: "foreman timed it out on api (TIMEOUT api)"}}, acts)
	assert.Equal(t, Stopping, state(tm, "b1").State)
	assert.Empty(t, tm.Exited("b1", "signal: terminated", t0.Add(time.Hour)))
	assert.Equal(t, Stopped, state(tm, "b1").State)
	assert.Empty(t, tm.Tick(t0.Add(2*time.Hour)), "not restarted")
	assert.Empty(t, tm.TimedOut("@nobody", "x", t0), "another's")
}

// A budget hold stops the agent and keeps it stopped; BUDGET lifting the
// hold starts it again.
func TestBudgetHoldStopsUntilLifted(t *testing.T) {
	tm := team()
	started(tm, tm.Begin(t0), t0)
	now := t0.Add(time.Hour)
	acts := tm.Holds(map[string]string{"@b1": "spent $5"}, now)
	assert.Equal(t, []string{"b1"}, kinds(acts, Stop))
	tm.Exited("b1", "signal: terminated", now)
	assert.Equal(t, Held, state(tm, "b1").State)
	assert.Empty(t, tm.Tick(now.Add(time.Hour)), "held: not restarted")
	assert.Empty(t, tm.Holds(map[string]string{"@b1": "spent $5"}, now), "still held: nothing")
	acts = tm.Holds(map[string]string{}, now.Add(2*time.Hour))
	assert.Equal(t, []string{"b1"}, kinds(acts, Start), "lifted")
	tm.Started("b1", 7, now.Add(2*time.Hour))
	assert.Equal(t, Running, state(tm, "b1").State)

	// Held while waiting to restart: it waits for BUDGET instead.
	tm.Exited("aud", "exit status 1", now.Add(3*time.Hour))
	tm.Holds(map[string]string{"@aud": "spent"}, now.Add(3*time.Hour))
	assert.Equal(t, Held, state(tm, "aud").State)
	assert.Empty(t, tm.Tick(now.Add(4*time.Hour)))
}

// At COMPLETE every agent is stopped, and none starts again, even one
// that was waiting to.
func TestOverStopsAll(t *testing.T) {
	tm := team()
	started(tm, tm.Begin(t0), t0)
	tm.Exited("aud", "exit status 1", t0.Add(time.Hour))
	acts := tm.Over("the build is COMPLETE")
	assert.Equal(t, []string{"b1"}, kinds(acts, Stop))
	assert.Equal(t, Stopped, state(tm, "aud").State)
	assert.True(t, tm.Live())
	tm.Exited("b1", "exit status 0", t0.Add(time.Hour))
	assert.False(t, tm.Live())
	assert.Equal(t, "the build is COMPLETE", state(tm, "b1").Reason)
	assert.Empty(t, tm.Tick(t0.Add(3*time.Hour)))
}
