package agents

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/protocol"
)

func replies(lines ...protocol.Reply) []coordinator.Reply {
	out := make([]coordinator.Reply, len(lines))
	for i, l := range lines {
		out[i] = coordinator.Reply{Reply: l}
	}
	return out
}

// foreman's TIMEOUT and an operator's RELEASE name the agent they take
// work from; an OK RELEASE of a component nobody owned names nobody.
func TestOustedReadsTimeoutAndRelease(t *testing.T) {
	said := replies(protocol.Timeout("api", "@b1"), protocol.Released(protocol.Command{Verb: protocol.Release, Component: "web"}, "@b2"),
		protocol.Released(protocol.Command{Verb: protocol.Release, Component: "db"}, ""), protocol.Complete("shop"))
	assert.Equal(t, map[string]string{
		"@b1": "foreman timed it out on api (TIMEOUT api)",
		"@b2": "an operator released web from it (RELEASE web)",
	}, Ousted(said))
	assert.True(t, Ends(said))
	assert.False(t, Ends(said[:1]))
}

// A budget holds an agent whose own budget is spent, or whose component
// its budget holds; another hold, or a budget not reached, holds nobody.
func TestHeldByBudget(t *testing.T) {
	five := coordinator.Limit{USD: 5_000_000, HasUSD: true}
	v := coordinator.View{
		Agents: []coordinator.AgentView{
			{ID: "@b1", Spent: coordinator.Cost{USD: 5_000_000}, Budget: &five},
			{ID: "@b2", Spent: coordinator.Cost{USD: 4_999_999}, Budget: &five},
			{ID: "@b3", Spent: coordinator.Cost{USD: 9_000_000}},
		},
		Components: []coordinator.ComponentView{
			{Name: "api", State: "held", Owner: "@b4", Escalation: string(protocol.BudgetSpent)},
			{Name: "web", State: "held", Owner: "@b5", Escalation: string(protocol.HardBlocker)},
			{Name: "db", State: "building", Owner: "@b2"},
		},
	}
	held := HeldByBudget(v)
	assert.Len(t, held, 2)
	assert.Contains(t, held["@b1"], "BUDGET @b1 lifts it")
	assert.Equal(t, "api is held by its budget (ESCALATE api budget); BUDGET api lifts it", held["@b4"])
	assert.True(t, Touches(replies(protocol.Escalate("api", protocol.BudgetSpent, "api spent $5", "BUDGET api"))))
	assert.False(t, Touches(replies(protocol.Timeout("api", "@b1"))))
}
