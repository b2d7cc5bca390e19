package chatroom

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentforeman/foreman/coordinator"
)

// A sender's role is learnt from its protocol lines as the contract's
// grammar reads them, never from chat that starts with a verb's word:
// "ci is red again" is not the CI bot (the first word matched by
// strings.ToUpper said it was).
func TestRolesAreLearntFromProtocolLinesOnly(t *testing.T) {
	r := New("@f")
	for from, line := range map[string]string{
		"@chat1": "ci is red again",
		"@chat2": "audit db tomorrow, please",
		"@chat3": "claim: db looks free",
		"@bad":   "AUDIT db MAYBE",
		"@b1":    "CLAIM db",
		"@aud":   "AUDIT db PASS",
		"@ci":    "CI db FAIL make test: exit 2",
	} {
		r.Heard(from, "", line)
	}
	assert.Equal(t, map[string]string{"@b1": "builder", "@aud": "auditor", "@ci": "ci"}, r.Said)
}

// Owners follow foreman's replies, an ABORT by the owner, and MERGED from
// a merger only.
func TestOwnersFollowTheRoom(t *testing.T) {
	r := New("@f")
	r.SetRoles(coordinator.Roles{Merger: []string{"@host"}}, "test")
	r.Heard("@f", "foreman", "ACK db @b1")
	r.Heard("@f", "foreman", "ACK api @b2")
	r.Heard("@f", "foreman", "ACK web @b3")
	assert.Equal(t, []string{"db"}, r.Owns("@b1"))
	r.Heard("@b2", "b2", "MERGED api") // not a merger: changes nothing
	assert.Equal(t, []string{"api"}, r.Owns("@b2"))
	r.Heard("@host", "host", "MERGED api")
	assert.Empty(t, r.Owns("@b2"))
	r.Heard("@b3", "b3", "ABORT web the schema is wrong")
	assert.Empty(t, r.Owns("@b3"))
	r.Heard("@b9", "b9", "ABORT db not mine")
	assert.Equal(t, []string{"db"}, r.Owns("@b1"), "only the owner's ABORT lets go")
	r.Heard("@f", "foreman", "COMPLETE shop")
	assert.Empty(t, r.Owns("@b1"))
}
