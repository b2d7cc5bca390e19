package coordinator

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Four behaviours of the contract (section 5) that nothing else pinned:
// each test below fails when its rule is broken (each was checked by
// planting the break and seeing the test fail).

// A builder timed out on c who claims c again and is ACKed is no longer
// counted as timed out on c: once it lets c go again, its lines about c
// are "not yours", not "timed out".
func TestReclaimAfterTimeoutClearsTheTimeout(t *testing.T) {
	e := started(t, func(c *Config) { c.Roles = Roles{Operators: []string{"@op"}} })
	require.Equal(t, []string{"ACK db @b"}, e.doReceive(msg("@b", "CLAIM db", time.Second)))
	out := e.doAdvance(at(time.Hour))
	require.Equal(t, []string{"TIMEOUT db @b", "TASKS db"}, out)
	assert.Equal(t, []string{"@b"}, e.View().Components[0].TimedOut)
	out = e.doReceive(msg("@b", "PROGRESS db 10", time.Hour+time.Second))
	require.Len(t, out, 1)
	assert.Contains(t, out[0], "timed out; CLAIM again", "before it claims again it is told so")

	require.Equal(t, []string{"ACK db @b after TIMEOUT of @b: no progress reported"}, e.doReceive(msg("@b", "CLAIM db", time.Hour+2*time.Second)))
	assert.Empty(t, e.View().Components[0].TimedOut, "ACKed again: no longer timed out")
	require.Equal(t, []string{"OK RELEASE db from @b", "TASKS db"}, e.doReceive(msg("@op", "RELEASE db", time.Hour+3*time.Second)))
	out = e.doReceive(msg("@b", "PROGRESS db 20", time.Hour+4*time.Second))
	require.Len(t, out, 1)
	assert.Equal(t, "REJECT db @b not yours; CLAIM db first", out[0])
}

// A blocked component's check-in deadline restarts on each of its
// builder's lines (PROGRESS, BLOCKED, CONFLICT): a blocked builder that
// keeps checking in is never timed out.
func TestBlockedDeadlineRestartsOnEachLine(t *testing.T) {
	e := started(t, func(c *Config) {
		c.Components = []Component{{Name: "a"}, {Name: "b"}, {Name: "c"}}
		c.Rules.MaxBuildTime = 0 // no overtime deadline in the way
	})
	deadline := e.checkinDeadline() // 30m
	require.Equal(t, []string{"ACK a @b"}, e.doReceive(msg("@b", "CLAIM a", 0)))
	require.Equal(t, []string{"WAIT a @b b"}, e.doReceive(msg("@b", "BLOCKED a b needs its schema", 20*time.Minute)))
	require.Equal(t, Blocked, e.comps[0].state)
	lines := []struct {
		at   time.Duration
		text string
	}{
		{40 * time.Minute, "PROGRESS a 10 still waiting"},
		{65 * time.Minute, "BLOCKED a b still"}, // the same pushback again: a check-in too
		{90 * time.Minute, "CONFLICT a c files shared.go"},
		{115 * time.Minute, "PROGRESS a 20 waiting"},
	}
	for _, l := range lines {
		out := e.doAdvance(at(l.at - time.Second))
		assert.Empty(t, out, "no TIMEOUT before %s", l.text)
		e.doReceive(msg("@b", l.text, l.at))
		require.Equal(t, Blocked, e.comps[0].state, l.text)
		d, ok := e.NextDeadline()
		require.True(t, ok)
		assert.Equal(t, at(l.at+deadline), d, "the deadline restarts at %q", l.text)
	}
	assert.Empty(t, e.doAdvance(at(115*time.Minute+deadline-time.Second)))
	// a waits on b now, so it is not claimable: no TASKS follows.
	assert.Equal(t, []string{"TIMEOUT a @b"}, e.doAdvance(at(115*time.Minute+deadline)))
}

// An ABORT's blocker type is read in any case: "Missing_Dependency:" is
// as hard as "missing_dependency".
func TestAbortBlockerTypeInAnyCase(t *testing.T) {
	for _, reason := range []string{"Missing_Dependency: libfoo", "MISSING_DEPENDENCY libfoo", "missing_dependency, libfoo"} {
		e := started(t, nil)
		e.doReceive(msg("@b", "CLAIM db", time.Second))
		out := e.doReceive(msg("@b", "ABORT db "+reason, 2*time.Second))
		require.Len(t, out, 1, reason)
		assert.True(t, strings.HasPrefix(out[0], "ESCALATE db hard-blocker missing_dependency: libfoo"), "%s: %q", reason, out[0])
		assert.Equal(t, Held, e.comps[0].state, reason)
		assert.Equal(t, "", e.comps[0].owner, reason)
	}
}

// A soft ABORT of a held component escalates again, saying the builder let
// it go: the component stays held for the human, it is not released.
func TestSoftAbortOfAHeldComponentEscalates(t *testing.T) {
	e := started(t, nil)
	e.doReceive(msg("@b", "CLAIM db", time.Second))
	out := e.doReceive(msg("@b", "BLOCKED db cache", 2*time.Second)) // cache is no component: need-info, held
	require.Len(t, out, 1)
	require.True(t, strings.HasPrefix(out[0], "ESCALATE db need-info"), out[0])
	require.Equal(t, Held, e.comps[0].state)

	out = e.doReceive(msg("@b", "ABORT db tired of waiting", 3*time.Second))
	require.Len(t, out, 1, "one ESCALATE, and no TASKS: %q", out)
	assert.True(t, strings.HasPrefix(out[0], "ESCALATE db need-info @b gave up db while it was held (tired of waiting)"), out[0])
	assert.Equal(t, Held, e.comps[0].state)
	assert.Equal(t, "", e.comps[0].owner, "the builder let it go")
	out = e.doReceive(msg("@c", "CLAIM db", 4*time.Second))
	require.Len(t, out, 1)
	assert.Contains(t, out[0], "REJECT db @c held for a human")
}
