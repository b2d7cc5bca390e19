package mcpagent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/protocol"
)

// Defaults of Config.
const (
	DefaultAnswerWait  = 30 * time.Second
	DefaultWaitMax     = 10 * time.Minute
	DefaultHandoffWait = 5 * time.Second
	inboxMax           = 1000 // events kept for wait(); the oldest go first
)

// Config says where the agent talks and how its session behaves.
type Config struct {
	// Room is the agent's connection: URL, Channel, Identity (its key:
	// its sender id), Name, RateLimit, Logger.
	Room agentchat.Config
	// Coordinator is foreman's sender id; "" learns it from foreman's
	// stamp or the first TASKS.
	Coordinator string
	// CheckinInterval is foreman's rules.checkin_interval: automatic
	// check-ins go out before it would pass. 0: none.
	CheckinInterval time.Duration
	// Keepalive is mcp.keepalive: automatic check-ins stop this long after
	// the agent's last tool call. 0: none.
	Keepalive time.Duration
	// AnswerWait bounds how long a tool waits for foreman's answer
	// (default 30s); WaitMax bounds wait() (default 10m).
	AnswerWait, WaitMax time.Duration
	// Hosts are the CI role's sender ids (roles.ci): only their handoff
	// lines count. Empty: anyone's but foreman's.
	Hosts []string
	// HandoffWait bounds how long claim() waits, after an ACK that names
	// the last builder's branch, for the host's handoff line (default 5s):
	// the host says it once it has heard the ACK.
	HandoffWait time.Duration
}

// Session is one agent in the room, for foreman mcp: it says the agent's
// lines, matches foreman's answers to them, keeps what else is addressed
// to the agent for wait(), and checks in for the agent while it works.
// Everything it knows is owned by Run's goroutine; the tools talk to it
// through do.
type Session struct {
	cfg    Config
	self   string
	client *agentchat.Client
	ops    chan func()
	joined chan struct{}
	over   chan struct{} // closed when Run returns
	// news is signalled when something waits in the inbox with no wait()
	// to take it: the MCP server tells a subscribed client (tools.go).
	news chan struct{}

	// Owned by Run's goroutine.
	rd        Reader
	seq       uint64
	pending   []*request
	inbox     []Event
	waiters   []*waiter
	reading   bool // in the middle of a message: its lines go to a waiter together
	keep      *keepalive
	isIn      bool
	connected bool
	audited   map[string]bool // components the agent sent AUDIT about: their outcome is news to it
	timer     *time.Timer
	handoffs  map[string]Handoff // the host's handoff lines for the agent, by component, since its ACK
	handWait  []handoffWaiter
}

// handoffWaiter is a claim() waiting for the host's handoff line.
type handoffWaiter struct {
	c  string
	ch chan Handoff
}

// New makes a session; Run connects it.
func New(cfg Config) (*Session, error) {
	if cfg.Room.Identity == nil {
		return nil, errors.New("an agent needs its key (an identity file): its sender id is how foreman knows it")
	}
	if cfg.AnswerWait <= 0 {
		cfg.AnswerWait = DefaultAnswerWait
	}
	if cfg.WaitMax <= 0 {
		cfg.WaitMax = DefaultWaitMax
	}
	if cfg.HandoffWait <= 0 {
		cfg.HandoffWait = DefaultHandoffWait
	}
	self := cfg.Room.Identity.AgentID()
	s := &Session{
		cfg: cfg, self: self,
		client:   agentchat.New(cfg.Room),
		ops:      make(chan func()),
		joined:   make(chan struct{}),
		over:     make(chan struct{}),
		news:     make(chan struct{}, 1),
		rd:       Reader{Self: self, Coordinator: cfg.Coordinator, Name: cfg.Room.Name, Hosts: cfg.Hosts},
		keep:     newKeepalive(cfg.CheckinInterval, cfg.Keepalive, time.Now()),
		audited:  map[string]bool{},
		handoffs: map[string]Handoff{},
	}
	if s.rd.Name == "" {
		s.rd.Name = cfg.Room.Identity.Name
	}
	return s, nil
}

// ID is the agent's sender id.
func (s *Session) ID() string { return s.self }

// Joined is closed once the agent is in the channel.
func (s *Session) Joined() <-chan struct{} { return s.joined }

