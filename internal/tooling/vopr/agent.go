package vopr

import (
	"math/rand/v2"
	"strings"
	"time"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/protocol"
)

// agent is a member of the room other than foreman: a connection that
// hears everything, and a voice paced one message per period, that sends
// again what the room refused as too fast. What it does is its behaviour's.
type agent struct {
	w    *world
	id   string
	name string
	rnd  *rand.Rand
	b    behaviour
	conn *conn

	out      []string   // lines waiting
	unsure   [][]string // messages sent, not yet echoed or refused, in order
	next     time.Time  // no message before
	armed    bool
	heard    map[string]bool // message ids
	said     map[uint64]bool // foreman's reply numbers already acted on
	stopped  bool            // the run is draining: the agent says nothing more
	online   bool
	conns    int  // connections so far
	careless bool // what the room refuses is not sent again

	heardAt    time.Time // the room's time of the message being read
	heardAgain bool      // it is foreman's, sent again after a restart: it may be late
}

// behaviour is what an agent does with what it hears.
type behaviour interface {
	start(a *agent)
	reply(a *agent, r reply)
	line(a *agent, from, line string) // another agent's line
}

func (w *world) newAgent(name string, b behaviour) *agent {
	a := &agent{w: w, id: agentID(w.seed, name), name: name, b: b,
		rnd: rand.New(rand.NewPCG(w.seed, hash(name))), heard: map[string]bool{}, said: map[uint64]bool{}}
	w.agents = append(w.agents, a)
	return a
}

// connect joins the room; after a cut it connects again a little later.
func (a *agent) connect() {
	var c *conn
	c = a.w.room.connect(a.id, a.name, a.w.plan.latency(), func(f frame) {
		if c == a.conn {
			a.recv(f)
		}
	})
	a.conn = c
	c.send(func() { a.w.room.join(c) })
}

func (a *agent) recv(f frame) {
	switch f.kind {
	case fJoined:
		first := a.conns == 0
		a.conns++
		a.online = true
		// What was sent and not echoed before a cut: sent again unless the
		// replay shows it.
		var again []string
		for _, lines := range a.unsure {
			if !a.inHistory(f.history, lines) {
				again = append(again, lines...)
			}
		}
		a.out = append(again, a.out...)
		a.unsure = nil
		for _, p := range f.history {
			a.hear(message(p, a.id, true))
		}
		if first {
			a.b.start(a)
		}
		a.flush()
	case fMsg:
		a.hear(message(f.post, a.id, false))
	case fRateLimited:
		if len(a.unsure) > 0 {
			lines := a.unsure[0]
			a.unsure = a.unsure[1:]
			if !a.careless {
				a.out = append(append([]string(nil), lines...), a.out...)
			}
			a.next = a.w.now().Add(a.w.room.rate + 50*time.Millisecond)
			a.flush()
		}
	case fNoChannel:
		c := a.conn
		a.w.after(time.Second+time.Duration(a.rnd.Int64N(int64(2*time.Second))), func() {
			if c == a.conn {
				c.send(func() { a.w.room.join(c) })
			}
		})
	case fClosed:
		a.online = false
		a.armed = false
		a.w.after(time.Second+time.Duration(a.rnd.Int64N(int64(2*time.Second))), a.connect)
	}
}

func (a *agent) inHistory(history []post, lines []string) bool {
	content, _ := agentchat.Redact(strings.Join(lines, "\n"))
	for _, p := range history {
		if p.from == a.id && p.content == content {
			return true
		}
	}
	return false
}

