package recovery

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/node"
)

// The history vouches for what foreman sent only if it reaches back to the
// message the room last confirmed: by its id, or by a message no newer.
// Otherwise the unconfirmed replies go out stamped "may repeat".
func TestReachesBack(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	last := node.Echo{MsgID: "m5", TS: t0.Add(5 * time.Second)}
	msg := func(id string, s int) agentchat.Message {
		return agentchat.Message{ID: id, TS: t0.Add(time.Duration(s) * time.Second)}
	}
	assert.True(t, ReachesBack([]agentchat.Message{msg("m5", 5), msg("m6", 6)}, last), "holds the message itself")
	assert.True(t, ReachesBack([]agentchat.Message{msg("m4", 4), msg("m7", 7)}, last), "holds an older one (the echo itself was deleted)")
	assert.False(t, ReachesBack([]agentchat.Message{msg("m6", 6), msg("m7", 7)}, last), "starts after it: lines in between may be lost")
	assert.False(t, ReachesBack([]agentchat.Message{msg("m5b", 5), msg("m7", 7)}, last),
		"another of the same millisecond may have come after it: lines between may be lost")
	assert.False(t, ReachesBack(nil, last), "no history")
	assert.False(t, ReachesBack([]agentchat.Message{msg("m1", 1)}, node.Echo{}), "nothing was ever confirmed")
}