// Run connects and serves the tools until ctx is done. It returns an error
// when the room refuses the agent for good.
func (s *Session) Run(ctx context.Context) error {
	defer close(s.over)
	runErr := make(chan error, 1)
	go func() { runErr <- s.client.Run(ctx) }()
	s.timer = time.NewTimer(time.Hour)
	s.timer.Stop()
	defer s.timer.Stop()
	events := s.client.Events()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				s.closeAll()
				return <-runErr
			}
			s.handle(ev)
		case f := <-s.ops:
			f()
		case <-s.timer.C:
			s.checkIn(time.Now())
		case <-ctx.Done():
			s.closeAll()
			return <-runErr
		}
		s.arm()
	}
}

// arm sets the timer to the next automatic check-in.
func (s *Session) arm() {
	s.timer.Stop()
	if at := s.keep.next(); !at.IsZero() {
		s.timer.Reset(max(time.Until(at), 0))
	}
}

// do runs f in Run's goroutine and waits for it; false when ctx or the
// session ended first.
func (s *Session) do(ctx context.Context, f func()) bool {
	done := make(chan struct{})
	g := func() { f(); close(done) }
	select {
	case s.ops <- g:
		<-done
		return true
	case <-ctx.Done():
	case <-s.over:
	}
	return false
}

// Begin and End bracket a tool call by the agent: it is alive, so
// automatic check-ins go on while the call lasts and for mcp.keepalive
// after it.
func (s *Session) Begin(ctx context.Context) { s.do(ctx, func() { s.keep.begin(time.Now()) }) }

// End: see Begin.
func (s *Session) End(ctx context.Context) { s.do(ctx, func() { s.keep.end(time.Now()) }) }

func (s *Session) handle(ev agentchat.Event) {
	switch ev := ev.(type) {
	case agentchat.Connected:
		s.connected = true
	case agentchat.Joined:
		for _, m := range ev.History {
			s.message(m)
		}
		if !s.isIn {
			s.isIn = true
			close(s.joined)
		}
	case agentchat.Message:
		s.message(ev)
	case agentchat.Delivered:
		for _, r := range s.pending {
			r.delivered(ev.Seqs)
		}
	case agentchat.Disconnected:
		s.connected = false
	}
}

// message handles one room message: foreman's lines go to the requests
// waiting for an answer, then to the inbox if they concern the agent.
func (s *Session) message(m agentchat.Message) {
	now := time.Now()
	s.reading = true
	defer func() { s.reading = false; s.wake() }()
	for _, e := range s.rd.Message(m) {
		if e.Self {
			continue
		}
		if !e.Coordinator {
			if e.Handoff != nil {
				s.handed(*e.Handoff)
			}
			if s.rd.Mentions(e.Text) || s.overlapsMine(e) {
				s.post(e)
			}
			continue
		}
		if e.Reply == nil {
			continue
		}
		h, _ := protocol.ReadReply(e.Text)
		h = okMerged(h)
		if h.Verb == protocol.ReplyAck && h.Agent == s.self {
			delete(s.handoffs, h.Subject) // a new ACK: a handoff before it is not for this claim
		}
		news := s.concerns(h)        // before heard: MERGED ends the holding it is news about
		s.keep.heard(h, s.self, now) // replayed lines too, in order: a restarted agent learns what it holds
		if !s.answer(h, e) && news {
			s.post(e)
		}
	}
	for _, r := range s.pending {
		r.endOfMessage()
	}
	s.settle()
}

// okMerged reads foreman's "OK MERGED c" as the MERGED of c it is: an
// operator's MERGED, or, with merge mode external, the merger's (foreman
// host's), which foreman confirms so and says no MERGED of its own.
func okMerged(h protocol.Heard) protocol.Heard {
	if h.Verb != protocol.ReplyOK || h.Subject == "" {
		return h
	}
	if cmd, err := protocol.Read(h.Text); err == nil && cmd.Verb == protocol.Merged {
		return protocol.Heard{Verb: protocol.ReplyMerged, Subject: h.Subject, Text: h.Text}
	}
	return h
}

// answer offers one of foreman's lines to the requests waiting, oldest
// first; true if one took it.
func (s *Session) answer(h protocol.Heard, e Event) bool {
	for _, r := range s.pending {
		if r.live() && r.offer(h, e) {
			return true
		}
	}
	return false
}

