// Package agents is foreman up's supervisor of the agents it starts: a
// workspace for each (a clone of the target, its key, its log, a private
// HOME and TMPDIR, its CLI's MCP config), their processes started through
// a Launcher, restarted with backoff when they crash, stopped when foreman
// times them out or releases them, held while a budget holds them, and all
// stopped at COMPLETE or when up stops.
//
// Team is the rules, pure: events and the time in, actions out (start
// this one, stop that one, say this). Supervisor is the shell that does
// them with real processes and a real clock.
package agents

import (
	"fmt"
	"time"
)

// State is where an agent's process stands.
type State string

// The states foreman status and the board show.
const (
	Running    State = "running"
	Restarting State = "restarting" // exited; started again at its due time
	Stopping   State = "stopping"   // told to stop; its exit is awaited
	Stopped    State = "stopped"    // for good, for Reason
	Held       State = "held"       // stopped while a budget holds it; started again when BUDGET lifts it
)

// Rules are the supervisor's timings.
type Rules struct {
	// Backoff is the wait before the first restart; each fast exit in a
	// row doubles it, up to MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// An exit within FastExit of the start is a fast one; FastExits of
	// them in a row stop the agent for good: its command is broken, and
	// starting it again would only fill its log.
	FastExit  time.Duration
	FastExits int
}

// DefaultRules are foreman up's.
func DefaultRules() Rules {
	return Rules{Backoff: time.Second, MaxBackoff: time.Minute, FastExit: 10 * time.Second, FastExits: 5}
}

// ActionKind is what the shell is to do.
type ActionKind int

// The actions.
const (
	Start ActionKind = iota // start the agent's process
	Stop                    // stop it: SIGTERM, then SIGKILL after the grace
	Say                     // log Text, and show it on the board
)

// Action is one thing for the shell to do.
type Action struct {
	Kind  ActionKind
	Agent string
	Text  string // Say: the line; Stop: why
}

// Status is one agent as foreman status and the board show it.
type Status struct {
	Name     string    `json:"name"`
	Role     string    `json:"role"`
	ID       string    `json:"id,omitempty"` // its sender id
	State    State     `json:"state"`
	Pid      int       `json:"pid,omitempty"`
	Restarts int       `json:"restarts"`
	LastExit string    `json:"last_exit,omitempty"`
	Reason   string    `json:"reason,omitempty"` // why it is stopped, held or restarting
	Due      time.Time `json:"due,omitzero"`     // restarting: when
	Log      string    `json:"log,omitempty"`    // its log file
}

type member struct {
	Status
	startedAt time.Time
	fast      int    // fast exits in a row
	after     State  // Stopping: the state its exit leads to
	held      bool   // a budget holds it now
	said      bool   // its first fast exit was said
	doneWhy   string // Stopping: the reason its exit leads to
}

// Team is the rules of one up's agents.
type Team struct {
	rules   Rules
	members []*member
	byName  map[string]*member
	byID    map[string]*member
	over    bool // COMPLETE, or up stops: nothing starts again
}

// NewTeam is the agents, none started yet. Each Status names the agent,
// its role, sender id and log.
func NewTeam(r Rules, agents []Status) *Team {
	t := &Team{rules: r, byName: map[string]*member{}, byID: map[string]*member{}}
	for _, a := range agents {
		m := &member{Status: a}
		m.State = Restarting
		t.members = append(t.members, m)
		t.byName[a.Name] = m
		if a.ID != "" {
			t.byID[a.ID] = m
		}
	}
	return t
}

// Begin starts every agent.
func (t *Team) Begin(now time.Time) []Action {
	var out []Action
	for _, m := range t.members {
		m.Due = now
	}
	out = append(out, t.Tick(now)...)
	return out
}

// Started records that the shell started name's process.
func (t *Team) Started(name string, pid int, now time.Time) {
	m := t.byName[name]
	m.State, m.Pid, m.startedAt, m.Due, m.Reason = Running, pid, now, time.Time{}, ""
}

// StartFailed is a process that could not start: a fast exit.
func (t *Team) StartFailed(name string, err error, now time.Time) []Action {
	m := t.byName[name]
	m.startedAt = now
	m.State = Running
	return t.Exited(name, "could not start: "+err.Error(), now)
}

