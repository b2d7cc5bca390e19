package coordinator

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// SnapshotVersion changes when the snapshot format does.
const SnapshotVersion = 2

// Snapshot is the engine's whole state, in a form that encodes as JSON.
// Restoring it and going on gives the same replies as never stopping. It
// holds the graph as edited (ADD, DEPEND, BLOCKED), not as configured.
// Derived state (counts of unmerged dependencies and owned components, who
// waits on whom, the timer heap) is rebuilt on restore.
type Snapshot struct {
	Version      int                 `json:"version"`
	Build        string              `json:"build"`
	Started      bool                `json:"started"`
	Instance     string              `json:"instance,omitempty"`
	StartAt      time.Time           `json:"start_at"`
	Now          time.Time           `json:"now"`
	Paused       bool                `json:"paused,omitempty"`
	Withheld     bool                `json:"withheld,omitempty"`    // a TASKS due while paused, for RESUME
	ClaimAgain   []string            `json:"claim_again,omitempty"` // for the first TASKS, not yet said
	Offline      bool                `json:"offline,omitempty"`
	FrozenAt     time.Time           `json:"frozen_at,omitzero"`
	Halted       []string            `json:"halted,omitempty"`
	Complete     bool                `json:"complete,omitempty"`
	OvertimeSaid bool                `json:"overtime_said,omitempty"`
	BoardAt      time.Time           `json:"board_at,omitzero"`
	Roles        *Roles              `json:"roles,omitempty"`   // as last reloaded; nil: as configured
	Senders      map[string]string   `json:"senders,omitempty"` // sender ids heard, with their display names
	Overtime     *time.Time          `json:"overtime,omitempty"`
	Seen         []string            `json:"seen,omitempty"`
	Declared     []Component         `json:"declared,omitempty"` // the components as last configured, for Reload
	Components   []ComponentSnapshot `json:"components"`
	Spend        *SpendSnapshot      `json:"spend,omitempty"` // what was spent, and the budgets BUDGET set
}

// SpendSnapshot is the ledger (spend.go) and the budgets' state
// (budget.go). A snapshot without it (one written before budgets) has
// nothing spent.
type SpendSnapshot struct {
	Build   Cost                          `json:"build,omitzero"`
	Agents  map[string]AgentSpendSnapshot `json:"agents,omitempty"`
	Ignored int64                         `json:"ignored,omitempty"`
	Budgets map[string]Limit              `json:"budgets,omitempty"` // set by BUDGET, by subject
	Flags   map[string]uint8              `json:"flags,omitempty"`   // what was said of each budget
}

// AgentSpendSnapshot is one agent's spending.
type AgentSpendSnapshot struct {
	Spent    Cost                      `json:"spent,omitzero"`
	Tenures  []TenureSnapshot          `json:"tenures,omitempty"`
	Series   map[string]SeriesSnapshot `json:"series,omitempty"`
	Requests bool                      `json:"requests,omitempty"`
	ReqIDs   []string                  `json:"req_ids,omitempty"` // its last requests' identities, oldest first
}

// TenureSnapshot is a span in which an agent held a component.
type TenureSnapshot struct {
	Comp string    `json:"comp"`
	From time.Time `json:"from"`
	To   time.Time `json:"to,omitzero"`
}

// SeriesSnapshot is a series' last point counted.
type SeriesSnapshot struct {
	Start time.Time `json:"start,omitzero"`
	Sum   Cost      `json:"sum,omitzero"`
	At    time.Time `json:"at,omitzero"`
}

func (e *Engine) snapshotSpend() *SpendSnapshot {
	if e.spend.build.IsZero() && len(e.spend.agents) == 0 && e.spend.ignored == 0 && len(e.budgetSet) == 0 && len(e.budgetFlags) == 0 {
		return nil
	}
	s := &SpendSnapshot{Build: e.spend.build, Ignored: e.spend.ignored, Budgets: maps.Clone(e.budgetSet), Flags: maps.Clone(e.budgetFlags)}
	if len(e.spend.agents) > 0 {
		s.Agents = make(map[string]AgentSpendSnapshot, len(e.spend.agents))
	}
	for id, a := range e.spend.agents {
		as := AgentSpendSnapshot{Spent: a.spent, Requests: a.requests, ReqIDs: slices.Clone(a.reqIDs)}
		for _, t := range a.tenures {
			as.Tenures = append(as.Tenures, TenureSnapshot{Comp: t.comp, From: t.from, To: t.to})
		}
		if len(a.series) > 0 {
			as.Series = make(map[string]SeriesSnapshot, len(a.series))
			for k, m := range a.series {
				as.Series[k] = SeriesSnapshot{Start: m.start, Sum: m.sum, At: m.at}
			}
		}
		s.Agents[id] = as
	}
	return s
}

