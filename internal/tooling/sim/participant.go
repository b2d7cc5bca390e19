package sim

import (
	"context"
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/protocol"
)

// Config says where a participant talks and at what pace.
type Config struct {
	URL     string
	Channel string
	Name    string // display name, and the builder's branch prefix
	// Identity is the participant's key; nil: a fresh one named Name, so
	// each run is a new agent id.
	Identity *agentchat.Identity
	// Coordinator is foreman's sender id. "": the sender of the first TASKS
	// line heard (only the coordinator says TASKS).
	Coordinator string
	// Minute is how long a contract minute lasts in real time (default 1m):
	// every scripted delay is stretched by it.
	Minute time.Duration
	// RateLimit is the room's, as for agentchat.Config (default 1s).
	RateLimit time.Duration
	// Seed makes the reaction jitter repeatable; it is mixed with Name so
	// participants sharing a seed still differ.
	Seed   uint64
	Logger zerolog.Logger
	// Show, if set, is called with every line heard in the room (not the
	// server's notices) and every line the participant says, with the
	// time the room gives it (the zero time for a line being said now),
	// the sender's id and display name, in the participant's goroutine.
	// The room's replayed history is old, and must not look new.
	Show func(at time.Time, from, name, line string)
}

// Role names, as the demo shows them.
const (
	RoleBuilder  = "builder"
	RoleAuditor  = "auditor"
	RoleCI       = "ci"
	RoleOperator = "operator"
)

// Participant is one simulated member of the room: an AgentChat client
// driving a scripted behaviour.
type Participant struct {
	cfg    Config
	role   string
	id     *agentchat.Identity
	client *agentchat.Client
	b      behaviour
	rnd    *rand.Rand
	stage  *Stage // nil: a live room, through client

	coord    string
	seq      uint64
	actions  chan func()
	joined   chan struct{}
	done     chan struct{}
	complete chan struct{} // closed when the coordinator says COMPLETE
	isIn     bool
}

// NewBuilder makes a builder.
func NewBuilder(cfg Config, s Builder) (*Participant, error) {
	return newParticipant(cfg, RoleBuilder, newBuilder(cfg.Name, s))
}

// NewAuditor makes an auditor.
func NewAuditor(cfg Config, s Auditor) (*Participant, error) {
	return newParticipant(cfg, RoleAuditor, newAuditor(s))
}

// NewCI makes a CI bot.
func NewCI(cfg Config, s CI) (*Participant, error) {
	return newParticipant(cfg, RoleCI, newCI(s))
}

// NewOperator makes an operator.
func NewOperator(cfg Config, s Operator) (*Participant, error) {
	return newParticipant(cfg, RoleOperator, newOperator(s))
}

func newParticipant(cfg Config, role string, b behaviour) (*Participant, error) {
	if cfg.Minute <= 0 {
		cfg.Minute = time.Minute
	}
	id := cfg.Identity
	if id == nil {
		var err error
		if id, err = agentchat.NewIdentity(cfg.Name); err != nil {
			return nil, err
		}
	}
	h := fnv.New64a()
	h.Write([]byte(cfg.Name))
	p := &Participant{
		cfg: cfg, role: role, id: id, b: b,
		rnd:      rand.New(rand.NewPCG(cfg.Seed, h.Sum64())),
		coord:    cfg.Coordinator,
		actions:  make(chan func(), 16),
		joined:   make(chan struct{}),
		done:     make(chan struct{}),
		complete: make(chan struct{}),
	}
	p.client = agentchat.New(agentchat.Config{
		URL: cfg.URL, Channel: cfg.Channel, Name: cfg.Name, Identity: id,
		RateLimit: cfg.RateLimit, Logger: cfg.Logger,
	})
	return p, nil
}

// ID is the participant's sender id.
func (p *Participant) ID() string { return p.id.AgentID() }

// Name is its display name.
func (p *Participant) Name() string { return p.cfg.Name }

// Role is builder, auditor, ci or operator.
func (p *Participant) Role() string { return p.role }

// Joined is closed once the participant is in the channel.
func (p *Participant) Joined() <-chan struct{} { return p.joined }

// Coordinator is foreman's sender id as far as the participant knows: the
// configured one, or the one it learned; "" before the first TASKS. Only
// safe from Show, or once Run has returned.
func (p *Participant) Coordinator() string { return p.coord }

// Stats are its room connection's counters.
func (p *Participant) Stats() agentchat.Stats { return p.client.Stats() }