// Exited is name's process gone, how it said.
func (t *Team) Exited(name, how string, now time.Time) []Action {
	m := t.byName[name]
	m.Pid, m.LastExit = 0, how
	switch m.State {
	case Stopping:
		m.State, m.Reason = m.after, m.doneWhy
		if m.State == Held && !m.held && !t.over { // lifted while it stopped
			return t.start(m, now)
		}
		return nil
	case Running:
	default:
		return nil
	}
	if t.over {
		m.State, m.Reason = Stopped, "the build is over"
		return nil
	}
	if m.held {
		m.State, m.Reason = Held, "held by a budget"
		return nil
	}
	var out []Action
	if now.Sub(m.startedAt) < t.rules.FastExit {
		m.fast++
	} else {
		m.fast = 0
	}
	if m.fast >= t.rules.FastExits {
		m.State = Stopped
		m.Reason = fmt.Sprintf("exited %d times in a row within %s of starting (last: %s); not started again: fix its command (its log: %s) and start foreman up again",
			m.fast, t.rules.FastExit, how, m.Log)
		return append(out, Action{Kind: Say, Agent: name, Text: "agent " + name + " " + m.Reason})
	}
	wait := t.rules.Backoff
	for i := 1; i < m.fast; i++ {
		wait = min(2*wait, t.rules.MaxBackoff)
	}
	m.State, m.Due = Restarting, now.Add(wait)
	m.Reason = fmt.Sprintf("exited (%s); starting again at %s", how, m.Due.UTC().Format("15:04:05"))
	if m.fast == 1 && !m.said {
		// A fast exit is said once, not at each restart: the log has the rest.
		m.said = true
		out = append(out, Action{Kind: Say, Agent: name, Text: fmt.Sprintf("agent %s exited %s after it started (%s); starting it again with backoff (its log: %s)",
			name, now.Sub(m.startedAt).Round(time.Millisecond), how, m.Log)})
	}
	return out
}

// Tick starts the agents whose restart is due.
func (t *Team) Tick(now time.Time) []Action {
	var out []Action
	for _, m := range t.members {
		if m.State == Restarting && !t.over && !now.Before(m.Due) {
			out = append(out, t.start(m, now)...)
		}
	}
	return out
}

func (t *Team) start(m *member, now time.Time) []Action {
	if m.State == Running || m.State == Stopping {
		return nil
	}
	if m.startedAt != (time.Time{}) {
		m.Restarts++
	}
	m.State, m.Due = Restarting, now // Started makes it Running
	return []Action{{Kind: Start, Agent: m.Name}}
}

// Next is when Tick has something to do.
func (t *Team) Next() (time.Time, bool) {
	var next time.Time
	for _, m := range t.members {
		if m.State == Restarting && !m.held && !t.over && (next.IsZero() || m.Due.Before(next)) {
			next = m.Due
		}
	}
	return next, !next.IsZero()
}

// TimedOut is foreman's TIMEOUT c of the agent with sender id id, or an
// operator's RELEASE c from it: it is stopped for good, and its work
// goes to another as the engine hands it over.
func (t *Team) TimedOut(id, why string, now time.Time) []Action {
	m := t.byID[id]
	if m == nil {
		return nil
	}
	return t.stop(m, Stopped, why)
}

// Holds is which agents a budget holds now, by sender id, each with why
// (View: HeldByBudget): one newly held is stopped, one no longer held is
// started again.
func (t *Team) Holds(held map[string]string, now time.Time) []Action {
	var out []Action
	for _, m := range t.members {
		why, h := held[m.ID]
		was := m.held
		m.held = h
		switch {
		case h && !was:
			out = append(out, t.stop(m, Held, "held by a budget: "+why)...)
			if m.State == Restarting { // waiting to start: it waits for BUDGET instead
				m.State, m.Reason = Held, "held by a budget: "+why
			}
		case !h && was && m.State == Held && !t.over:
			out = append(out, Action{Kind: Say, Agent: m.Name, Text: "agent " + m.Name + ": its budget hold is lifted; starting it again"})
			out = append(out, t.start(m, now)...)
		}
	}
	return out
}

// Over is COMPLETE, or up stopping: every agent is stopped, and none
// starts again.
func (t *Team) Over(why string) []Action {
	t.over = true
	var out []Action
	for _, m := range t.members {
		out = append(out, t.stop(m, Stopped, why)...)
		if m.State == Restarting || m.State == Held {
			m.State, m.Reason = Stopped, why
		}
	}
	return out
}

func (t *Team) stop(m *member, after State, why string) []Action {
	switch m.State {
	case Running:
		m.State, m.after, m.doneWhy = Stopping, after, why
		return []Action{{Kind: Stop, Agent: m.Name, Text: why}}
	case Stopping:
		if after == Stopped { // stopped for good outranks a hold
			m.after, m.doneWhy = after, why
		}
	case Restarting:
		if after == Stopped {
			m.State, m.Reason = Stopped, why
		}
	}
	return nil
}

// Live reports whether any agent's process may still run.
func (t *Team) Live() bool {
	for _, m := range t.members {
		if m.State == Running || m.State == Stopping {
			return true
		}
	}
	return false
}

// Status is every agent, in the order given.
func (t *Team) Status() []Status {
	out := make([]Status, len(t.members))
	for i, m := range t.members {
		out[i] = m.Status
	}
	return out
}
