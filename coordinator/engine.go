package coordinator

import (
	"fmt"
	"time"

	"github.com/agentforeman/foreman/coordinator/graph"
	"github.com/agentforeman/foreman/coordinator/suggest"
	"github.com/agentforeman/foreman/protocol"
)

// Message is a chat message as the room delivered it.
type Message struct {
	ID       string    // the room's message id; "" if it has none
	From     string    // sender id
	Verified bool      // the room marks the sender verified
	At       time.Time // the room's timestamp
	Content  string    // one or more lines
}

// Engine is the coordinator's state machine. Every method that takes an
// event returns the reply lines it produced, in order; nil when there are
// none. An Engine is not safe for concurrent use: its shell feeds it events
// one at a time.
type Engine struct {
	cfg    Config
	rules  Rules
	reader protocol.Reader
	roles  roles

	graph *graph.Graph
	comps []*component
	owned map[string]int // how many components each agent owns

	timers   timers
	overtime timer
	now      time.Time
	started  bool
	startAt  time.Time
	paused   bool
	pausedAt time.Time
	halted   []int  // the cycle that halts the build; nil when running
	tasksDue bool   // something became claimable in the step being handled
	pending  bitset // components in state pending, by index: TASKS reads only these

	merged       int
	complete     bool
	overtimeSaid bool

	seen seenIDs // message ids already handled

	out []string // replies of the event being handled
}

// New builds an engine for cfg. The build starts with Start.
func New(cfg Config) (*Engine, error) {
	e := &Engine{
		cfg:      cfg,
		rules:    cfg.Rules,
		reader:   protocol.Reader{Mentions: cfg.Mentions},
		roles:    newRoles(cfg.Roles),
		graph:    graph.New(),
		owned:    make(map[string]int),
		overtime: timer{comp: -1, index: -1},
		seen:     newSeenIDs(seenWindow),
	}
	if e.cfg.Build == "" {
		e.cfg.Build = "build"
	}
	for _, c := range cfg.Components {
		if _, err := e.addComponent(c.Name); err != nil {
			return nil, err
		}
	}
	for _, c := range cfg.Components {
		a, _ := e.graph.Index(c.Name)
		for _, d := range c.Deps {
			b, ok := e.graph.Index(d)
			if !ok {
				return nil, fmt.Errorf("component %q: depends on %q, which is not a component", c.Name, d)
			}
			if e.graph.AddEdge(a, b) {
				e.comps[a].unmerged++
			}
		}
	}
	return e, nil
}

// addComponent appends a component to the build, in declaration order. It
// starts pending.
func (e *Engine) addComponent(name string) (*component, error) {
	if !protocol.ValidComponent(name) {
		return nil, fmt.Errorf("component %q: not a component name", name)
	}
	i, added := e.graph.Add(name)
	if !added {
		return nil, fmt.Errorf("component %s: declared twice", name)
	}
	c := &component{name: name, idx: i, timer: timer{comp: i, index: -1}}
	e.comps = append(e.comps, c)
	e.pending.set(i, true)
	return c, nil
}

// setState moves c to state s. Every change of state goes through here, so
// the set of pending components stays exact.
func (e *Engine) setState(c *component, s State) {
	c.state = s
	e.pending.set(c.idx, s == Pending)
}

// Start starts the build at the given time: TASKS, or the cycle that halts it.
func (e *Engine) Start(at time.Time) []string {
	if e.started {
		return nil
	}
	e.begin(at)
	e.now = at
	e.started, e.startAt = true, at
	if e.rules.MaxBuildTime > 0 {
		e.timers.arm(&e.overtime, overtimeTimer, at.Add(e.rules.MaxBuildTime))
	}
	if cycle := e.graph.Cycle(); cycle != nil {
		e.halt(cycle)
	} else {
		e.announceTasks()
	}
	e.flushTasks()
	return e.end()
}

// Receive handles a message heard in the room: timers due by its time fire
// first, then each of its lines is read and handled in order. Messages from
// the bot itself, room notices, unverified senders (when verification is
// required) and messages already handled are ignored.
func (e *Engine) Receive(m Message) []string {
	if !e.Accepts(m) {
		return nil
	}
	if m.ID != "" {
		e.seen.add(m.ID)
	}
	e.begin(m.At)
	e.fireDue(m.At)
	for line := range protocol.Lines(m.Content) {
		cmd, err := e.reader.Read(line)
		switch {
		case err != nil:
			e.say(protocol.Error(m.From, err.Error()))
		case cmd.Verb != protocol.NoVerb:
			e.handle(m.From, cmd)
			e.flushTasks()
		}
	}
	return e.end()
}

// Accepts reports whether Receive would handle m: the build has started, m
// is not from the bot itself, not a room notice, not from an unverified
// sender when verification is required, and not a message already handled.
// It changes nothing.
func (e *Engine) Accepts(m Message) bool {
	switch {
	case !e.started, m.From == e.cfg.Self, m.From == roomNotices:
		return false
	case e.rules.RequireVerified && !m.Verified:
		return false
	case m.ID != "" && e.seen.has(m.ID):
		return false
	}
	return true
}

// StartedAt is when the build started; false if it has not.
func (e *Engine) StartedAt() (time.Time, bool) { return e.startAt, e.started }

// roomNotices is the sender id of AgentChat's server notices.
const roomNotices = "@server"

// Handle handles one command from sender at the given time, after firing the
// timers due by then. It is Receive without the reading, for callers that
// already hold commands.
func (e *Engine) Handle(at time.Time, sender string, cmd protocol.Command) []string {
	if !e.started {
		return nil
	}
	e.begin(at)
	e.fireDue(at)
	e.handle(sender, cmd)
	e.flushTasks()
	return e.end()
}