// hear reads a message: foreman's replies (each once, by its number), or
// another agent's lines.
func (a *agent) hear(m agentchat.Message) {
	if m.Notice || a.stopped {
		return
	}
	if m.ID != "" {
		if a.heard[m.ID] {
			return
		}
		a.heard[m.ID] = true
	}
	if m.Self {
		if !m.Replay && len(a.unsure) > 0 {
			a.unsure = a.unsure[1:]
		}
		return
	}
	a.heardAt, a.heardAgain = m.TS, false
	if a == a.w.hostAgent {
		a.w.check.hostHeard(m)
	}
	if m.From != a.w.foremanID {
		for l := range protocol.Lines(m.Content) {
			a.b.line(a, m.From, strings.TrimSpace(l))
		}
		return
	}
	body, seqs := m.Content, []uint64(nil)
	if st, rest, ok := agentchat.ParseStamp(m.Content); ok {
		body = rest
		a.heardAgain = st.Again
		for _, r := range st.Seqs {
			for s := r.From; s <= r.To && len(seqs) < 10000; s++ {
				seqs = append(seqs, s)
			}
		}
	}
	i := 0
	for l := range protocol.Lines(body) {
		var seq uint64
		if i < len(seqs) {
			seq = seqs[i]
		}
		i++
		if seq != 0 {
			if a.said[seq] {
				continue // a reply sent again after a restart: acted on already
			}
			a.said[seq] = true
		}
		if r, ok := parseReply(l); ok {
			a.b.reply(a, r)
		}
	}
}

// say queues lines; they go out together when the pace allows.
func (a *agent) say(lines ...string) {
	if a.stopped {
		return
	}
	a.out = append(a.out, lines...)
	a.flush()
}

// sayNow sends lines in a message of their own at once, pace or not (a
// flooder's way).
func (a *agent) sayNow(lines ...string) {
	if a.stopped || !a.online {
		return
	}
	c, content := a.conn, strings.Join(lines, "\n")
	a.unsure = append(a.unsure, lines)
	c.send(func() { a.w.room.msg(c, content) })
}

func (a *agent) flush() {
	if a.armed || !a.online || len(a.out) == 0 {
		return
	}
	if now := a.w.now(); a.next.After(now) {
		a.armed = true
		a.w.at(a.next, func() {
			a.armed = false
			a.flush()
		})
		return
	}
	lines := a.out
	a.out = nil
	a.unsure = append(a.unsure, lines)
	a.next = a.w.now().Add(a.w.room.rate + 20*time.Millisecond + time.Duration(a.rnd.Int64N(int64(50*time.Millisecond))))
	c, content := a.conn, strings.Join(lines, "\n")
	c.send(func() { a.w.room.msg(c, content) })
}

// later runs f after d, unless the agent has stopped by then.
func (a *agent) later(d time.Duration, f func()) {
	a.w.after(d, func() {
		if !a.stopped {
			f()
		}
	})
}

// jitter is d give or take a fifth.
func (a *agent) jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d - d/5 + time.Duration(a.rnd.Int64N(int64(2*d/5)+1))
}

func (a *agent) chance(p float64) bool { return a.rnd.Float64() < p }

// reply is one of foreman's lines, split as the contract writes it.
type reply struct {
	verb  protocol.ReplyVerb
	c     string
	agent string
	code  string
	rest  string
	list  []string
}

var agentVerbs = map[protocol.ReplyVerb]bool{
	protocol.ReplyAck: true, protocol.ReplyReject: true, protocol.ReplyTimeout: true,
	protocol.ReplyRetry: true, protocol.ReplyReview: true, protocol.ReplyFix: true,
	protocol.ReplyWait: true, protocol.ReplyUnblocked: true,
}

func parseReply(line string) (reply, bool) {
	w0, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	if w0 == "" {
		return reply{}, false
	}
	r := reply{verb: protocol.LookupReplyVerb(w0)}
	if r.verb == protocol.ReplyTasks {
		r.list, r.rest = protocol.TaskList(rest)
		return r, true
	}
	r.c, rest = cut(rest)
	switch {
	case agentVerbs[r.verb]:
		r.agent, rest = cut(rest)
	case r.verb == protocol.ReplyEscalate:
		r.code, rest = cut(rest)
	}
	r.rest = strings.TrimSpace(rest)
	return r, true
}

func cut(s string) (string, string) {
	w, rest, _ := strings.Cut(strings.TrimLeft(s, " "), " ")
	return w, rest
}

// isGap is foreman's gap notice: say again what you said meanwhile.
func (r reply) isGap() bool {
	return r.verb == protocol.ReplyError && r.c == protocol.BuildSubject && strings.Contains(r.rest, "may have missed lines")
}
