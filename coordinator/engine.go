package coordinator

import (
	"errors"
	"fmt"
	"slices"
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
	Name     string    // the sender's display name, as the room gives it; never identity
	At       time.Time // the room's timestamp
	Content  string    // one or more lines
}

// Engine is the coordinator's state machine: Step takes each event and
// returns the replies it produced. The other methods only read. An Engine
// is not safe for concurrent use: its shell feeds it events one at a time.
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
	instance string    // this run of the build, as the shell named it
	paused   bool      // by an operator
	withheld bool      // TASKS was due while paused: RESUME says it
	offline  bool      // the shell says replies cannot reach the room
	frozenAt time.Time // when the current freeze began (freeze.go)
	halted   []int     // the cycle that halts the build; nil when running
	tasksDue bool      // something became claimable in the step being handled
	// claimAgain are those whose CLAIM came before the bot joined: the
	// build's first TASKS names them (contract section 1), then it is nil.
	claimAgain []string // at most maxClaimAgain; the TASKS names a few and counts the rest
	pending    bitset   // components in state pending, by index: TASKS reads only these

	merged       int
	complete     bool
	overtimeSaid bool
	boardAt      time.Time // when the whole board was last listed (bounds.go)

	senders map[string]string // sender ids heard or shown in the channel, with their display names: whom ASSIGN may name
	suggest *suggest.Index    // the component names, for "did you mean"

	seen seenIDs // message ids already handled

	spend       ledger           // what was spent (spend.go)
	budgetSet   map[string]Limit // budgets an operator's BUDGET set, by subject (budget.go)
	budgetFlags map[string]uint8 // what was said of each subject's budget

	out []Reply // replies of the event being handled
}

// New builds an engine for cfg. The build starts with a KindStart event.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Rules.Check(); err != nil {
		return nil, fmt.Errorf("rules.%w", err)
	}
	e := &Engine{
		cfg:      cfg,
		rules:    cfg.Rules,
		reader:   protocol.Reader{Mentions: cfg.Mentions},
		roles:    newRoles(cfg.Roles),
		graph:    graph.New(),
		owned:    make(map[string]int),
		senders:  make(map[string]string),
		suggest:  suggest.NewIndex(),
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
	e.suggest.Add(name)
	return c, nil
}

// setState moves c to state s. Every change of state goes through here, so
// the set of pending components stays exact.
func (e *Engine) setState(c *component, s State) {
	c.state = s
	e.pending.set(c.idx, s == Pending)
}

// start starts the build at the given time: TASKS, or the cycle that halts
// it. The ids in seen are messages said before the build began: they are
// never commands, even when the room replays them later.
func (e *Engine) start(at time.Time, seen []string, instance string, claimAgain []string) {
	if e.started {
		return
	}
	e.instance = instance
	e.claimAgain = slices.Clip(claimAgain[:min(len(claimAgain), maxClaimAgain)])
	e.now = at
	e.started, e.startAt = true, at
	for _, id := range seen {
		e.seen.add(id)
	}
	if e.rules.MaxBuildTime > 0 {
		e.timers.arm(&e.overtime, overtimeTimer, at.Add(e.rules.MaxBuildTime))
	}
	if cycle := e.graph.Cycle(); cycle != nil {
		e.halt(cycle)
	} else {
		e.announceTasks()
	}
	e.flushTasks()
}

// receive handles a message heard in the room: timers due by its time fire
// first, then each of its lines is read and handled in order.
func (e *Engine) receive(m Message) {
	if !e.Accepts(m) {
		return
	}
	if m.ID != "" {
		e.seen.add(m.ID)
	}
	if name := DisplayName(m.Name); name != "" || e.senders[m.From] == "" {
		e.senders[m.From] = name // a message without a name keeps the one the room showed
	}
	e.fireDue(m.At)
	errs, read := newLineErrors(m.From), 0
	for line := range protocol.Lines(m.Content) {
		cmd, err := e.reader.Read(line)
		if err == nil && cmd.Verb == protocol.NoVerb {
			continue // chat
		}
		if read == MaxCommands {
			errs.cut = true
			break
		}
		read++
		if err != nil {
			errs.malformed(e, err)
			var pe *protocol.ParseError
			if !errors.As(err, &pe) || !pe.CheckIn() {
				continue
			}
			// A PROGRESS with a bad branch= is answered, and still a
			// check-in (contract section 10): cmd is the rest of it.
		}
		e.handle(m.From, cmd)
		e.flushTasks()
	}
	errs.finish(e)
}

