package coordinator

import (
	"strings"
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
	assert.Equal(t, OverlapWarn, r.Overlap, "warn by default (contract section 10)")
	require.NoError(t, r.Set("overlap", "Wait"))
	assert.Equal(t, OverlapWait, r.Overlap)
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
		"overlap":              "block",
		"no_such_rule":         "1",
	} {
		err := r.Set(key, value)
		require.Error(t, err, key)
		assert.Contains(t, err.Error(), key)
	}
	assert.Equal(t, DefaultRules(), r, "a refused value changes nothing")
}

// Values that pass a type check but would break the run are refused where
// they are set and where an engine is built, naming the key.
func TestRulesBounds(t *testing.T) {
	for key, value := range map[string]string{
		"missed_checkins":      "20000000",
		"checkin_interval":     "9000h",
		"audit_timeout":        "1500us",
		"max_claims_per_agent": "1001",
		"ci_timeout":           "0s",
	} {
		r := DefaultRules()
		err := r.Set(key, value)
		require.Error(t, err, key)
		assert.True(t, strings.HasPrefix(err.Error(), key+": "), err.Error())
		assert.Equal(t, DefaultRules(), r, "a refused value changes nothing")
	}

	r := DefaultRules()
	require.NoError(t, r.Set("checkin_interval", "24h"))
	require.NoError(t, r.Set("missed_checkins", "400"))
	assert.EqualError(t, r.Check(), "missed_checkins: 400 x checkin_interval 24h0m0s is a deadline over the most allowed, 8760h0m0s (a year)")
	require.NoError(t, r.Set("checkin_interval", "8760h"))
	require.NoError(t, r.Set("missed_checkins", "1000"))
	assert.ErrorContains(t, r.Check(), "missed_checkins: 1000 x checkin_interval", "a product that would overflow is caught")
	_, err := New(Config{Build: "b", Rules: r})
	assert.ErrorContains(t, err, "rules.missed_checkins: ")

	r = DefaultRules()
	r.MissedCheckins = 20000000
	_, err = New(Config{Build: "b", Rules: r})
	assert.EqualError(t, err, "rules.missed_checkins: 20000000 is over the most allowed, 1000")
	assert.NoError(t, DefaultRules().Check())
}