func (e *Engine) restoreSpend(s *SpendSnapshot) {
	if s == nil {
		return
	}
	e.spend.build, e.spend.ignored = s.Build, s.Ignored
	if len(s.Budgets) > 0 {
		e.budgetSet = maps.Clone(s.Budgets)
	}
	if len(s.Flags) > 0 {
		e.budgetFlags = maps.Clone(s.Flags)
	}
	for id, as := range s.Agents {
		a := e.agentSpend(id, true)
		if a == nil {
			break
		}
		a.spent, a.requests = as.Spent, as.Requests
		if n := len(as.ReqIDs); n > 0 {
			a.reqIDs = slices.Clone(as.ReqIDs[max(0, n-maxRequestIDs):])
		}
		for _, t := range as.Tenures {
			a.tenures = append(a.tenures, tenure{comp: t.Comp, from: t.From, to: t.To})
		}
		for k, m := range as.Series {
			if a.series == nil {
				a.series = make(map[string]seriesMark, len(as.Series))
			}
			a.series[k] = seriesMark{start: m.Start, sum: m.Sum, at: m.At}
		}
	}
}

// ComponentSnapshot is one component's state.
type ComponentSnapshot struct {
	Name        string         `json:"name"`
	Deps        []string       `json:"deps,omitempty"`
	State       string         `json:"state"`
	Owner       string         `json:"owner,omitempty"`
	Since       time.Time      `json:"since,omitzero"`
	Progress    int            `json:"progress,omitempty"`
	HasProgress bool           `json:"has_progress,omitempty"`
	ProgressAt  time.Time      `json:"progress_at,omitzero"`
	PR          string         `json:"pr,omitempty"`
	Findings    string         `json:"findings,omitempty"`
	Timer       string         `json:"timer,omitempty"`
	TimerAt     time.Time      `json:"timer_at,omitzero"`
	Fails       []FailSnapshot `json:"fails,omitempty"`
	CIFails     int            `json:"ci_fails,omitempty"`
	CIConflict  int            `json:"ci_conflict,omitempty"`
	Barred      []string       `json:"barred,omitempty"`
	TimedOut    []string       `json:"timed_out,omitempty"`
	Disputes    map[string]int `json:"disputes,omitempty"`
	Pushback    map[string]int `json:"pushback,omitempty"`
	Waits       []WaitSnapshot `json:"waits,omitempty"`
	Waiters     []string       `json:"waiters,omitempty"` // in the order they began waiting
	Hold        string         `json:"hold,omitempty"`
	Overdue     bool           `json:"overdue,omitempty"`
	Approved    bool           `json:"approved,omitempty"`
	ApprovedBy  string         `json:"approved_by,omitempty"`
	Left        *TrailSnapshot `json:"left,omitempty"`
	MergedFrom  string         `json:"merged_from,omitempty"`
	Branch      string         `json:"branch,omitempty"`   // the last ref named for it (section 10)
	Overlaps    []string       `json:"overlaps,omitempty"` // as recorded, in order
	Spent       Cost           `json:"spent,omitzero"`     // what its builders spent on it
}

// FailSnapshot is one builder's failed audits.
type FailSnapshot struct {
	Agent string `json:"agent"`
	N     int    `json:"n"`
}

// WaitSnapshot is one thing a blocked component waits for.
type WaitSnapshot struct {
	On    string `json:"on"`
	Files bool   `json:"files,omitempty"`
}

// TrailSnapshot is what the last builder left.
type TrailSnapshot struct {
	Agent       string `json:"agent"`
	Why         string `json:"why"`
	Reason      string `json:"reason,omitempty"`
	Progress    int    `json:"progress,omitempty"`
	HasProgress bool   `json:"has_progress,omitempty"`
	PR          string `json:"pr,omitempty"`
	Findings    string `json:"findings,omitempty"`
	Branch      string `json:"branch,omitempty"`
}

