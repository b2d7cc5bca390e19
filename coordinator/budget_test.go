package coordinator

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (e *Engine) doSpend(d time.Duration, s Spend) []string {
	return lines(e.Step(Event{Kind: KindSpend, At: at(d), Spend: s}))
}

func usd(dollars float64) Cost { return Cost{USD: int64(dollars * 1e6)} }

func request(agent string, d time.Duration, c Cost) Spend {
	return Spend{Agent: agent, Source: SpendRequest, At: at(d), Cost: c}
}

// Budgets from the config: a default for every component, one by name, a
// default for every agent and one by id.
func TestConfiguredBudgets(t *testing.T) {
	e := newEngine(t, func(c *Config) {
		c.Components = []Component{{Name: "db"}, {Name: "api"}, {Name: "web"}}
		c.Rules.MaxClaimsPerAgent = 2
		c.Budgets = Budgets{Component: Limit{USD: 1_000_000, HasUSD: true},
			Components: map[string]Limit{"api": {Tokens: 1000, HasTokens: true}},
			Agent:      Limit{USD: 10_000_000, HasUSD: true},
			Agents:     map[string]Limit{"@b2": {USD: 500_000, HasUSD: true}}}
	})
	e.doStart(t0)
	e.doReceive(msg("@b1", "CLAIM db", time.Second))
	assert.Empty(t, e.doSpend(2*time.Second, request("@b1", 2*time.Second, usd(0.5))))
	out := e.doSpend(3*time.Second, request("@b1", 3*time.Second, usd(0.5)))
	require.Len(t, out, 1)
	assert.True(t, strings.HasPrefix(out[0], "ESCALATE db budget db spent $1.00 of $1.00 (100%)"), out[0])

	e.doReceive(msg("@b1", "CLAIM api", 4*time.Second))
	assert.Empty(t, e.doSpend(5*time.Second, request("@b1", 5*time.Second, Cost{USD: 5_000_000, Tokens: 700})),
		"api's budget is in tokens alone: $5 is counted, not held against")
	out = e.doSpend(6*time.Second, request("@b1", 6*time.Second, Cost{Tokens: 100}))
	require.Len(t, out, 1)
	assert.Equal(t, "@b1 api: 80% of its budget spent: $5.00 and 800 of 1000 tokens (80%); at 100% it is held (ESCALATE api budget)", out[0])

	// @b2's own budget, not the default: over at $0.50, holding nothing.
	out = e.doSpend(7*time.Second, request("@b2", 7*time.Second, usd(0.5)))
	require.Len(t, out, 1)
	assert.True(t, strings.HasPrefix(out[0], "ESCALATE build budget @b2 spent $0.50 of $0.50 (100%)"), out[0])
	assert.Equal(t, []string{"REJECT web @b2 you spent $0.50 of $0.50 (100%) and 0 tokens; claims wait for an operator's BUDGET @b2"},
		e.doReceive(msg("@b2", "CLAIM web", 8*time.Second)))

	v := e.View()
	assert.Equal(t, Cost{USD: 6_500_000, Tokens: 800}, v.Spent)
	require.Len(t, v.Agents, 2)
	assert.Equal(t, AgentView{ID: "@b1", Spent: Cost{USD: 6_000_000, Tokens: 800}, Budget: &Limit{USD: 10_000_000, HasUSD: true}, Holds: "api"}, v.Agents[0])
}

// No budget: nothing is enforced, everything is still counted.
func TestNoBudgetCountsEverything(t *testing.T) {
	e := newEngine(t, nil)
	e.doStart(t0)
	e.doReceive(msg("@b1", "CLAIM db", time.Second))
	for i := range 100 {
		assert.Empty(t, e.doSpend(time.Duration(i+2)*time.Second, request("@b1", time.Duration(i+2)*time.Second, usd(1000))))
	}
	assert.Equal(t, Cost{USD: 100_000 * 1_000_000}, e.View().Components[0].Spent)
}

