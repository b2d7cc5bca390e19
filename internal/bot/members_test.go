package bot

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// A builder that joined the room and has said nothing can be handed work
// by the operator, which is when an operator wants to: foreman takes the
// room's member list when it joins (early was there before it) and each
// agent joining since (late). Both reach the engine through the journal
// and the recording, which replays; after a restart the same list costs
// nothing new.
func TestOperatorAssignsASilentMember(t *testing.T) {
	r := roomtest.Start(t)
	early, op := r.Join(t, "early"), r.Join(t, "olga")
	id, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	cfg := fastConfig(t, r.URL(), t.TempDir(), coordinator.Component{Name: "db"}, coordinator.Component{Name: "docs"})
	cfg.Roles.Operators = []string{op.ID}
	cfg.Rules.CheckinInterval = time.Hour // nobody checks in here; nobody times out either
	bot := id.AgentID()
	_, stop := runBot(t, cfg, id)
	op.Await(bot, "TASKS db docs")

	late := r.Join(t, "late")
	op.Say("ASSIGN db " + late.ID)
	late.Await(bot, "OK ASSIGN db "+late.ID)
	late.Await(bot, "ACK db "+late.ID)
	op.Say("ASSIGN docs " + early.ID)
	early.Await(bot, "ACK docs "+early.ID)
	op.Say("ASSIGN docs @late")
	op.Await(bot, "REJECT docs "+op.ID+" @late is not a sender id; late is the display name of "+late.ID)
	op.Say("ASSIGN docs @nobody99")
	op.Await(bot, "REJECT docs "+op.ID+" @nobody99 has not been seen in this room")
	require.NoError(t, stop())

	_, stop = runBot(t, cfg, id)
	op.Say("STATUS db")
	status, _ := op.Await(bot, "STATUS db")
	assert.Contains(t, status, "owner="+late.ID)
	require.NoError(t, stop())

	replayRecording(t, cfg.Record)
	raw, err := os.ReadFile(cfg.Record)
	require.NoError(t, err)
	before, after, ok := strings.Cut(string(raw), "# foreman restarted")
	require.True(t, ok, "%s", raw)
	assert.Contains(t, before, "!members")
	assert.Contains(t, before, early.ID+"=early")
	assert.Contains(t, before, late.ID+"=late")
	var again []string
	for l := range strings.Lines(after) {
		if strings.HasPrefix(l, "!members") {
			again = append(again, strings.TrimSpace(l))
		}
	}
	// Only the name the operator's first line after the restart came with
	// (a recording after a restart starts knowing no names).
	require.Len(t, again, 1, "%s", after)
	assert.Regexp(t, `^!members \S+ `+op.ID+`=olga$`, again[0])
}
