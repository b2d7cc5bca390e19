package guide

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/coordinator"
)

// The guide says which operator commands from anyone else get REJECT and
// which ERROR (contract section 2: ERROR when the line names no
// component), and the engine answers as it says.
func TestTheGuideSaysHowOperatorCommandsAreRefused(t *testing.T) {
	text := strings.Join(strings.Fields(Text), " ")
	assert.Contains(t, text, "a command that names a component gets `REJECT <c> <@you> only operators may ...`")
	assert.Contains(t, text, "and `PAUSE` or `RESUME`, which name none, get `ERROR <@you> only operators may ...`")

	e, err := coordinator.New(coordinator.Config{Self: "@f", Components: []coordinator.Component{{Name: "db"}},
		Rules: coordinator.DefaultRules(), Roles: coordinator.Roles{Operators: []string{"@op"}}})
	require.NoError(t, err)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e.Step(coordinator.Event{Kind: coordinator.KindStart, At: at})
	for line, want := range map[string]string{
		"RELEASE db":        "REJECT db @x only operators may RELEASE",
		"ASSIGN db @x":      "REJECT db @x only operators may ASSIGN",
		"PAUSE":             "ERROR @x only operators may PAUSE",
		"RESUME":            "ERROR @x only operators may RESUME",
		"UNDEPEND db other": "REJECT db @x only operators may UNDEPEND",
	} {
		at = at.Add(time.Second)
		said := e.Step(coordinator.Heard(coordinator.Message{ID: line, From: "@x", At: at, Content: line}))
		require.NotEmpty(t, said, line)
		assert.True(t, strings.HasPrefix(said[0].Text, want), "%s: %s", line, said[0].Text)
	}
}
