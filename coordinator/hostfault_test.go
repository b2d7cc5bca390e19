package coordinator

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A CI FAIL whose details start with host-fault is the host's own failure
// (contract section 6): c is held for the operator, and its builder is
// charged nothing, whether it came while c was in CI or, from the merger,
// while c was approved.
func TestHostFaultHoldsAndChargesNothing(t *testing.T) {
	const fault = "CI api FAIL host-fault: ./check.sh is not executable on main"
	t.Run("in CI", func(t *testing.T) {
		e := newEngine(t, func(c *Config) {
			c.Rules.CIGating = true
			c.Rules.CIAttempts = 2
			c.Roles = Roles{CI: []string{"@host"}, Operators: []string{"@op"}}
		})
		e.doStart(t0)
		e.doReceive(msg("@b1", "CLAIM db", time.Second))
		e.doReceive(msg("@b1", "READY db b1/db", 2*time.Second))
		e.doReceive(msg("@host", "CI db PASS", 3*time.Second))
		e.doReceive(msg("@aud", "AUDIT db PASS", 4*time.Second))
		e.doReceive(msg("@b2", "CLAIM api", 5*time.Second))
		e.doReceive(msg("@b2", "READY api b2/api", 6*time.Second))
		for round := range 3 { // more than ci_attempts: none of them counts
			out := e.doReceive(msg("@host", fault, time.Duration(10+round*10)*time.Second))
			require.Len(t, out, 1, "round %d", round)
			assert.Equal(t, "ESCALATE api host-fault ./check.sh is not executable on main; nothing counted against @b2; fix it as said, then RESOLVE api", out[0])
			c := e.comps[1]
			assert.Equal(t, Held, c.state)
			assert.Equal(t, "@b2", c.owner, "its builder keeps it")
			assert.Zero(t, c.ciFails, "nothing charged to the builder")
			assert.False(t, c.timer.armed(), "a held component runs no timer: no CI timeout either")
			assert.Equal(t, []string{"OK RESOLVE api", "ACK api @b2 resolved by @op"}, e.doReceive(msg("@op", "RESOLVE api", time.Duration(11+round*10)*time.Second)))
			e.doReceive(msg("@b2", "READY api b2/api", time.Duration(12+round*10)*time.Second))
		}
		// A failure of the builder's still counts from its first attempt.
		assert.Equal(t, []string{"FIX api @b2 1/2 CI failed: abc make test: FAIL TestX"},
			e.doReceive(msg("@host", "CI api FAIL abc make test: FAIL TestX", time.Minute)))
	})
	t.Run("approved", func(t *testing.T) {
		e := approvedAPI(t, func(c *Config) { c.Roles.CI = []string{"@host"} })
		out := e.doReceive(msg("@host", fault, 20*time.Second))
		require.Len(t, out, 1)
		assert.Contains(t, out[0], "ESCALATE api host-fault ./check.sh is not executable on main")
		c := e.comps[1]
		assert.Equal(t, Held, c.state)
		assert.False(t, c.approved)
		assert.Zero(t, c.ciFails)
	})
	t.Run("the host's whole remedy fits", func(t *testing.T) {
		e := approvedAPI(t, func(c *Config) { c.Roles.CI = []string{"@host"} })
		remedy := "check program ./scripts/check-all.sh is not executable on main: make it executable (git update-index --chmod=+x scripts/check-all.sh) on a branch and land it through the host: ADD hotfix, ASSIGN hotfix @you, READY hotfix <branch>"
		out := e.doReceive(msg("@host", "CI api FAIL host-fault: "+remedy, 20*time.Second))
		require.Len(t, out, 1)
		assert.Equal(t, "ESCALATE api host-fault "+remedy+"; nothing counted against @b2; fix it as said, then RESOLVE api", out[0])
	})
	t.Run("only the first word", func(t *testing.T) {
		e := approvedAPI(t, func(c *Config) { c.Roles.CI = []string{"@host"} })
		assert.Equal(t, []string{"FIX api @b2 1/2 CI failed: abc go test: host-fault: not this"},
			e.doReceive(msg("@host", "CI api FAIL abc go test: host-fault: not this", 20*time.Second)))
	})
}
