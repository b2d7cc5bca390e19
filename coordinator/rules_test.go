package coordinator

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRulesSetAndGet(t *testing.T) {
	r := DefaultRules()
	require.NoError(t, r.Set("checkin_interval", "2m"))
	require.NoError(t, r.Set("missed_checkins", "5"))
	require.NoError(t, r.Set("ci_gating", "on"))
	require.NoError(t, r.Set("merge", "external"))
	require.NoError(t, r.Set("max_build_time", "0"))
	assert.Equal(t, 2*time.Minute, r.CheckinInterval)
	assert.Equal(t, 5, r.MissedCheckins)
	assert.True(t, r.CIGating)
	assert.Equal(t, MergeExternal, r.Merge)
	assert.Zero(t, r.MaxBuildTime)

	for _, key := range RuleKeys() {
		v, ok := r.Get(key)
		require.True(t, ok, key)
		copy := DefaultRules()
		require.NoError(t, copy.Set(key, v), "Get's form of %s must read back", key)
	}
}

func TestRulesSetErrorsNameTheKey(t *testing.T) {
	r := DefaultRules()
	for key, value := range map[string]string{
		"checkin_interval":     "10x",
		"audit_timeout":        "0s",
		"max_build_time":       "-1h",
		"missed_checkins":      "0",
		"max_claims_per_agent": "-1",
		"pushback_retries":     "three",
		"ci_gating":            "maybe",
		"merge":                "squash",
		"no_such_rule":         "1",
	} {
		err := r.Set(key, value)
		require.Error(t, err, key)
		assert.Contains(t, err.Error(), key)
	}
	assert.Equal(t, DefaultRules(), r, "a refused value changes nothing")
}