// Snapshot exports the engine's state. It shares nothing the engine goes on
// to change: the shell may encode it in the background.
func (e *Engine) Snapshot() *Snapshot {
	roles := e.cfg.Roles // a reload replaces the struct, and its lists with new ones
	s := &Snapshot{
		Version: SnapshotVersion, Build: e.cfg.Build, Started: e.started, Instance: e.instance, StartAt: e.startAt,
		Now: e.now, Paused: e.paused, Withheld: e.withheld, ClaimAgain: e.claimAgain, Offline: e.offline, FrozenAt: e.frozenAt, Complete: e.complete,
		OvertimeSaid: e.overtimeSaid, BoardAt: e.boardAt, Roles: &roles, Senders: maps.Clone(e.senders), Seen: e.seen.ids(), Declared: e.cfg.Components,
	}
	s.Spend = e.snapshotSpend()
	for _, n := range e.halted {
		s.Halted = append(s.Halted, e.graph.Name(n))
	}
	if e.overtime.armed() {
		at := e.overtime.at
		s.Overtime = &at
	}
	s.Components = make([]ComponentSnapshot, len(e.comps))
	for i, c := range e.comps {
		s.Components[i] = e.snapshotComponent(c)
	}
	return s
}

func (e *Engine) snapshotComponent(c *component) ComponentSnapshot {
	cs := ComponentSnapshot{
		Name: c.name, State: c.state.String(), Owner: c.owner, Since: c.since,
		Progress: c.progress, HasProgress: c.hasProgress, ProgressAt: c.progressAt,
		PR: c.pr, Findings: c.findings, CIFails: c.ciFails, CIConflict: c.ciConflict,
		Barred: slices.Clone(c.barred), TimedOut: slices.Clone(c.timedOut), Hold: string(c.hold), Overdue: c.overdue,
		Approved: c.approved, ApprovedBy: c.approvedBy, MergedFrom: c.mergedFrom, Branch: c.branch, Spent: c.spent,
	}
	for _, o := range c.overlaps {
		cs.Overlaps = append(cs.Overlaps, o.name)
	}
	for _, d := range e.graph.Deps(c.idx) {
		cs.Deps = append(cs.Deps, e.graph.Name(d))
	}
	if c.timer.armed() {
		cs.Timer, cs.TimerAt = timerWhat[c.timer.kind], c.timer.at
	}
	for _, a := range c.fails {
		cs.Fails = append(cs.Fails, FailSnapshot{a.agent, a.n})
	}
	if len(c.disputes) > 0 {
		cs.Disputes = maps.Clone(c.disputes)
	}
	if len(c.pushback) > 0 {
		cs.Pushback = make(map[string]int, len(c.pushback))
		for d, n := range c.pushback {
			cs.Pushback[e.graph.Name(d)] = n
		}
	}
	for _, w := range c.waits {
		cs.Waits = append(cs.Waits, WaitSnapshot{On: w.on.name, Files: w.kind == waitFiles})
	}
	for _, w := range c.waiters {
		cs.Waiters = append(cs.Waiters, w.name)
	}
	if t := c.left; t != nil {
		cs.Left = &TrailSnapshot{Agent: t.agent, Why: t.why, Reason: t.reason, Progress: t.progress,
			HasProgress: t.hasProgress, PR: t.pr, Findings: t.findings, Branch: t.branch}
	}
	return cs
}

// Restore builds an engine from a snapshot. cfg supplies what is not state
// (identity, roles, rules); its components are ignored in favour of the
// snapshot's, which carry every edit made during the build.
func Restore(cfg Config, s *Snapshot) (*Engine, error) {
	if s.Version != SnapshotVersion {
		return nil, fmt.Errorf("snapshot version %d; this foreman reads version %d", s.Version, SnapshotVersion)
	}
	cfg.Components = nil
	e, err := New(cfg)
	if err != nil {
		return nil, err
	}
	e.started, e.instance, e.startAt, e.now = s.Started, s.Instance, s.StartAt, s.Now
	e.paused, e.withheld, e.offline, e.frozenAt = s.Paused, s.Withheld, s.Offline, s.FrozenAt
	e.claimAgain = s.ClaimAgain
	e.complete, e.overtimeSaid, e.boardAt = s.Complete, s.OvertimeSaid, s.BoardAt
	if s.Roles != nil {
		e.cfg.Roles, e.roles = *s.Roles, newRoles(*s.Roles)
	}
	for id, name := range s.Senders {
		e.senders[id] = name
	}
	e.cfg.Components = s.Declared
	for _, id := range s.Seen {
		e.seen.add(id)
	}
	for _, cs := range s.Components {
		if _, err := e.addComponent(cs.Name); err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
	}
	for i, cs := range s.Components {
		if err := e.restoreComponent(e.comps[i], cs); err != nil {
			return nil, fmt.Errorf("snapshot: component %s: %w", cs.Name, err)
		}
	}
	for _, c := range e.comps {
		if c.state == Merged {
			e.merged++
		}
		for _, d := range e.graph.Deps(c.idx) {
			if e.comps[d].state != Merged {
				c.unmerged++
			}
		}
	}
	for _, name := range s.Halted {
		i, ok := e.graph.Index(name)
		if !ok {
			return nil, fmt.Errorf("snapshot: halted on unknown component %s", name)
		}
		e.halted = append(e.halted, i)
	}
	if s.Overtime != nil {
		e.timers.arm(&e.overtime, overtimeTimer, *s.Overtime)
	}
	e.restoreSpend(s.Spend)
	return e, nil
}

