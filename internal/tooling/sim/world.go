package sim

import (
	"math/rand/v2"
	"time"
)

// world is what a behaviour can do besides listening: speak, act later, and
// draw random numbers. The participant supplies a real one; unit tests supply
// one with a virtual clock.
type world interface {
	// self is the behaviour's own sender id.
	self() string
	// say queues one line for the room.
	say(line string)
	// after runs f after d of contract time, in the behaviour's goroutine.
	after(d time.Duration, f func())
	rand() *rand.Rand
}

// behaviour is a participant's reactions. Every call comes from one
// goroutine, so behaviours need no locks.
type behaviour interface {
	// start is called once, when the participant is in the room.
	start(w world)
	// coordinator is a line the coordinator said.
	coordinator(w world, r reply)
	// agent is a line someone else said (an agent or a human).
	agent(w world, from, line string)
}

// catcher is a behaviour that learns from what the coordinator said before
// it joined (the room's replayed history), without acting on it as it
// hears it: a builder that joins a running build needs the last TASKS, and
// an auditor the reviews still owed, which it takes up in start; but it
// must not answer reviews someone else has long answered.
type catcher interface {
	catchUp(r reply)
}

// agentCatcher also learns from what the others said in that history.
type agentCatcher interface {
	catchUpAgent(from, line string)
}

// jitter returns a duration between lo and hi.
func jitter(w world, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(w.rand().Int64N(int64(hi-lo)))
}

// spread returns d give or take a tenth, so agents on one pace drift apart.
func spread(w world, d time.Duration) time.Duration {
	return jitter(w, d-d/10, d+d/10)
}

// Scale turns contract time into real time: a contract minute lasts minute.
func Scale(d, minute time.Duration) time.Duration {
	return time.Duration(float64(d) * float64(minute) / float64(time.Minute))
}

// Unscale turns real time back into contract time.
func Unscale(d, minute time.Duration) time.Duration {
	if minute <= 0 {
		return d
	}
	return time.Duration(float64(d) * float64(time.Minute) / float64(minute))
}
