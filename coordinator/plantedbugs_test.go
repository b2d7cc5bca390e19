package coordinator

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every rule reads back as it was set, so a recording's !set lines (written
// with Get) replay the session's rules: an on/off rule read back as "off"
// would have a CI-gated session replayed without CI.
func TestRulesRoundTrip(t *testing.T) {
	set := DefaultRules()
	for key, value := range map[string]string{
		"checkin_interval": "7m30s", "missed_checkins": "4", "audit_attempts": "2", "max_builders": "5",
		"audit_timeout": "90s", "pushback_retries": "6", "max_claims_per_agent": "2", "ci_gating": "on",
		"ci_timeout": "45s", "ci_attempts": "7", "conflict_attempts": "2", "max_build_time": "3h",
		"merge": "external", "require_verified": "on", "overlap": "wait",
	} {
		require.NoError(t, set.Set(key, value), key)
	}
	require.NotEqual(t, DefaultRules(), set)
	assert.True(t, set.CIGating)
	assert.True(t, set.RequireVerified)
	for _, base := range []Rules{set, DefaultRules()} {
		got := DefaultRules()
		if base == got {
			got.CIGating, got.RequireVerified = true, true // so "off" must be read too
		}
		for _, key := range RuleKeys() {
			value, ok := base.Get(key)
			require.True(t, ok, key)
			require.NoError(t, got.Set(key, value), key)
		}
		assert.Equal(t, base, got)
	}
}

// All six hard blocker types of the contract hold the component and
// escalate; a soft reason frees it.
func TestEveryHardBlockerHolds(t *testing.T) {
	for _, kind := range []string{"mathematically_false", "missing_dependency", "unresolvable_build_error",
		"invalid_specification", "resource_exhausted", "strategy_failed"} {
		e := started(t, nil)
		e.doReceive(msg("@b", "CLAIM db", time.Second))
		out := e.doReceive(msg("@b", "ABORT db "+kind+": stuck", 2*time.Second))
		require.NotEmpty(t, out, kind)
		assert.True(t, strings.HasPrefix(out[0], "ESCALATE db hard-blocker "+kind+": stuck"), "%s: %q", kind, out)
		assert.Equal(t, Held, e.comps[0].state, kind)
	}
	for _, reason := range []string{"timeout", "context_exhaustion_handoff", "phase_incomplete", "mcp_transient", "tired of it"} {
		e := started(t, nil)
		e.doReceive(msg("@b", "CLAIM db", time.Second))
		out := e.doReceive(msg("@b", "ABORT db "+reason, 2*time.Second))
		assert.Equal(t, []string{"TASKS db"}, out, reason)
		assert.Equal(t, Pending, e.comps[0].state, reason)
	}
}

// The claim checks run in the contract's order: a barred builder is told it
// is barred even when the component also waits on a dependency.
func TestClaimChecksInContractOrder(t *testing.T) {
	e := started(t, func(c *Config) {
		c.Roles = Roles{Operators: []string{"@op"}, Auditors: []string{"@aud"}}
		c.Components = []Component{{Name: "db"}, {Name: "api"}, {Name: "cache"}}
	})
	at := time.Second
	say := func(from, text string) []string {
		at += time.Second
		return e.doReceive(msg(from, text, at))
	}
	say("@b", "CLAIM api")
	for i := range e.rules.AuditAttempts {
		say("@b", "READY api pr/1")
		out := say("@aud", "AUDIT api FAIL no tests")
		require.NotEmpty(t, out, "audit %d", i)
	}
	require.Contains(t, e.comps[1].barred, "@b")
	say("@op", "DEPEND api cache")
	out := say("@b", "CLAIM api")
	require.Len(t, out, 1)
	assert.Equal(t, fmt.Sprintf("REJECT api @b you used all %d audit attempts on api; CLAIM another component", e.rules.AuditAttempts), out[0])
	out = say("@c", "CLAIM api")
	assert.Equal(t, []string{"REJECT api @c waiting on cache (not merged yet); CLAIM one from TASKS"}, out)
}
