package coordinator

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// View is the build as a person looking at a board sees it: every
// component's state and why it is there. STATUS lines are written from it.
type View struct {
	Build      string          `json:"build"`
	At         time.Time       `json:"at"` // the engine's clock
	StartedAt  time.Time       `json:"started_at,omitzero"`
	Started    bool            `json:"started"`
	Paused     bool            `json:"paused,omitempty"`
	Halted     []string        `json:"halted,omitempty"` // the cycle, a -> b -> a, when halted
	Complete   bool            `json:"complete,omitempty"`
	Merged     int             `json:"merged"`
	Overtime   bool            `json:"overtime,omitempty"` // ESCALATE build overtime was said
	Components []ComponentView `json:"components"`
	Spent      Cost            `json:"spent,omitzero"`          // the build's spend
	Budget     *Limit          `json:"budget,omitempty"`        // the build's budget, if it has one
	Agents     []AgentView     `json:"agents,omitempty"`        // those that spent, by id
	Ignored    int64           `json:"spend_ignored,omitempty"` // spend reports not counted (spend.go)
}

// AgentView is an agent's spend on the board.
type AgentView struct {
	ID     string `json:"id"`
	Spent  Cost   `json:"spent,omitzero"`
	Budget *Limit `json:"budget,omitempty"`
	Holds  string `json:"holds,omitempty"` // the component its spend counts to now
}

// ComponentView is one component on the board.
type ComponentView struct {
	Name        string    `json:"name"`
	State       string    `json:"state"`
	Deps        []string  `json:"deps,omitempty"`
	Owner       string    `json:"owner,omitempty"`
	Since       time.Time `json:"since,omitzero"` // when the owner got it
	Progress    int       `json:"progress"`
	HasProgress bool      `json:"has_progress,omitempty"`
	ProgressAt  time.Time `json:"progress_at,omitzero"`
	PR          string    `json:"pr,omitempty"`
	Next        string    `json:"next,omitempty"` // what fires at Deadline: timeout, audit-overdue, ci-timeout
	Deadline    time.Time `json:"deadline,omitzero"`
	Audits      string    `json:"audits,omitempty"`    // the owner's failed audits, n/max
	CI          string    `json:"ci,omitempty"`        // CI failures, n/max, when CI gating is on
	Conflicts   string    `json:"conflicts,omitempty"` // CI merge conflicts, n/max
	Waits       []string  `json:"waits,omitempty"`     // what it waits on: dep(dep), other(files), or unmerged deps
	Pushback    string    `json:"pushback,omitempty"`  // dep:n/max,...
	Barred      []string  `json:"barred,omitempty"`
	TimedOut    []string  `json:"timed_out,omitempty"`
	Escalation  string    `json:"escalation,omitempty"` // the open escalation, if any
	Approved    bool      `json:"approved,omitempty"`
	ApprovedBy  string    `json:"approved_by,omitempty"` // while approved: who said AUDIT PASS
	BuiltBy     string    `json:"built_by,omitempty"`
	Claimable   bool      `json:"claimable,omitempty"`
	Branch      string    `json:"branch,omitempty"`   // the last ref named for it: where its work in progress is (section 10)
	Overlaps    []string  `json:"overlaps,omitempty"` // components whose work the host found would conflict with its own
	Spent       Cost      `json:"spent,omitzero"`     // what its builders spent on it (spend.go)
	Budget      *Limit    `json:"budget,omitempty"`   // its budget, if it has one
}

// Size is how many components the build has now: those configured, and
// those ADDed or reloaded since.
func (e *Engine) Size() int { return len(e.comps) }

