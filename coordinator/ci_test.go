package coordinator

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// approvedAPI is an engine in merge mode external with api approved: db
// merged, api built by @b2, READY, and passed by @aud.
func approvedAPI(t *testing.T, mutate func(*Config)) *Engine {
	t.Helper()
	e := newEngine(t, func(c *Config) {
		c.Rules.Merge = MergeExternal
		c.Rules.CIAttempts, c.Rules.ConflictAttempts = 2, 2
		c.Roles = Roles{Merger: []string{"@host"}, Auditors: []string{"@aud"}, Operators: []string{"@op"}}
		if mutate != nil {
			mutate(c)
		}
	})
	e.doStart(t0)
	steps := []struct {
		from, line string
	}{
		{"@b1", "CLAIM db"}, {"@b1", "READY db b1/db"}, {"@aud", "AUDIT db PASS"}, {"@host", "MERGED db"},
		{"@b2", "CLAIM api"}, {"@b2", "READY api b2/api"},
	}
	for i, s := range steps {
		e.doReceive(msg(s.from, s.line, time.Duration(i+1)*time.Second))
	}
	if e.rules.CIGating {
		e.doReceive(msg("@host", "CI api PASS abc", 10*time.Second))
	}
	e.doReceive(msg("@aud", "AUDIT api PASS", 11*time.Second))
	require.True(t, e.comps[1].approved)
	return e
}

func TestMergerStepsAnApprovedComponentBack(t *testing.T) {
	for _, gating := range []bool{false, true} {
		e := approvedAPI(t, func(c *Config) {
			c.Rules.CIGating = gating
			c.Roles.CI = []string{"@host"}
		})
		assert.Equal(t, []string{"FIX api @b2 1/2 CI failed: abc make test: FAIL TestX log=x.log"},
			e.doReceive(msg("@host", "CI api FAIL abc make test: FAIL TestX log=x.log", 20*time.Second)), "gating %v", gating)
		c := e.comps[1]
		assert.Equal(t, Building, c.state)
		assert.False(t, c.approved, "stepped back: no longer approved")
		assert.Equal(t, 1, c.ciFails)
		d, ok := e.NextDeadline()
		require.True(t, ok, "the builder owes check-ins again")
		assert.True(t, d.After(at(20*time.Second)))
	}
}

func TestMergerConflictCountsAgainstConflictAttempts(t *testing.T) {
	e := approvedAPI(t, nil)
	assert.Equal(t, []string{"FIX api @b2 1/2 merge conflict: go.sum"},
		e.doReceive(msg("@host", "CI api CONFLICT go.sum", 20*time.Second)))
	assert.Equal(t, 1, e.comps[1].ciConflict)
	assert.Equal(t, 0, e.comps[1].ciFails)
	e.doReceive(msg("@b2", "READY api b2/api", 30*time.Second))
	e.doReceive(msg("@aud", "AUDIT api PASS", 31*time.Second))
	out := e.doReceive(msg("@host", "CI api CONFLICT go.sum", 40*time.Second))
	require.Len(t, out, 1)
	assert.Contains(t, out[0], "ESCALATE api ci-exhausted merge conflict: go.sum (2/2) on b2/api by @b2")
	assert.Equal(t, Held, e.comps[1].state)
	assert.False(t, e.comps[1].approved, "a held component is not approved: RESOLVE sends it back to its builder")
}

func TestMergerReportRefused(t *testing.T) {
	e := approvedAPI(t, func(c *Config) { c.Roles.CI = []string{"@ci"} })
	for _, tc := range []struct{ from, line, want string }{
		{"@ci", "CI api FAIL flaky", "REJECT api @ci already approved; only the merger may report CI on it now, or say MERGED"},
		{"@op", "CI api CONFLICT a.go", "REJECT api @op already approved; only the merger may report CI on it now, or say MERGED"},
		{"@b2", "CI api FAIL mine", "REJECT api @b2 already approved; only the merger may report CI on it now, or say MERGED"},
		{"@host", "CI api PASS", "REJECT api @host already approved; say MERGED api once it has landed"},
	} {
		assert.Equal(t, []string{tc.want}, e.doReceive(msg(tc.from, tc.line, 20*time.Second)), tc.line)
	}
	assert.True(t, e.comps[1].approved, "nothing changed")
	assert.Equal(t, 0, e.comps[1].ciFails)

	// Not approved (in review, before AUDIT PASS): the merger is no CI role.
	e = approvedAPI(t, nil)
	e.doReceive(msg("@host", "CI api FAIL x", 20*time.Second))
	e.doReceive(msg("@b2", "READY api b2/api", 30*time.Second))
	assert.Equal(t, []string{"REJECT api @host CI gating is off; READY goes straight to review"},
		e.doReceive(msg("@host", "CI api FAIL x", 31*time.Second)))
}

func TestMergeAcceptHasNoApprovedState(t *testing.T) {
	// In merge mode accept AUDIT PASS merges at once: a merger's CI line
	// about the merged component is an ordinary, refused CI line.
	e := newEngine(t, func(c *Config) {
		c.Rules.CIGating = true
		c.Roles = Roles{Merger: []string{"@host"}, CI: []string{"@host"}}
	})
	e.doStart(t0)
	e.doReceive(msg("@b1", "CLAIM db", time.Second))
	e.doReceive(msg("@b1", "READY db b1/db", 2*time.Second))
	assert.Equal(t, []string{"REVIEW db @b1 b1/db"}, e.doReceive(msg("@host", "CI db PASS", 3*time.Second)))
	assert.Equal(t, []string{"MERGED db", "TASKS api"}, e.doReceive(msg("@aud", "AUDIT db PASS", 4*time.Second)))
	assert.Equal(t, []string{"REJECT db @host not waiting for CI (merged)"},
		e.doReceive(msg("@host", "CI db FAIL late", 5*time.Second)))
}