// Advance moves the clock to the given time, firing every timer due by then
// in deadline order.
func (e *Engine) Advance(to time.Time) []string {
	if !e.started {
		return nil
	}
	e.begin(to)
	e.fireDue(to)
	return e.end()
}

// Tick fires the earliest timer if it is due at or before to, and returns
// its deadline and what it said; ok is false when nothing is due. Callers
// that record when each reply was said (transcripts) tick until nothing is
// due, then hand over the next message.
func (e *Engine) Tick(to time.Time) (at time.Time, out []string, ok bool) {
	if !e.started {
		return time.Time{}, nil, false
	}
	e.begin(to)
	t := e.due(to)
	if t == nil {
		return time.Time{}, nil, false
	}
	at = t.at
	e.fireInstant(at)
	return at, e.end(), true
}

// NextDeadline is when the next timer fires; false if none is armed or the
// build is paused.
func (e *Engine) NextDeadline() (time.Time, bool) {
	t := e.timers.next()
	if t == nil || e.paused {
		return time.Time{}, false
	}
	return t.at, true
}

// Recover accounts for time the coordinator itself was away (contract
// section 5): the time between its last event and at is treated as a pause,
// so every running deadline moves later by it and no builder times out for
// the coordinator's absence. Call it after restoring, before handling what
// was missed.
func (e *Engine) Recover(at time.Time) {
	if !e.started || !at.After(e.now) {
		return
	}
	if !e.paused { // an operator's pause already covers the gap
		e.timers.shift(at.Sub(e.now))
	}
	e.now = at
}

// Now is the engine's clock: the time of the latest event.
func (e *Engine) Now() time.Time { return e.now }

// begin starts handling an event. The clock moves in fireDue, which fires
// what is due on the way; it never goes back, so a room timestamp older than
// the clock is read as now.
func (e *Engine) begin(time.Time) { e.out = nil }

func (e *Engine) end() []string {
	out := e.out
	e.out = nil
	return out
}

func (e *Engine) say(line string) { e.out = append(e.out, line) }

// fireDue fires, in deadline order, every timer due at or before to. Each
// fires at its own deadline, so what it says is timed then.
func (e *Engine) fireDue(to time.Time) {
	for t := e.due(to); t != nil; t = e.due(to) {
		e.fireInstant(t.at)
	}
	if to.After(e.now) {
		e.now = to
	}
}

// fireInstant fires every timer due at the instant at, in heap order, as one
// step: components that become claimable together are announced in one
// TASKS.
func (e *Engine) fireInstant(at time.Time) {
	for t := e.due(at); t != nil && t.at.Equal(at); t = e.due(at) {
		e.fireOne(t)
	}
	e.flushTasks()
}

// due returns the earliest timer if it is due by to and the build runs.
func (e *Engine) due(to time.Time) *timer {
	t := e.timers.next()
	if e.paused || t == nil || t.at.After(to) {
		return nil
	}
	return t
}

// fireOne fires t at its deadline. What fires may arm the same timer
// again, so its kind is read first.
func (e *Engine) fireOne(t *timer) {
	kind := t.kind
	if t.at.After(e.now) {
		e.now = t.at
	}
	e.timers.stop(t)
	e.fire(t.comp, kind)
}

func (e *Engine) fire(comp int, kind timerKind) {
	if comp < 0 {
		e.overtimeFired()
		return
	}
	c := e.comps[comp]
	switch kind {
	case checkinTimer:
		e.checkinMissed(c)
	case auditTimer:
		e.auditOverdue(c)
	case ciTimer:
		e.ciTimedOut(c)
	}
}

// handle dispatches one command to the rule that owns it.
func (e *Engine) handle(sender string, cmd protocol.Command) {
	switch v := cmd.Verb; {
	case v == protocol.Claim:
		e.claim(sender, cmd.Component)
	case v.IsBuilderLine():
		e.builderLine(sender, cmd)
	case v == protocol.Audit:
		e.audit(sender, cmd)
	case v == protocol.CI:
		e.ciVerdict(sender, cmd)
	case v == protocol.Status:
		e.status(sender, cmd.Component)
	case v.IsOperatorCommand():
		e.operator(sender, cmd)
	}
}

// lookup finds a component by name, or rejects the line with a suggestion.
func (e *Engine) lookup(sender, name string) (*component, bool) {
	if i, ok := e.graph.Index(name); ok {
		return e.comps[i], true
	}
	e.say(protocol.Reject(name, sender, e.unknown(name)))
	return nil, false
}

func (e *Engine) unknown(name string) string {
	if s := suggest.Closest(name, e.names()); s != "" {
		return fmt.Sprintf("unknown component %s; did you mean %s?", name, s)
	}
	return fmt.Sprintf("unknown component %s; STATUS lists the components", name)
}

func (e *Engine) names() []string {
	out := make([]string, len(e.comps))
	for i, c := range e.comps {
		out[i] = c.name
	}
	return out
}

func (e *Engine) reject(c *component, agent, format string, args ...any) {
	e.say(protocol.Reject(c.name, agent, fmt.Sprintf(format, args...)))
}

// base is when a deadline armed now starts counting: during a pause, from
// the pause's start, so that RESUME's shift gives it its whole length.
func (e *Engine) base() time.Time {
	if e.paused {
		return e.pausedAt
	}
	return e.now
}

func (e *Engine) arm(c *component, kind timerKind, d time.Duration) {
	e.timers.arm(&c.timer, kind, e.base().Add(d))
}

// checkinDeadline is how long an owner may go without checking in.
func (e *Engine) checkinDeadline() time.Duration {
	return e.rules.CheckinInterval * time.Duration(e.rules.MissedCheckins)
}
