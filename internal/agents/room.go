package agents

import (
	"fmt"
	"strings"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/protocol"
)

// Ousted reads foreman's lines for the agents it took work from: TIMEOUT c
// @id, and OK RELEASE c from @id (an operator's RELEASE). Each maps the
// sender id to why.
func Ousted(said []coordinator.Reply) map[string]string {
	out := map[string]string{}
	for _, r := range said {
		f := strings.Fields(r.Text)
		switch {
		case r.Verb == protocol.ReplyTimeout && len(f) >= 3:
			out[f[2]] = fmt.Sprintf("foreman timed it out on %s (TIMEOUT %s)", f[1], f[1])
		case r.Verb == protocol.ReplyOK && len(f) >= 5 && f[1] == "RELEASE" && f[3] == "from":
			out[f[4]] = fmt.Sprintf("an operator released %s from it (RELEASE %s)", f[2], f[2])
		}
	}
	return out
}

// Ends reports whether foreman said COMPLETE.
func Ends(said []coordinator.Reply) bool {
	for _, r := range said {
		if r.Verb == protocol.ReplyComplete {
			return true
		}
	}
	return false
}

// Touches reports whether said may change what a budget holds: an
// ESCALATE budget, or foreman's answer to BUDGET.
func Touches(said []coordinator.Reply) bool {
	for _, r := range said {
		if r.Code == protocol.BudgetSpent || strings.Contains(r.Text, "BUDGET") {
			return true
		}
	}
	return false
}

// HeldByBudget is which agents a budget holds in v, by sender id, and
// why: one whose own budget is spent (its claims are refused), or whose
// component is held by its budget (ESCALATE c budget: "c's builder is to
// stop").
func HeldByBudget(v coordinator.View) map[string]string {
	out := map[string]string{}
	for _, a := range v.Agents {
		if a.Budget != nil && over(a.Spent, *a.Budget) {
			out[a.ID] = fmt.Sprintf("%s spent %s of its budget %s; BUDGET %s lifts it", a.ID, spent(a.Spent), a.Budget, a.ID)
		}
	}
	for _, c := range v.Components {
		if c.Owner != "" && c.State == "held" && c.Escalation == string(protocol.BudgetSpent) {
			if _, ok := out[c.Owner]; !ok {
				out[c.Owner] = fmt.Sprintf("%s is held by its budget (ESCALATE %s budget); BUDGET %s lifts it", c.Name, c.Name, c.Name)
			}
		}
	}
	return out
}

// over is the engine's own test of a budget spent (coordinator/budget.go).
func over(s coordinator.Cost, l coordinator.Limit) bool {
	return l.HasUSD && s.USD >= l.USD || l.HasTokens && s.Tokens >= l.Tokens
}

func spent(s coordinator.Cost) string {
	return fmt.Sprintf("%s and %dt", protocol.FormatUSD(s.USD), s.Tokens)
}