// View returns the build as it stands.
func (e *Engine) View() View {
	v := View{Build: e.cfg.Build, At: e.now, StartedAt: e.startAt, Started: e.started, Paused: e.paused,
		Complete: e.complete, Merged: e.merged, Overtime: e.overtimeSaid}
	if e.halted != nil {
		v.Halted = strings.Split(e.graph.Format(e.halted), " -> ")
	}
	v.Components = make([]ComponentView, len(e.comps))
	for i, c := range e.comps {
		v.Components[i] = e.componentView(c)
	}
	v.Spent, v.Budget, v.Ignored = e.spend.build, e.limitView(protocol.BuildSubject), e.spend.ignored
	ids := slices.Sorted(maps.Keys(e.spend.agents))
	for _, id := range ids {
		a := e.spend.agents[id]
		av := AgentView{ID: id, Spent: a.spent, Budget: e.limitView(id)}
		if c := e.heldAt(a, e.now); c != nil {
			av.Holds = c.name
		}
		v.Agents = append(v.Agents, av)
	}
	return v
}

// limitView is subject's budget, nil when it has none.
func (e *Engine) limitView(subject string) *Limit {
	if l := e.limit(subject); l.IsSet() {
		return &l
	}
	return nil
}

func (e *Engine) componentView(c *component) ComponentView {
	v := ComponentView{Name: c.name, State: c.state.String(), Owner: c.owner, Approved: c.approved,
		Barred: slices.Clone(c.barred), Escalation: e.openEscalation(c), Claimable: e.claimable(c)}
	for _, d := range e.graph.Deps(c.idx) {
		v.Deps = append(v.Deps, e.graph.Name(d))
	}
	if c.approved {
		v.ApprovedBy = c.approvedBy
	}
	if c.owner != "" {
		v.Since = c.since
		v.Progress, v.HasProgress, v.ProgressAt = c.progress, c.hasProgress, c.progressAt
		v.PR = c.pr
		v.Audits = fmt.Sprintf("%d/%d", c.auditFails(c.owner), e.rules.AuditAttempts)
	}
	if c.timer.armed() {
		v.Next, v.Deadline = timerWhat[c.timer.kind], c.timer.at
	}
	if e.rules.CIGating && (c.ciFails > 0 || c.ciConflict > 0 || c.state == InCI) {
		v.CI = fmt.Sprintf("%d/%d", c.ciFails, e.rules.CIAttempts)
		v.Conflicts = fmt.Sprintf("%d/%d", c.ciConflict, e.rules.ConflictAttempts)
	}
	switch {
	case len(c.waits) > 0:
		for _, w := range c.waits {
			kind := "dep"
			if w.kind == waitFiles {
				kind = "files"
			}
			v.Waits = append(v.Waits, w.on.name+"("+kind+")")
		}
	case c.state == Pending && c.unmerged > 0:
		v.Waits = e.unmergedDeps(c)
	}
	if len(c.pushback) > 0 {
		v.Pushback = e.pushbackCounts(c)
	}
	if c.state != Merged {
		v.TimedOut = slices.Clone(c.timedOut)
	} else {
		v.BuiltBy = c.mergedFrom
	}
	v.Branch = c.branch
	for _, o := range c.overlaps {
		v.Overlaps = append(v.Overlaps, o.name)
	}
	v.Spent, v.Budget = c.spent, e.limitView(c.name)
	return v
}

// openEscalation names the escalation about c still waiting for a human.
func (e *Engine) openEscalation(c *component) string {
	switch {
	case c.hold != "":
		return string(c.hold)
	case c.overdue:
		return "audit-overdue"
	}
	var disputes []string
	for agent, n := range c.disputes {
		if n == disputed {
			disputes = append(disputes, agent)
		}
	}
	if len(disputes) == 0 {
		return ""
	}
	sort.Strings(disputes)
	return "claim-dispute:" + strings.Join(disputes, ",")
}

func (e *Engine) pushbackCounts(c *component) string {
	deps := make([]int, 0, len(c.pushback))
	for d := range c.pushback {
		deps = append(deps, d)
	}
	sort.Ints(deps)
	var parts []string
	for _, d := range deps {
		parts = append(parts, fmt.Sprintf("%s:%d/%d", e.comps[d].name, c.pushback[d], e.rules.PushbackRetries))
	}
	return strings.Join(parts, ",")
}
