package vopr

import (
	"fmt"
	"time"

	"github.com/agentforeman/foreman/agentchat"
)

// The client's timing (agentchat's defaults).
const (
	echoTimeout = 30 * time.Second
	minBackoff  = 250 * time.Millisecond
	maxBackoff  = 30 * time.Second
	smoothRun   = 20
	refusalWait = 3 * time.Second
)

// client is agentchat.Client on the world's clock: one message in flight at
// a time, confirmed by the room's echo (found by its stamp); paced one
// period after the room took the last; a refused message queued again and
// the pace slowed; a connection that drops reconnects with backoff, and
// looks for its unconfirmed message in the replay before sending it again.
// Batching and stamps are the client's own (agentchat.Outbox).
type client struct {
	p       *proc
	w       *world
	conn    *conn
	latency time.Duration

	out      agentchat.Outbox
	inflight *agentchat.Batch
	tag      string
	seen     map[string]bool

	live, connecting   bool
	pinging, pingAgain bool
	attempt            int
	echoGen, paceGen   int
	paceArmed          bool
	nextSend           time.Time
	interval, base     time.Duration
	smooth             int
	leaving            bool    // the process is gone; only its last words go out
	held               []frame // arrived while the process was stopped
}

// resume reads what arrived while the process was stopped.
func (c *client) resume() {
	held := c.held
	c.held = nil
	for i, f := range held {
		if c.p.stalled || c.p.dead {
			c.held = append(c.held, held[i:]...)
			return
		}
		c.recv(f)
	}
	c.maybeSend()
}

func newClient(p *proc) *client {
	c := &client{p: p, w: p.w, latency: p.w.plan.latency(), seen: map[string]bool{}}
	if rate := p.w.room.rate; rate > 0 {
		c.interval = rate + max(rate/50, 10*time.Millisecond)
	}
	c.base = c.interval
	return c
}

// connect signs in and joins, after a handshake of a few round trips.
func (c *client) connect() {
	c.connecting = true
	c.w.after(3*c.latency+time.Millisecond, func() {
		if c.p.dead && !c.leaving {
			return
		}
		c.connecting = false
		var conn *conn
		conn = c.w.room.connect(c.p.id, "foreman", c.latency, func(f frame) {
			if conn == c.conn { // frames of an older connection are gone with it
				c.recv(f)
			}
		})
		c.conn = conn
		conn.send(func() { c.w.room.join(conn) })
	})
}

func (c *client) recv(f frame) {
	if c.p.stalled && !c.p.dead {
		c.held = append(c.held, f) // a stopped process reads nothing
		return
	}
	switch f.kind {
	case fJoined:
		c.joined(f)
	case fMsg:
		c.msg(f)
	case fPong:
		c.pinging = false
		c.p.deliver(agentchat.Clock{TS: f.ts})
		if c.pingAgain {
			c.pingAgain = false
			c.ping()
		}
	case fRateLimited:
		if c.inflight != nil {
			c.echoGen++
			c.paceFrom(f.ts)
			c.requeue()
			c.slowDown()
			c.maybeSend()
		}
	case fAgentJoined:
		if c.live {
			c.p.deliver(agentchat.AgentJoined{Channel: "#build", Agent: f.agents[0]})
		}
	case fClosed:
		c.dropped()
	case fDisplaced:
		c.conn.recv = nil
		c.live = false
		c.p.exit(errDisplaced)
	}
}

type displacedError struct{}

func (displacedError) Error() string {
	return "SESSION_DISPLACED: another connection with this identity signed in"
}

var errDisplaced error = displacedError{}

// joined is finishHistory: the replay, minus what this client delivered
// already, with the unconfirmed message looked for in it.
func (c *client) joined(f frame) {
	var history []agentchat.Message
	overlap := false
	for _, p := range f.history {
		m := message(p, c.p.id, true)
		if c.seen[key(m)] {
			overlap = true
		} else {
			history = append(history, m)
		}
	}
	var delivered *agentchat.Delivered
	if b := c.inflight; b != nil {
		found := -1
		for i := len(history) - 1; i >= 0; i-- {
			if m := history[i]; m.Self && !m.Notice && b.Is(m) {
				found = i
				break
			}
		}
		if found >= 0 {
			m := history[found]
			history = append(history[:found], history[found+1:]...)
			delivered = c.confirm(m)
		} else {
			c.requeue()
		}
	}
	for _, m := range history {
		c.seen[key(m)] = true
	}
	c.attempt = 0
	c.live = true
	c.p.deliver(agentchat.Joined{Channel: "#build", Agents: f.agents, History: history, Created: f.created, TS: f.ts,
		Replayed: len(f.history), Overlap: overlap})
	if delivered != nil {
		c.p.deliver(*delivered)
	}
	c.maybeSend()
	if c.pingAgain {
		c.pingAgain = false
		c.ping()
	}
}

func key(m agentchat.Message) string {
	if m.ID != "" {
		return m.ID
	}
	return m.TS.String() + "|" + m.From + "|" + m.Content
}

