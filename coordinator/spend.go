package coordinator

import (
	"slices"
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// Spend attribution (issue 47): what an agent spends counts to the agent,
// to the build, and to the component the agent held when it was spent.
// An agent holds a component from the ACK (after a CLAIM, ASSIGN or
// RESOLVE) that gives it until the TIMEOUT, RETRY, ABORT, RELEASE,
// reassignment or MERGED that takes it away; spend while it holds nothing
// counts to the agent alone.
//
// The rules of placement, which docs/BUDGETS.md states for users:
//   - A per-request event (Claude Code's api_request) is placed by its own
//     timestamp against what the agent held then: exact, however late it
//     arrives, as long as that tenure is among the agent's last
//     maxTenures ones; older, or before the build, it counts to the agent
//     alone. A timestamp ahead of the engine's clock is read as now.
//   - A metric point (a delta, or a cumulative sum the engine turns into
//     one) is placed at the point's own time, the end of the interval it
//     covers: spend made before a change of component and exported after
//     it counts to the new component. That is at most one export interval
//     of spend.
//   - An agent's own times are trusted from maxSpendAge before foreman's
//     receipt to maxSpendSkew after it: a time ahead of the receipt is
//     placed as at the receipt (nothing is spent in the future, but a
//     clock may be a little fast); outside that span it is refused and
//     counted as ignored (no export is retried for a day, and a time far
//     ahead would keep its series' next points from counting). A point's
//     start after its own time is refused.
//   - A point adds at most MaxPoint (per unit): one request or one
//     export interval cannot cost more than that; a point that would is
//     refused and counted as ignored, so no one point fills a budget.
//   - Retries count once. A cumulative point counts what its series grew
//     by since its last point with the same start; a lower sum with that
//     start is an old point retried out of order and counts nothing. A
//     later start is a restarted counter (it counts whole), an earlier one
//     an old counter's point retried late (nothing). A delta point of a
//     named series counts only if it ends after the last one counted of
//     that series. A per-request event with an identity (ID) counts once
//     among the agent's last maxRequestIDs events.
//   - Per-request events are authoritative: once an agent has sent one,
//     its metric points no longer count (they would count the same
//     requests twice). Until then its metrics count.
//   - An agent holding several components (max_claims_per_agent above 1)
//     spends on the one it took last.

// Cost is spend, or a budget's size: USD in whole micro-dollars (so sums
// are exact and a replay gives the same figures) and tokens.
type Cost struct {
	USD    int64 `json:"usd,omitempty"`
	Tokens int64 `json:"tokens,omitempty"`
}

// IsZero reports whether nothing was spent.
func (c Cost) IsZero() bool { return c == Cost{} }

// plus adds o, saturating far above any real sum.
func (c Cost) plus(o Cost) Cost {
	return Cost{USD: satAdd(c.USD, o.USD), Tokens: satAdd(c.Tokens, o.Tokens)}
}

func satAdd(a, b int64) int64 {
	if s := a + b; s >= a && s <= maxSpend {
		return s
	}
	return maxSpend
}

// maxSpend caps every sum: a thousand times the largest amount a BUDGET
// line can say, so a budget compares with it and nothing overflows.
const maxSpend = 1000 * protocol.MaxAmount

// SpendSource says what kind of report a Spend is.
type SpendSource uint8

// The sources of spend. Their numbers are stored in journals: append only.
const (
	_               SpendSource = iota
	SpendRequest                // one request's cost: placed at its own time
	SpendDelta                  // a metric's delta point: placed at the point's time
	SpendCumulative             // a metric's cumulative point: the engine takes the delta since the series' last one
	numSpendSources
)

// Valid reports whether s is a known source.
func (s SpendSource) Valid() bool { return s > 0 && s < numSpendSources }

// Spend is what an agent's exporter reported (KindSpend). The shell has
// checked who sent it; the engine decides what it counts to.
type Spend struct {
	Agent  string
	Source SpendSource
	At     time.Time // the request's time, or the metric point's (the end of its interval)
	Series string    // SpendCumulative, SpendDelta: names the series (metric and attributes); at most MaxSeries bytes
	Start  time.Time // SpendCumulative: the series' start, another is a restarted counter; SpendDelta: the interval's start
	ID     string    // SpendRequest: the event's identity, so a retried export counts once; at most MaxSeries bytes
	Cost   Cost
}

// Bounds of what the engine keeps per agent.
const (
	MaxSeries        = 256 // bytes of a series' name
	maxTenures       = 64  // past tenures kept per agent, for placing late requests
	maxSeriesAgent   = 256 // cumulative series per agent; more are not counted
	maxSpendingAgent = 10000
	maxRequestIDs    = 256             // request identities kept per agent, for retried exports
	maxSpendAge      = 24 * time.Hour  // how long before its receipt a point may be timed
	maxSpendSkew     = 5 * time.Minute // how far after it
)

// MaxPoint is the most one point may add: a request, or one export
// interval of an agent's spending. Far above any real one (a long request
// to the largest model costs a few dollars), it keeps one report from
// filling a budget or the sums.
var MaxPoint = Cost{USD: 1000 * protocol.Micro, Tokens: 100_000_000}

// agentSpend is what the engine knows of one agent's spending.
type agentSpend struct {
	spent    Cost
	tenures  []tenure // oldest first; at most maxTenures closed ones
	series   map[string]seriesMark
	requests bool     // it sent a per-request event: its metrics no longer count
	reqIDs   []string // identities of its last requests, oldest first; at most maxRequestIDs
}

// tenure is a span in which an agent held a component.
type tenure struct {
	comp     string
	from, to time.Time // to is zero while it still holds it
}

// seriesMark is a series' last point counted: a cumulative one's start
// and sum, a delta one's end.
type seriesMark struct {
	start time.Time
	sum   Cost
	at    time.Time
}

// ledger is the spend of the build: per agent here, per component on the
// component.
type ledger struct {
	build  Cost
	agents map[string]*agentSpend
	// ignored counts points not counted: metrics of an agent that sends
	// per-request events, series beyond the bound, malformed spend.
	ignored int64
}

func (e *Engine) agentSpend(agent string, create bool) *agentSpend {
	a := e.spend.agents[agent]
	if a == nil && create && len(e.spend.agents) < maxSpendingAgent {
		if e.spend.agents == nil {
			e.spend.agents = make(map[string]*agentSpend)
		}
		a = &agentSpend{}
		e.spend.agents[agent] = a
	}
	return a
}

// took records that agent holds c from now.
func (e *Engine) took(agent string, c *component) {
	a := e.agentSpend(agent, true)
	if a == nil {
		return
	}
	a.tenures = append(a.tenures, tenure{comp: c.name, from: e.now})
	closed := 0
	for _, h := range a.tenures {
		if !h.to.IsZero() {
			closed++
		}
	}
	for i := 0; closed > maxTenures && i < len(a.tenures); {
		if a.tenures[i].to.IsZero() {
			i++
			continue
		}
		a.tenures = slices.Delete(a.tenures, i, i+1)
		closed--
	}
}

// left records that agent no longer holds c, from now.
func (e *Engine) left(agent string, c *component) {
	a := e.agentSpend(agent, false)
	if a == nil {
		return
	}
	for i := len(a.tenures) - 1; i >= 0; i-- {
		if h := &a.tenures[i]; h.comp == c.name && h.to.IsZero() {
			h.to = e.now
			return
		}
	}
}

// heldAt is the component agent held at t: of those it held then, the one
// it took last; nil when none.
func (e *Engine) heldAt(a *agentSpend, t time.Time) *component {
	if t.After(e.now) {
		t = e.now
	}
	if t.Before(e.startAt) {
		return nil
	}
	best := -1
	for i, h := range a.tenures {
		if h.from.After(t) || !h.to.IsZero() && !t.Before(h.to) {
			continue
		}
		if best < 0 || !h.from.Before(a.tenures[best].from) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	if i, ok := e.graph.Index(a.tenures[best].comp); ok {
		return e.comps[i]
	}
	return nil
}

// spent handles a report of spend: it is counted, placed, and held against
// the budgets it counts to (budget.go).
func (e *Engine) spent(at time.Time, s Spend) {
	e.fireDue(at)
	if !protocol.ValidAgent(s.Agent) || !s.Source.Valid() || s.Cost.USD < 0 || s.Cost.Tokens < 0 ||
		s.Cost.USD > maxSpend || s.Cost.Tokens > maxSpend || len(s.Series) > MaxSeries || len(s.ID) > MaxSeries ||
		s.At.Before(at.Add(-maxSpendAge)) || s.At.After(at.Add(maxSpendSkew)) || s.Series != "" && s.Start.After(s.At) {
		e.spend.ignored++
		return
	}
	a := e.agentSpend(s.Agent, true)
	if a == nil {
		e.spend.ignored++
		return
	}
	cost := s.Cost
	switch s.Source {
	case SpendRequest:
		if !a.firstRequest(s.ID) {
			e.spend.ignored++
			return
		}
		a.requests = true
	case SpendDelta:
		if a.requests || !a.delta(s) {
			e.spend.ignored++
			return
		}
	case SpendCumulative:
		if a.requests {
			e.spend.ignored++
			return
		}
		var ok bool
		if cost, ok = a.cumulative(s); !ok {
			e.spend.ignored++
			return
		}
	}
	if cost.USD > MaxPoint.USD || cost.Tokens > MaxPoint.Tokens {
		e.spend.ignored++
		return
	}
	if cost.IsZero() {
		return
	}
	c := e.heldAt(a, s.At)
	a.spent = a.spent.plus(cost)
	e.spend.build = e.spend.build.plus(cost)
	if c != nil {
		c.spent = c.spent.plus(cost)
		e.checkComponentBudget(c)
	}
	e.checkAgentBudget(s.Agent)
	e.checkBuildBudget()
	e.flushTasks()
}

// firstRequest reports whether a request with identity id is new, and
// keeps it. A request without one cannot be told from another: it counts.
func (a *agentSpend) firstRequest(id string) bool {
	if id == "" {
		return true
	}
	if slices.Contains(a.reqIDs, id) {
		return false
	}
	if len(a.reqIDs) >= maxRequestIDs {
		a.reqIDs = slices.Delete(a.reqIDs, 0, 1)
	}
	a.reqIDs = append(a.reqIDs, id)
	return true
}

// delta reports whether a delta point counts: one of a named series must
// end after the last one counted of it (an earlier end is a retry). A
// point without a series (from before series were named) cannot be told
// from another: it counts.
func (a *agentSpend) delta(s Spend) bool {
	if s.Series == "" {
		return true
	}
	last, seen := a.series[s.Series]
	if !seen && len(a.series) >= maxSeriesAgent {
		return false
	}
	if seen && !s.At.After(last.at) {
		return false
	}
	if a.series == nil {
		a.series = make(map[string]seriesMark)
	}
	a.series[s.Series] = seriesMark{start: s.Start, at: s.At}
	return true
}

// cumulative turns a cumulative point into the spend since the series'
// last point. A series seen for the first time, or with a later start (an
// agent restarted, its counter from zero), counts whole. With the same
// start, a sum lower than the last is an older point retried out of order:
// it counts nothing, and the last stays. An earlier start is an old
// counter's point retried after the restart: nothing.
func (a *agentSpend) cumulative(s Spend) (Cost, bool) {
	last, seen := a.series[s.Series]
	if !seen && len(a.series) >= maxSeriesAgent {
		return Cost{}, false
	}
	if a.series == nil {
		a.series = make(map[string]seriesMark)
	}
	switch {
	case !seen || s.Start.After(last.start):
		a.series[s.Series] = seriesMark{start: s.Start, sum: s.Cost, at: s.At}
		return s.Cost, true
	case s.Start.Before(last.start) || s.Cost.USD < last.sum.USD || s.Cost.Tokens < last.sum.Tokens:
		return Cost{}, true
	}
	a.series[s.Series] = seriesMark{start: s.Start, sum: s.Cost, at: s.At}
	return Cost{USD: s.Cost.USD - last.sum.USD, Tokens: s.Cost.Tokens - last.sum.Tokens}, true
}