// A restart loses no spend: the snapshot holds the ledger, the series'
// last points and the budgets BUDGET set, and going on gives the same.
func TestSpendSurvivesSnapshot(t *testing.T) {
	cfg := func(c *Config) { c.Roles.Operators = []string{"@op"} }
	e := newEngine(t, cfg)
	e.doStart(t0)
	e.doReceive(msg("@b1", "CLAIM db", time.Second))
	e.doReceive(msg("@op", "BUDGET db 2", time.Second))
	e.doSpend(2*time.Second, Spend{Agent: "@b1", Source: SpendCumulative, Series: "cost", Start: t0, At: at(2 * time.Second), Cost: usd(0.7)})
	data, err := json.Marshal(e.Snapshot())
	require.NoError(t, err)
	var s Snapshot
	require.NoError(t, json.Unmarshal(data, &s))
	r, err := Restore(e.cfg, &s)
	require.NoError(t, err)
	assert.Equal(t, e.View(), r.View())
	next := Spend{Agent: "@b1", Source: SpendCumulative, Series: "cost", Start: t0, At: at(3 * time.Second), Cost: usd(1.7)}
	assert.Equal(t, e.doSpend(3*time.Second, next), r.doSpend(3*time.Second, next), "the 80% line, from the series' last point")
	assert.Equal(t, usd(1.7), r.View().Components[0].Spent, "the cumulative sum's growth, not the sum again")
}

// A request placed by its own time: reported after its agent moved on, it
// counts where it was made; from before the tenures kept, to the agent
// alone.
func TestLateRequestIsPlacedByItsTime(t *testing.T) {
	e := newEngine(t, func(c *Config) {
		c.Roles.Operators = []string{"@op"}
		c.Components = []Component{{Name: "db"}, {Name: "api"}}
	})
	e.doStart(t0)
	e.doReceive(msg("@b1", "CLAIM db", time.Second))
	e.doReceive(msg("@b1", "ABORT db context_exhaustion_handoff", 10*time.Second))
	e.doReceive(msg("@b1", "CLAIM api", 20*time.Second))
	e.doSpend(30*time.Second, request("@b1", 5*time.Second, usd(1)))
	e.doSpend(30*time.Second, request("@b1", 15*time.Second, usd(2)))
	e.doSpend(30*time.Second, request("@b1", 25*time.Second, usd(4)))
	e.doSpend(30*time.Second, request("@b1", 30*time.Second+maxSpendSkew, usd(8))) // ahead of the clock: now
	v := e.View()
	assert.Equal(t, usd(1), v.Components[0].Spent)
	assert.Equal(t, usd(12), v.Components[1].Spent)
	assert.Equal(t, usd(15), v.Agents[0].Spent)
	assert.Equal(t, usd(15), v.Spent)
}

// Bad spend is not counted, and counted as ignored.
func TestBadSpendIsIgnored(t *testing.T) {
	e := newEngine(t, nil)
	e.doStart(t0)
	for _, s := range []Spend{
		{Agent: "b1", Source: SpendRequest, Cost: usd(1)},
		{Agent: "@b1", Source: 0, Cost: usd(1)},
		{Agent: "@b1", Source: SpendDelta, Cost: Cost{USD: -1}},
		{Agent: "@b1", Source: SpendCumulative, Series: strings.Repeat("s", MaxSeries+1), Cost: usd(1)},
	} {
		assert.Empty(t, e.doSpend(time.Second, s))
	}
	v := e.View()
	assert.True(t, v.Spent.IsZero())
	assert.EqualValues(t, 4, v.Ignored)
}

// Past the agents the engine keeps spend for (maxSpendingAgent), an
// agent has no entry, and a budget of 0 is over for it all the same: a
// RESOLVE of what it owns, held for another reason, finds it still over,
// with nothing spent, and says so (it read the missing entry and stopped).
func TestAZeroBudgetForAnAgentPastTheCap(t *testing.T) {
	e := newEngine(t, func(c *Config) {
		c.Rules.CIGating = true
		c.Roles = Roles{CI: []string{"@host"}, Operators: []string{"@op"}}
	})
	e.doStart(t0)
	for i := range maxSpendingAgent {
		e.doSpend(time.Second, request(fmt.Sprintf("@s%d", i), time.Second, usd(0.01)))
	}
	e.doReceive(msg("@b1", "CLAIM db", 2*time.Second))
	require.Nil(t, e.agentSpend("@b1", false), "past the cap")
	e.doReceive(msg("@op", "BUDGET @b1 0", 3*time.Second))
	e.doReceive(msg("@b1", "READY db b1/db", 4*time.Second))
	e.doReceive(msg("@host", "CI db FAIL host-fault: ./check.sh is not executable on main", 5*time.Second))
	require.Equal(t, "held", e.View().Components[0].State)
	var out []string
	require.NotPanics(t, func() { out = e.doReceive(msg("@op", "RESOLVE db", 6*time.Second)) })
	assert.Contains(t, strings.Join(out, "\n"), "ESCALATE db budget RESOLVE, but still over budget")
}