func (e *Engine) restoreComponent(c *component, cs ComponentSnapshot) error {
	state, ok := parseState(cs.State)
	if !ok {
		return fmt.Errorf("unknown state %q", cs.State)
	}
	e.setState(c, state)
	c.owner, c.since = cs.Owner, cs.Since
	c.progress, c.hasProgress, c.progressAt = cs.Progress, cs.HasProgress, cs.ProgressAt
	c.pr, c.findings = cs.PR, cs.Findings
	c.ciFails, c.ciConflict = cs.CIFails, cs.CIConflict
	c.barred, c.timedOut = slices.Clone(cs.Barred), slices.Clone(cs.TimedOut)
	c.hold, c.overdue, c.approved, c.approvedBy = protocol.Escalation(cs.Hold), cs.Overdue, cs.Approved, cs.ApprovedBy
	c.mergedFrom = cs.MergedFrom
	c.branch = cs.Branch
	c.spent = cs.Spent
	for _, name := range cs.Overlaps {
		oi, ok := e.graph.Index(name)
		if !ok {
			return fmt.Errorf("overlaps unknown %s", name)
		}
		c.overlaps = append(c.overlaps, e.comps[oi])
	}
	if c.owner != "" {
		e.owned[c.owner]++
	}
	for _, d := range cs.Deps {
		di, ok := e.graph.Index(d)
		if !ok {
			return fmt.Errorf("depends on unknown %s", d)
		}
		e.graph.AddEdge(c.idx, di)
	}
	if cs.Timer != "" {
		kind := timerKindOf(cs.Timer)
		if kind == noTimer {
			return fmt.Errorf("unknown timer %q", cs.Timer)
		}
		e.timers.arm(&c.timer, kind, cs.TimerAt)
	}
	for _, f := range cs.Fails {
		c.fails = append(c.fails, attempts{f.Agent, f.N})
	}
	if len(cs.Disputes) > 0 {
		c.disputes = maps.Clone(cs.Disputes)
	}
	if len(cs.Pushback) > 0 {
		c.pushback = make(map[int]int, len(cs.Pushback))
		names := make([]string, 0, len(cs.Pushback))
		for d := range cs.Pushback {
			names = append(names, d)
		}
		sort.Strings(names)
		for _, d := range names {
			di, ok := e.graph.Index(d)
			if !ok {
				return fmt.Errorf("pushback on unknown %s", d)
			}
			c.pushback[di] = cs.Pushback[d]
		}
	}
	for _, w := range cs.Waits {
		oi, ok := e.graph.Index(w.On)
		if !ok {
			return fmt.Errorf("waits on unknown %s", w.On)
		}
		kind := waitDependency
		if w.Files {
			kind = waitFiles
		}
		c.waits = append(c.waits, wait{on: e.comps[oi], kind: kind})
	}
	for _, name := range cs.Waiters {
		wi, ok := e.graph.Index(name)
		if !ok {
			return fmt.Errorf("waited on by unknown %s", name)
		}
		c.waiters = append(c.waiters, e.comps[wi])
	}
	if t := cs.Left; t != nil {
		c.left = &trail{agent: t.Agent, why: t.Why, reason: t.Reason, progress: t.Progress,
			hasProgress: t.HasProgress, pr: t.PR, findings: t.Findings, branch: t.Branch}
	}
	return nil
}

func parseState(s string) (State, bool) {
	for i, name := range stateNames {
		if name == s {
			return State(i), true
		}
	}
	return 0, false
}

func timerKindOf(what string) timerKind {
	for i, w := range timerWhat {
		if w == what && i != int(noTimer) {
			return timerKind(i)
		}
	}
	return noTimer
}
