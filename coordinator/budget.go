package coordinator

import (
	"fmt"
	"strings"

	"github.com/agentforeman/foreman/protocol"
)

// Budgets (contract sections 2, 4 and 5; issue 47): a component, an agent
// and the build may each have a budget in USD, in tokens, or both. At 80%
// of one the room hears it once; at 100% a component is held (ESCALATE c
// budget), an agent has every component it owns held and its claims
// refused, a build has every claim refused. An operator's BUDGET line sets,
// raises or lifts one; a component held by budget goes on when no budget
// it counts to is spent any more. Without a budget nothing is enforced and
// everything is still counted.

// Limit is a budget: in USD (micro-dollars), in tokens, or both.
type Limit struct {
	USD       int64 `json:"usd,omitempty"`
	Tokens    int64 `json:"tokens,omitempty"`
	HasUSD    bool  `json:"has_usd,omitempty"`
	HasTokens bool  `json:"has_tokens,omitempty"`
}

// String writes the budget as BUDGET lines set it: $5.00, 200000t, or
// both joined by a comma.
func (l Limit) String() string {
	var parts []string
	if l.HasUSD {
		parts = append(parts, protocol.FormatUSD(l.USD))
	}
	if l.HasTokens {
		parts = append(parts, protocol.FormatTokens(l.Tokens))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

// ParseLimit reads a budget as the config writes it: "" (none), USD (5,
// 2.50), tokens (200000t), or both joined by a comma (5,200000t).
func ParseLimit(s string) (Limit, error) {
	var l Limit
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		a, err := protocol.ParseAmount(part)
		if err != nil || a.Raise || a.None {
			return Limit{}, fmt.Errorf("%q is not a budget: USD (5, 2.50), tokens (200000t), or both (5,200000t)", part)
		}
		if a.Tokens {
			l.Tokens, l.HasTokens = a.Value, true
		} else {
			l.USD, l.HasUSD = a.Value, true
		}
	}
	return l, nil
}

// IsSet reports whether the limit limits anything.
func (l Limit) IsSet() bool { return l.HasUSD || l.HasTokens }

// Budgets are the budgets configured. An operator's BUDGET lines override
// them, subject by subject, for the rest of the build.
type Budgets struct {
	Component  Limit            // every component's, unless Components names it
	Components map[string]Limit // by component name
	Agent      Limit            // every agent's, unless Agents names it
	Agents     map[string]Limit // by sender id
	Build      Limit
}

// Budget flags, per subject.
const (
	budgetWarned uint8 = 1 << iota // the 80% line was said
	budgetOver                     // the 100% escalation was said
)

// maxBudgetLines bounds the subjects BUDGET lines may name.
const maxBudgetLines = 10000

// limit is the budget of subject (a component's name, an agent's id, or
// "build"): an operator's, else the configured one.
func (e *Engine) limit(subject string) Limit {
	if l, ok := e.budgetSet[subject]; ok {
		return l
	}
	b := e.cfg.Budgets
	switch {
	case subject == protocol.BuildSubject:
		return b.Build
	case strings.HasPrefix(subject, "@"):
		if l, ok := b.Agents[subject]; ok {
			return l
		}
		return b.Agent
	}
	if l, ok := b.Components[subject]; ok {
		return l
	}
	return b.Component
}

// over reports whether spent has reached l in any of its units.
func over(spent Cost, l Limit) bool {
	return l.HasUSD && spent.USD >= l.USD || l.HasTokens && spent.Tokens >= l.Tokens
}

// nearly reports whether spent has reached 80% of l in any of its units.
func nearly(spent Cost, l Limit) bool {
	return l.HasUSD && spent.USD*5 >= l.USD*4 || l.HasTokens && spent.Tokens*5 >= l.Tokens*4
}

// figures says spend against a budget: "$4.02 of $5.00 (80%)", and the
// tokens likewise.
func figures(spent Cost, l Limit) string {
	var parts []string
	if l.HasUSD {
		parts = append(parts, fmt.Sprintf("%s of %s (%d%%)", protocol.FormatUSD(spent.USD), protocol.FormatUSD(l.USD), pct(spent.USD, l.USD)))
	} else {
		parts = append(parts, protocol.FormatUSD(spent.USD))
	}
	if l.HasTokens {
		parts = append(parts, fmt.Sprintf("%d of %d tokens (%d%%)", spent.Tokens, l.Tokens, pct(spent.Tokens, l.Tokens)))
	} else {
		parts = append(parts, fmt.Sprintf("%d tokens", spent.Tokens))
	}
	return strings.Join(parts, " and ")
}

// pct is s as a whole percentage of of, for any s and of up to maxSpend:
// s*100 would overflow past about 9e16.
func pct(s, of int64) int64 {
	if of <= 0 {
		return 100
	}
	return s/of*100 + s%of*100/of
}

// raise suggests an amount for a BUDGET line that lets work go on: the
// budget again, in the unit that is spent.
func raise(spent Cost, l Limit) string {
	if l.HasUSD && (spent.USD >= l.USD || !l.HasTokens || spent.Tokens < l.Tokens) {
		return "+" + protocol.FormatUSD(max(l.USD, protocol.Micro))[1:]
	}
	return "+" + protocol.FormatTokens(max(l.Tokens, 1000))
}

func (e *Engine) flag(subject string, f uint8) bool { return e.budgetFlags[subject]&f != 0 }

func (e *Engine) setFlag(subject string, f uint8) {
	if e.budgetFlags == nil {
		e.budgetFlags = make(map[string]uint8)
	}
	e.budgetFlags[subject] |= f
}

// componentOver reports whether c has spent its own budget.
func (e *Engine) componentOver(c *component) bool { return over(c.spent, e.limit(c.name)) }

// agentOver reports whether agent has spent its budget.
func (e *Engine) agentOver(agent string) bool {
	var spent Cost
	if a := e.agentSpend(agent, false); a != nil {
		spent = a.spent
	}
	return over(spent, e.limit(agent))
}

func (e *Engine) buildOver() bool { return over(e.spend.build, e.limit(protocol.BuildSubject)) }

// budgetHolds reports whether c must stay held by budget: its own budget
// or its owner's is spent.
func (e *Engine) budgetHolds(c *component) bool {
	return e.componentOver(c) || c.owner != "" && e.agentOver(c.owner)
}

// checkComponentBudget holds c once its budget is spent, and warns once at
// 80%. A merged component is counted, never held.
func (e *Engine) checkComponentBudget(c *component) {
	l := e.limit(c.name)
	switch {
	case !l.IsSet() || c.state == Merged:
	case over(c.spent, l):
		e.setFlag(c.name, budgetOver|budgetWarned)
		if c.state != Held {
			e.holdForBudget(c, fmt.Sprintf("%s spent %s", c.name, figures(c.spent, l)), c.name, c.spent, l)
		}
	case nearly(c.spent, l) && !e.flag(c.name, budgetWarned):
		e.setFlag(c.name, budgetWarned)
		e.say(protocol.Notice(c.owner, c.name, fmt.Sprintf("80%% of its budget spent: %s; at 100%% it is held (ESCALATE %s budget)", figures(c.spent, l), c.name)))
	}
}

// holdForBudget holds c, saying the figures and the remedy. Its builder
// hears it is to stop: the ESCALATE names it.
func (e *Engine) holdForBudget(c *component, what, subject string, spent Cost, l Limit) {
	if c.owner != "" {
		what += "; held, " + c.owner + " is to stop"
	} else {
		what += "; held"
	}
	e.holdFor(c, protocol.BudgetSpent, what, fmt.Sprintf("BUDGET %s %s (or none) to go on", subject, raise(spent, l)))
}

// checkAgentBudget holds every component agent owns once its budget is
// spent (its claims are refused meanwhile), and warns once at 80%.
func (e *Engine) checkAgentBudget(agent string) {
	l := e.limit(agent)
	a := e.agentSpend(agent, false)
	if !l.IsSet() || a == nil {
		return
	}
	switch {
	case over(a.spent, l):
		what := fmt.Sprintf("%s spent %s; its claims are refused", agent, figures(a.spent, l))
		held := false
		for _, c := range e.comps {
			if c.owner != agent || c.state == Merged {
				continue
			}
			if c.state != Held {
				e.holdForBudget(c, what, agent, a.spent, l)
			}
			held = held || c.hold == protocol.BudgetSpent
		}
		if !held && !e.flag(agent, budgetOver) {
			e.say(protocol.Escalate(protocol.BuildSubject, protocol.BudgetSpent, what,
				fmt.Sprintf("BUDGET %s %s (or none) to let it claim", agent, raise(a.spent, l))))
		}
		e.setFlag(agent, budgetOver|budgetWarned)
	case nearly(a.spent, l) && !e.flag(agent, budgetWarned):
		e.setFlag(agent, budgetWarned)
		e.say(protocol.Notice("", agent, fmt.Sprintf("80%% of your budget spent: %s; at 100%% what you own is held and your claims refused", figures(a.spent, l))))
	}
}

// checkBuildBudget refuses every claim once the build's budget is spent,
// saying so once, and warns once at 80%. Work under way goes on.
func (e *Engine) checkBuildBudget() {
	const b = protocol.BuildSubject
	l := e.limit(b)
	switch {
	case !l.IsSet():
	case over(e.spend.build, l):
		if !e.flag(b, budgetOver) {
			e.setFlag(b, budgetOver|budgetWarned)
			e.say(protocol.Escalate(b, protocol.BudgetSpent, fmt.Sprintf("the build spent %s; every claim is refused, work under way goes on", figures(e.spend.build, l)),
				fmt.Sprintf("BUDGET build %s (or none) to go on", raise(e.spend.build, l))))
		}
	case nearly(e.spend.build, l) && !e.flag(b, budgetWarned):
		e.setFlag(b, budgetWarned)
		e.say(protocol.Notice("", b, fmt.Sprintf("80%% of the build's budget spent: %s; at 100%% every claim is refused", figures(e.spend.build, l))))
	}
}

// budgetCommand: BUDGET <c|@a|build> <amount> sets, raises or lifts a
// budget. The subject's warnings start again; a component held by budget
// goes on once nothing it counts to is over.
func (e *Engine) budgetCommand(agent string, cmd protocol.Command) {
	subject := cmd.Agent
	if subject == "" {
		subject = cmd.Component
	}
	var c *component
	if subject != protocol.BuildSubject && cmd.Agent == "" {
		var ok bool
		if c, ok = e.lookup(agent, cmd.Component); !ok {
			return
		}
	}
	if _, ok := e.budgetSet[subject]; !ok && len(e.budgetSet) >= maxBudgetLines {
		e.say(protocol.Error(agent, fmt.Sprintf("BUDGET: %d budgets are set already; lift one (BUDGET <subject> none) or set it in the config", maxBudgetLines)))
		return
	}
	l := e.limit(subject)
	a := cmd.Amount
	switch {
	case a.None:
		l = Limit{}
	case a.Tokens:
		if !a.Raise || !l.HasTokens {
			l.Tokens = 0
		}
		l.Tokens, l.HasTokens = min(l.Tokens+a.Value, maxSpend), true
	default:
		if !a.Raise || !l.HasUSD {
			l.USD = 0
		}
		l.USD, l.HasUSD = min(l.USD+a.Value, maxSpend), true
	}
	e.ok(cmd)
	if e.budgetSet == nil {
		e.budgetSet = make(map[string]Limit)
	}
	e.budgetSet[subject] = l
	delete(e.budgetFlags, subject)
	switch {
	case c != nil:
		e.checkComponentBudget(c)
	case cmd.Agent != "":
		e.checkAgentBudget(cmd.Agent)
	default:
		e.checkBuildBudget()
	}
	e.resumeBudgetHolds(agent)
}

// resumeBudgetHolds lets each component held by budget go on when neither
// its own budget nor its owner's is spent: back to its owner with a fresh
// deadline (ACK), or pending.
func (e *Engine) resumeBudgetHolds(by string) {
	for _, c := range e.comps {
		if c.state != Held || c.hold != protocol.BudgetSpent || e.budgetHolds(c) {
			continue
		}
		c.hold = ""
		if c.owner == "" {
			e.setState(c, Pending)
			if e.claimable(c) {
				e.announceTasks()
			}
			continue
		}
		e.setState(c, Building)
		e.checkin(c)
		e.say(protocol.Ack(c.name, c.owner, "budget set by "+by+": go on"))
	}
}

// budgetSubject is whose budget holds c: its own, else its owner's.
func (e *Engine) budgetSubject(c *component) string {
	if e.componentOver(c) || c.owner == "" {
		return c.name
	}
	return c.owner
}

// budgetSpent is the spend that holds c: its own or its owner's.
func (e *Engine) budgetSpent(c *component) Cost {
	if s := e.budgetSubject(c); s != c.name {
		if a := e.agentSpend(s, false); a != nil {
			return a.spent
		}
		return Cost{} // a budget of 0 holds an agent that has spent nothing
	}
	return c.spent
}

// budgetFigures says the spend that holds c.
func (e *Engine) budgetFigures(c *component) string {
	s := e.budgetSubject(c)
	return s + " spent " + figures(e.budgetSpent(c), e.limit(s))
}