func (c *client) msg(f frame) {
	m := message(f.post, c.p.id, false)
	if m.Self && !m.Notice {
		if b := c.inflight; b != nil && b.Is(m) {
			d := c.confirm(m)
			c.p.deliver(*d)
			c.maybeSend()
			return
		}
		c.seen[key(m)] = true
		c.p.deliver(m)
		return
	}
	if c.seen[key(m)] {
		return
	}
	c.seen[key(m)] = true
	c.p.deliver(m)
}

func (c *client) confirm(m agentchat.Message) *agentchat.Delivered {
	b := c.inflight
	c.inflight = nil
	c.echoGen++
	c.seen[key(m)] = true
	c.speedUp()
	c.paceFrom(m.TS)
	return &agentchat.Delivered{Seqs: b.Seqs(), MsgID: m.ID, TS: m.TS}
}

func (c *client) requeue() {
	if c.inflight != nil {
		c.out.PushFront(c.inflight.Lines)
		c.inflight = nil
	}
}

// send queues lines, as Client.Send.
func (c *client) send(lines ...agentchat.Line) {
	if len(lines) == 0 {
		return
	}
	c.out.Push(lines...)
	c.maybeSend()
}

// maybeSend sends the next batch if the pace allows, or waits until it does.
func (c *client) maybeSend() {
	if c.p.deposed {
		return // the gate: a leader whose lease may have lapsed says nothing
	}
	if !c.live || c.inflight != nil || c.paceArmed || c.out.Len() == 0 || (c.p.stalled && !c.leaving) {
		return
	}
	now := c.w.now()
	if c.nextSend.After(now) {
		c.paceArmed = true
		c.paceGen++
		gen := c.paceGen
		c.w.at(c.nextSend, func() {
			if gen != c.paceGen {
				return
			}
			c.paceArmed = false
			c.maybeSend()
		})
		return
	}
	b, ok := c.out.Take(c.w.plan.maxMessage, c.tag)
	if !ok {
		return
	}
	c.inflight = &b
	c.echoGen++
	gen := c.echoGen
	c.w.after(echoTimeout, func() {
		if gen == c.echoGen && c.inflight != nil && c.live && !c.p.stalled {
			// No echo: reconnect, and look for the message in the replay.
			if !c.p.twin && !c.p.deposed {
				c.w.check.gone(c.w.room.now())
			}
			c.conn.hangUp()
			c.dropped()
		}
	})
	conn, content := c.conn, b.Content
	if c.w.opts.Trace != nil {
		c.w.trace("client %d sends %q", c.p.life, content)
	}
	p := c.p
	conn.send(func() {
		if p.deposed {
			c.w.fail(invDeposed, fmt.Sprintf("foreman life %d said %q after a standby took its build over", p.life, content))
		}
		c.w.room.msg(conn, content)
	})
}

// paceFrom: the next message one period after the room took the last, by
// the room's stamp read on foreman's clock.
func (c *client) paceFrom(serverTS time.Time) {
	if c.interval == 0 {
		c.nextSend = time.Time{}
		return
	}
	c.nextSend = serverTS.Add(-c.w.room.skew).Add(c.interval)
}

func (c *client) slowDown() {
	ceiling := max(8*c.w.room.rate, time.Minute)
	c.interval = min(max(2*c.interval, 10*time.Millisecond), ceiling)
	c.smooth = 0
	if later := c.w.now().Add(c.interval); later.After(c.nextSend) {
		c.nextSend = later
	}
}

func (c *client) speedUp() {
	if c.interval <= c.base {
		return
	}
	if c.smooth++; c.smooth < smoothRun {
		return
	}
	c.smooth = 0
	gap := (c.interval - c.base) * 3 / 4
	if gap < c.base/10 {
		gap = 0
	}
	c.interval = c.base + gap
}

// ping asks the room for its clock, unless an answer is on its way.
func (c *client) ping() {
	if !c.live || c.pinging {
		c.pingAgain = true
		return
	}
	c.pinging = true
	conn := c.conn
	conn.send(func() { c.w.room.ping(conn) })
}

// dropped: the connection is gone; try again after a backoff. The message
// in flight stays unconfirmed until the next replay shows it or not.
func (c *client) dropped() {
	if !c.live && c.connecting {
		return
	}
	c.live, c.pinging, c.paceArmed = false, false, false
	c.paceGen++
	c.echoGen++
	if c.leaving || c.p.dead || c.p.deposed {
		return
	}
	c.p.deliver(agentchat.Disconnected{})
	d := min(minBackoff<<min(c.attempt, 20), maxBackoff)
	c.attempt++
	half := d / 2
	d = half + time.Duration(c.w.rnd.Int64N(int64(half)+1))
	c.connecting = true
	c.w.after(d, func() {
		if !c.p.dead {
			c.connect()
		}
	})
}

// hangUp is the process killed: the connection goes with it.
func (c *client) hangUp() {
	c.live = false
	c.paceGen++
	c.echoGen++
	if c.conn != nil {
		c.conn.hangUp()
	}
}

// leaveAfter is the process exiting: a refusal gets a few seconds to reach
// the room, as the bot waits for it; then the connection closes.
func (c *client) leaveAfter(refused bool) {
	if !refused || c.conn == nil {
		c.hangUp()
		return
	}
	c.leaving = true
	c.maybeSend()
	c.w.after(refusalWait, c.hangUp)
}