// Accepts reports whether the engine would handle m: the build has started,
// m was said after it started, m is not from the bot itself, not a room
// notice, not from an unverified sender when verification is required, and
// not a message already handled. It changes nothing.
func (e *Engine) Accepts(m Message) bool {
	switch {
	case !e.started, m.From == e.cfg.Self, m.From == roomNotices:
		return false
	case m.At.Before(e.startAt): // lines from before the build are never commands
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

// Configured is the components as last declared (by the configuration, or
// the latest reload; edits made in the room are not in it) and the roles as
// they stand. The slices are the engine's: read them only.
func (e *Engine) Configured() ([]Component, Roles) { return e.cfg.Components, e.cfg.Roles }

// Instance names this run of the build (KindStart's Instance).
func (e *Engine) Instance() string { return e.instance }

// Offline reports whether the engine was told its replies cannot reach the
// room (KindOffline), and has not been told otherwise since.
func (e *Engine) Offline() bool { return e.offline }

// roomNotices is the sender id of AgentChat's server notices.
const roomNotices = "@server"

// handleAt handles one command from sender at the given time, after firing
// the timers due by then: a message of one line, already read.
func (e *Engine) handleAt(at time.Time, sender string, cmd protocol.Command) {
	e.fireDue(at)
	e.handle(sender, cmd)
	e.flushTasks()
}

// tick fires the timers of the earliest deadline if it is at or before to.
// Callers that record when each reply was said (transcripts) tick until
// nothing is due, then hand over the next message.
func (e *Engine) tick(to time.Time) {
	if t := e.due(to); t != nil {
		e.fireInstant(t.at)
	}
}

// NextDeadline is when the next timer fires; false if none is armed or the
// build is frozen (paused, or its replies cannot reach the room).
func (e *Engine) NextDeadline() (time.Time, bool) {
	t := e.timers.next()
	if t == nil || e.frozen() {
		return time.Time{}, false
	}
	return t.at, true
}

// recover accounts for time the coordinator itself was away (contract
// section 5): the time between its last event and at is treated as a pause,
// so every running deadline moves later by it and no builder times out for
// the coordinator's absence. It comes after restoring, before handling what
// was missed.
func (e *Engine) recover(at time.Time) {
	if !at.After(e.now) {
		return
	}
	if !e.frozen() { // a pause already covers the gap
		e.timers.shift(at.Sub(e.now))
	}
	e.now = at
}

// Now is the engine's clock: the time of the latest event.
func (e *Engine) Now() time.Time { return e.now }

// say adds a reply of the event being handled, timed by the engine's clock.
func (e *Engine) say(r protocol.Reply) {
	urgent := r.Verb == protocol.ReplyEscalate || r.Verb == protocol.ReplyError && r.Subject == protocol.BuildSubject
	e.out = append(e.out, Reply{Reply: r, At: e.now, Urgent: urgent})
}

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
	if e.frozen() || t == nil || t.at.After(to) {
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
	case v == protocol.Overlap:
		e.overlap(sender, cmd)
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
	if s := e.suggest.Closest(name); s != "" {
		return fmt.Sprintf("unknown component %s; did you mean %s?", name, s)
	}
	return fmt.Sprintf("unknown component %s; STATUS lists the components", name)
}

func (e *Engine) reject(c *component, agent, format string, args ...any) {
	e.say(protocol.Reject(c.name, agent, fmt.Sprintf(format, args...)))
}

func (e *Engine) arm(c *component, kind timerKind, d time.Duration) {
	e.timers.arm(&c.timer, kind, e.roundUp(e.base().Add(d), d))
}

// roundUp moves a deadline d after now later, onto the next multiple of
// d's slack counted from the build's start. Deadlines armed close together
// (a burst of claims) then fall due at one instant, so the components they
// free are announced in one TASKS instead of one ever-longer TASKS each
// (which is quadratic: 10,000 timeouts said 382 MiB of TASKS). A builder
// only ever gets longer, never shorter.
func (e *Engine) roundUp(at time.Time, d time.Duration) time.Time {
	g := slack(d)
	since := at.Sub(e.startAt)
	if r := since % g; r > 0 {
		at = at.Add(g - r)
	}
	return at
}

// slack is the granularity of a deadline d away: a tenth of d, as a power
// of ten from a millisecond to a second.
func slack(d time.Duration) time.Duration {
	g := time.Millisecond
	for g < time.Second && 10*g*10 <= d {
		g *= 10
	}
	return g
}

// checkinDeadline is how long an owner may go without checking in.
func (e *Engine) checkinDeadline() time.Duration {
	return e.rules.CheckinInterval * time.Duration(e.rules.MissedCheckins)
}