// settle finishes the requests that have their answer.
func (s *Session) settle() {
	kept := s.pending[:0]
	for _, r := range s.pending {
		if r.finished {
			continue
		}
		kept = append(kept, r)
	}
	clear(s.pending[len(kept):])
	s.pending = kept
}

// concerns reports whether a line of foreman's is news to this agent:
// every TASKS and REVIEW (auditors answer REVIEWs), lines that name it,
// and what happens to components it holds or audited.
func (s *Session) concerns(h protocol.Heard) bool {
	switch h.Verb {
	case protocol.ReplyTasks, protocol.ReplyReview, protocol.ReplyComplete:
		return true
	case protocol.ReplyStatus, protocol.ReplyOK:
		return false // answers to whoever asked; this agent asks through the tools
	case protocol.ReplyError:
		return h.Subject == s.self || h.Subject == protocol.BuildSubject
	case protocol.ReplyEscalate:
		if h.Subject == protocol.BuildSubject {
			return true
		}
	}
	if h.Agent == s.self {
		return true
	}
	_, holds := s.keep.duties[h.Subject]
	return holds || s.audited[h.Subject]
}

// post puts an event in the inbox and wakes a waiter, at the end of the
// message it came in (an agent woken by MERGED db must also get the TASKS
// said with it). A newer TASKS replaces an older one still unread: only
// the last list is true.
func (s *Session) post(e Event) {
	if e.Reply != nil && e.Reply.Verb == "TASKS" {
		for i, old := range s.inbox {
			if old.Reply != nil && old.Reply.Verb == "TASKS" {
				s.inbox = append(s.inbox[:i], s.inbox[i+1:]...)
				break
			}
		}
	}
	s.inbox = append(s.inbox, e)
	if len(s.inbox) > inboxMax {
		s.inbox = s.inbox[len(s.inbox)-inboxMax:]
	}
	if !s.reading {
		s.wake()
	}
}

// wake hands the inbox to the first waiter, if there is something for it;
// with no waiter, it says there is news.
func (s *Session) wake() {
	if len(s.inbox) == 0 {
		return
	}
	if len(s.waiters) > 0 {
		w := s.waiters[0]
		s.waiters = s.waiters[1:]
		w.ch <- s.takeInbox()
		return
	}
	select {
	case s.news <- struct{}{}:
	default: // already said, not yet heard: once is enough
	}
}

// News is signalled when something came for the agent while it was not in
// wait(): wait() returns it at once.
func (s *Session) News() <-chan struct{} { return s.news }

// Pending is what wait() would return now, left for it.
func (s *Session) Pending(ctx context.Context) []Event {
	var out []Event
	s.do(ctx, func() { out = slices.Clone(s.inbox) })
	return out
}

func (s *Session) takeInbox() []Event {
	out := s.inbox
	s.inbox = nil
	return out
}

// checkIn says the automatic check-ins that are due.
func (s *Session) checkIn(now time.Time) {
	for _, c := range s.keep.due(now) {
		if c.Stopped {
			s.post(Event{Kind: KindNote, Text: c.Note})
			continue
		}
		s.seq++
		s.client.Send(agentchat.Line{Seq: s.seq, Text: c.Line})
	}
}

// overlapsMine reports a host's OVERLAP naming a component the agent
// holds: its work and another's would conflict (contract section 10).
func (s *Session) overlapsMine(e Event) bool {
	if len(s.rd.Hosts) > 0 && !slices.Contains(s.rd.Hosts, e.From) {
		return false
	}
	cmd, err := protocol.Read(e.Text)
	if err != nil || cmd.Verb != protocol.Overlap {
		return false
	}
	_, c := s.keep.duties[cmd.Component]
	_, d := s.keep.duties[cmd.Other]
	return c || d
}

// handed keeps a host's handoff line for the agent, and gives it to the
// claim() waiting for it.
func (s *Session) handed(h Handoff) {
	s.handoffs[h.Component] = h
	kept := s.handWait[:0]
	for _, w := range s.handWait {
		if w.c == h.Component {
			w.ch <- h
			continue
		}
		kept = append(kept, w)
	}
	s.handWait = kept
}