// Run connects and plays the script until ctx is done. It returns an error
// only when the room refuses the participant for good, or when it plays on
// a Stage instead.
func (p *Participant) Run(ctx context.Context) error {
	if p.stage != nil {
		return errors.New("a participant on a stage is not run")
	}
	defer close(p.done)
	runErr := make(chan error, 1)
	go func() { runErr <- p.client.Run(ctx) }()
	events := p.client.Events()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return <-runErr
			}
			p.handle(ev)
		case f := <-p.actions:
			f()
		case <-ctx.Done():
			return <-runErr
		}
	}
}

func (p *Participant) handle(ev agentchat.Event) {
	switch ev := ev.(type) {
	case agentchat.Joined:
		if !p.isIn {
			p.isIn = true
			p.catchUp(ev.History)
			close(p.joined)
			p.b.start(p)
			return
		}
		for _, m := range ev.History { // missed while reconnecting
			if !m.Self {
				p.message(m)
			}
		}
	case agentchat.Message:
		p.message(ev)
	}
}

// catchUp reads what was said before the participant arrived: shown, and
// learned from by behaviours that can (catcher, agentCatcher), never acted
// on as it is read.
func (p *Participant) catchUp(history []agentchat.Message) {
	c, _ := p.b.(catcher)
	ac, _ := p.b.(agentCatcher)
	for _, m := range history {
		if m.Notice || m.Self {
			continue
		}
		p.learnCoordinator(m)
		for l := range protocol.Lines(m.Body()) {
			l = strings.TrimSpace(l)
			if p.cfg.Show != nil {
				p.cfg.Show(m.TS, m.From, m.FromName, l)
			}
			if p.coord == "" && protocol.VerbOf(l) == protocol.ReplyTasks {
				p.coord = m.From
			}
			if r, ok := parseReply(l); ok && c != nil && m.From == p.coord {
				c.catchUp(r)
			}
			if ac != nil && m.From != p.coord {
				ac.catchUpAgent(m.From, l)
			}
		}
	}
}

func (p *Participant) message(m agentchat.Message) {
	if m.Notice || !p.isIn {
		return
	}
	p.learnCoordinator(m)
	for l := range protocol.Lines(m.Body()) {
		l = strings.TrimSpace(l)
		if p.cfg.Show != nil {
			p.cfg.Show(m.TS, m.From, m.FromName, l)
		}
		if p.coord == "" && protocol.VerbOf(l) == protocol.ReplyTasks {
			p.coord = m.From
		}
		if m.From != p.coord {
			p.b.agent(p, m.From, l)
			continue
		}
		if r, ok := parseReply(l); ok {
			p.b.coordinator(p, r)
			if r.Verb == protocol.ReplyComplete {
				p.completed()
			}
		}
	}
}

// completed notes that the coordinator said COMPLETE: nothing is left to
// do in this build.
func (p *Participant) completed() {
	select {
	case <-p.complete:
	default:
		close(p.complete)
	}
}

// Complete is closed when the coordinator says, while the participant is
// in the room, that the build is complete (a COMPLETE in the history it
// found on joining is not enough: the room may hold a new build since).
func (p *Participant) Complete() <-chan struct{} { return p.complete }

// learnCoordinator takes the sender of a message stamped as foreman stamps
// its own ([foreman <build>/<run> #n]) for the coordinator, when the
// configuration did not say who it is: a participant that joins long after
// the last TASKS, which the room's short history no longer holds, still
// knows foreman's lines from the others'.
func (p *Participant) learnCoordinator(m agentchat.Message) {
	if p.coord != "" || m.Self {
		return
	}
	if st, _, ok := agentchat.ParseStamp(m.Content); ok && len(st.Seqs) > 0 {
		p.coord = m.From
	}
}

// world, for the behaviour.

func (p *Participant) self() string { return p.id.AgentID() }

func (p *Participant) say(l string) {
	if p.cfg.Show != nil {
		p.cfg.Show(time.Time{}, p.ID(), p.cfg.Name, l)
	}
	if p.stage != nil {
		p.stage.Say(p.ID(), l)
		return
	}
	p.seq++
	p.client.Send(agentchat.Line{Seq: p.seq, Text: l})
}

func (p *Participant) after(d time.Duration, f func()) {
	d = Scale(d, p.cfg.Minute)
	if p.stage != nil {
		p.stage.After(d, f)
		return
	}
	time.AfterFunc(d, func() {
		select {
		case p.actions <- f:
		case <-p.done:
		}
	})
}

func (p *Participant) rand() *rand.Rand { return p.rnd }
