package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentforeman/foreman/protocol"
)

func TestParseReply(t *testing.T) {
	for _, tc := range []struct {
		line string
		want reply
	}{
		{"TASKS db auth", reply{Verb: protocol.ReplyTasks, List: []string{"db", "auth"}}},
		{"ACK api @b2 after TIMEOUT of @b1: progress 40%", reply{Verb: protocol.ReplyAck, C: "api", Agent: "@b2", Rest: "after TIMEOUT of @b1: progress 40%"}},
		{"REJECT db @b2 owned by @b1; CLAIM another component from TASKS", reply{Verb: protocol.ReplyReject, C: "db", Agent: "@b2", Rest: "owned by @b1; CLAIM another component from TASKS"}},
		{"FIX api @b1 1/2 no tests", reply{Verb: protocol.ReplyFix, C: "api", Agent: "@b1", Rest: "1/2 no tests"}},
		{"WAIT api @b1 db", reply{Verb: protocol.ReplyWait, C: "api", Agent: "@b1", Rest: "db"}},
		{"ESCALATE api hard-blocker invalid_specification: two keys", reply{Verb: protocol.ReplyEscalate, C: "api", Code: "hard-blocker", Rest: "invalid_specification: two keys"}},
		{"MERGED db", reply{Verb: protocol.ReplyMerged, C: "db"}},
		{"COMPLETE shop", reply{Verb: protocol.ReplyComplete, C: "shop"}},
	} {
		got, ok := parseReply(tc.line)
		assert.True(t, ok)
		assert.Equal(t, tc.want, got, tc.line)
	}
	_, ok := parseReply("  ")
	assert.False(t, ok)
}

func TestResumedAt(t *testing.T) {
	assert.Equal(t, 40, resumedAt("after TIMEOUT of @b1: progress 40%"))
	assert.Equal(t, 80, resumedAt("after RETRY of @b1 (2/2 audits failed): progress 80%, PR pr/1"))
	assert.Equal(t, 60, resumedAt("after ABORT by @b1 (context_exhaustion_handoff at 60%): progress 60%"), "the progress left, not the note")
	assert.Equal(t, 0, resumedAt("after TIMEOUT of @b1: no progress reported"))
	assert.Equal(t, 0, resumedAt(""))
}