// awaitHandoff waits up to d for the host's handoff line about c, said
// since the agent's ACK of c; nil if none came.
func (s *Session) awaitHandoff(ctx context.Context, c string, d time.Duration) *Handoff {
	ch := make(chan Handoff, 1)
	var got *Handoff
	if !s.do(ctx, func() {
		if h, ok := s.handoffs[c]; ok {
			got = &h
			return
		}
		s.handWait = append(s.handWait, handoffWaiter{c: c, ch: ch})
	}) {
		return nil
	}
	if got != nil {
		return got
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case h := <-ch:
		return &h
	case <-t.C:
	case <-ctx.Done():
	}
	s.do(context.Background(), func() {
		for i, w := range s.handWait {
			if w.ch == ch {
				s.handWait = append(s.handWait[:i], s.handWait[i+1:]...)
				break
			}
		}
	})
	select {
	case h := <-ch:
		return &h
	default:
	}
	return nil
}

// closeAll ends every request and waiter: the session is over.
func (s *Session) closeAll() {
	for _, r := range s.pending {
		r.finish(false)
	}
	s.pending = nil
	for _, w := range s.waiters {
		close(w.ch)
	}
	s.waiters = nil
}

type waiter struct{ ch chan []Event }

// Wait returns what has come for the agent since the last Wait (TASKS,
// REVIEW, FIX, RETRY, TIMEOUT, UNBLOCKED, WAIT, ESCALATE, MERGED of what it
// holds, lines that mention it, foreman mcp's own notes), blocking up to
// timeout (at most WaitMax) until something comes. An empty list means
// nothing came.
func (s *Session) Wait(ctx context.Context, timeout time.Duration) ([]Event, error) {
	if timeout <= 0 || timeout > s.cfg.WaitMax {
		timeout = s.cfg.WaitMax
	}
	w := &waiter{ch: make(chan []Event, 1)}
	var now []Event
	if !s.do(ctx, func() {
		if len(s.inbox) > 0 {
			now = s.takeInbox()
			return
		}
		s.waiters = append(s.waiters, w)
	}) {
		return nil, ctx.Err()
	}
	if now != nil {
		return now, nil
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case evs, ok := <-w.ch:
		if !ok {
			return nil, errors.New("the session has ended")
		}
		return evs, nil
	case <-t.C:
	case <-ctx.Done():
	}
	// Leave the queue; anything handed over meanwhile is still ours.
	var late []Event
	s.do(context.Background(), func() {
		for i, x := range s.waiters {
			if x == w {
				s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
				break
			}
		}
	})
	select {
	case late = <-w.ch:
	default:
	}
	return late, ctx.Err()
}

// Holdings lists what the agent owns as far as foreman's replies tell.
func (s *Session) Holdings(ctx context.Context) []Holding {
	var out []Holding
	s.do(ctx, func() { out = s.keep.owned() })
	return out
}

// say sends the agent's lines as one message and waits for foreman's
// answer as m reads it, up to AnswerWait.
func (s *Session) say(ctx context.Context, m matcher, lines ...string) (Answer, error) {
	var cmds []protocol.Command
	for _, l := range lines {
		cmd, err := protocol.Read(l)
		if err != nil {
			return Answer{}, fmt.Errorf("not sent: %w", err)
		}
		cmds = append(cmds, cmd)
	}
	r := &request{m: m, lines: lines, done: make(chan struct{})}
	if !s.do(ctx, func() {
		now := time.Now()
		s.keep.begin(now)
		batch := make([]agentchat.Line, len(lines))
		for i, l := range lines {
			s.seq++
			batch[i] = agentchat.Line{Seq: s.seq, Text: l, Group: s.seq - uint64(i)}
			r.seqs = append(r.seqs, s.seq)
			s.keep.said(cmds[i], now)
			if cmds[i].Verb == protocol.Audit {
				s.audited[cmds[i].Component] = true
			}
		}
		s.pending = append(s.pending, r)
		s.client.Send(batch...)
	}) {
		return Answer{}, ctx.Err()
	}
	t := time.NewTimer(s.cfg.AnswerWait)
	defer t.Stop()
	select {
	case <-r.done:
	case <-t.C:
	case <-ctx.Done():
	}
	var a Answer
	if !s.do(context.Background(), func() {
		r.finish(false)
		a = r.answer(s.connected)
		s.settle()
		s.keep.end(time.Now())
	}) {
		a = r.answer(false) // Run has returned: nothing else touches r
	}
	return a, nil
}
