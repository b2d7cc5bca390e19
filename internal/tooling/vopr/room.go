package vopr

import (
	"fmt"
	"time"

	"github.com/agentforeman/foreman/agentchat"
)

// room is the stock AgentChat server where foreman can tell: one channel
// that lists its members and replays its last N frames (server notices
// included) to whoever joins, and tells the others who joined, content rewritten where it looks like a secret, one MSG a second
// per connection with the rest refused (not queued: the slot is used all
// the same), connections dropped, the server restarted (channel and history
// gone), and a second connection of one key displacing the first. Frames
// reach each side after that connection's latency, in order.
type room struct {
	w       *world
	rate    time.Duration
	size    int // the replay buffer, in frames
	exists  bool
	history []post
	conns   []*conn
	ids     int
	skew    time.Duration // the room's clock against the world's (jumps)
	log     []post        // every message ever posted, for the checks
}

// post is a message as the room holds it.
type post struct {
	id, from, name, content string
	ts                      time.Time
	notice                  bool
}

// conn is one connection: the room's end and the client's.
type conn struct {
	r        *room
	agent    string
	name     string
	latency  time.Duration
	member   bool
	closed   bool      // by either side
	slot     time.Time // the room's clock at the last MSG it took or refused
	toClient time.Time // when the last frame to the client arrives (frames keep their order)
	toRoom   time.Time // when the last frame to the room arrives
	recv     func(frame)
}

type frameKind int

const (
	fMsg frameKind = iota
	fJoined
	fPong
	fRateLimited
	fClosed
	fDisplaced
	fNoChannel
	fAgentJoined
)

type frame struct {
	kind    frameKind
	post    post
	replay  bool
	history []post
	created bool
	ts      time.Time
	agents  []agentchat.Agent // fJoined: the channel's members, the joiner included; fAgentJoined: the one who joined
}

// now is the room's clock, in whole milliseconds as the stock server counts.
func (r *room) now() time.Time {
	return time.UnixMilli(r.w.now().Add(r.skew).UnixMilli()).UTC()
}

// connect opens a connection for agent once its handshake is done. A
// connection already open with the same key is displaced.
func (r *room) connect(agent, name string, latency time.Duration, recv func(frame)) *conn {
	for _, c := range r.conns {
		if c.agent == agent && !c.closed {
			c.toClientSend(frame{kind: fDisplaced, ts: r.now()})
			r.close(c)
		}
	}
	c := &conn{r: r, agent: agent, name: name, latency: latency, recv: recv}
	r.conns = append(r.conns, c)
	return c
}

// join puts c in the channel (creating it if it is gone) and replays the
// history; the others hear a notice, which the history keeps too.
func (r *room) join(c *conn) {
	if c.closed {
		return
	}
	if !r.exists && c.agent != r.w.foremanID {
		// JOIN never creates a channel; only foreman's (verified) key may.
		c.toClientSend(frame{kind: fNoChannel, ts: r.now()})
		return
	}
	created := !r.exists
	r.exists = true
	c.member = true
	h := append([]post(nil), r.history...)
	var here []agentchat.Agent
	for _, o := range r.conns {
		if o.member && !o.closed {
			here = append(here, agentchat.Agent{ID: o.agent, Name: o.name})
		}
	}
	c.toClientSend(frame{kind: fJoined, history: h, created: created, ts: r.now(), agents: here})
	for _, o := range r.conns {
		if o != c && o.member && !o.closed {
			o.toClientSend(frame{kind: fAgentJoined, ts: r.now(), agents: []agentchat.Agent{{ID: c.agent, Name: c.name}}})
		}
	}
	r.publish(post{from: "@server", content: c.name + " joined #build", notice: true, ts: r.now()})
}

// msg is a MSG from c arriving at the room.
func (r *room) msg(c *conn, content string) {
	if c.closed {
		return
	}
	now := r.now()
	// The stock server compares its clock with the last slot: a clock
	// that went back refuses until it has caught up.
	if !c.slot.IsZero() && now.Sub(c.slot) < r.rate {
		c.slot = now
		c.toClientSend(frame{kind: fRateLimited, ts: now})
		r.w.count(faultRefused)
		return
	}
	c.slot = now
	if !c.member {
		return
	}
	text, kinds := agentchat.Redact(content)
	if len(kinds) > 0 {
		r.w.count(faultRedacted)
	}
	r.ids++
	r.publish(post{id: fmt.Sprintf("%d-%06d", now.UnixMilli(), r.ids), from: c.agent, name: c.name, content: text, ts: now})
}

func (r *room) publish(p post) {
	if !r.exists {
		return
	}
	r.history = append(r.history, p)
	if len(r.history) > r.size {
		r.history = r.history[len(r.history)-r.size:]
	}
	if !p.notice {
		r.log = append(r.log, p)
		r.w.check.posted(p)
	}
	for _, c := range r.conns {
		if c.member && !c.closed {
			c.toClientSend(frame{kind: fMsg, post: p, ts: p.ts})
		}
	}
}

func (r *room) ping(c *conn) {
	if !c.closed {
		c.toClientSend(frame{kind: fPong, ts: r.now()})
	}
}

// close ends c from the room's side: the client hears it after whatever
// was already on its way.
func (r *room) close(c *conn) {
	if c.closed {
		return
	}
	if fm := r.w.fm; fm != nil && fm.cl != nil && fm.cl.conn == c && !fm.dead {
		r.w.check.gone(r.now())
	}
	c.toClientSend(frame{kind: fClosed, ts: r.now()})
	c.closed, c.member = true, false
}

// restart is the server restarted: every connection cut, the channel and
// its history gone.
func (r *room) restart() {
	for _, c := range r.conns {
		r.close(c)
	}
	r.conns = nil
	r.exists, r.history = false, nil
}

// hangUp is the client going away (its process killed, or giving up on the
// connection): frames on their way to it are lost; what it sent before
// still reaches the room, which then closes the connection.
func (c *conn) hangUp() {
	c.recv = nil
	c.send(func() { c.r.close(c) })
}

func (c *conn) toClientSend(f frame) {
	at := c.r.w.now().Add(c.latency)
	if at.Before(c.toClient) {
		at = c.toClient
	}
	c.toClient = at
	c.r.w.at(at, func() {
		if c.recv != nil {
			c.recv(f)
		}
	})
}

// send is a frame from the client: it reaches the room after the latency,
// unless the connection is closed by then.
func (c *conn) send(f func()) {
	at := c.r.w.now().Add(c.latency)
	if at.Before(c.toRoom) {
		at = c.toRoom
	}
	c.toRoom = at
	c.r.w.at(at, func() {
		if !c.closed {
			f()
		}
	})
}

// message is p as a client with sender id self reads it.
func message(p post, self string, replay bool) agentchat.Message {
	m := agentchat.Message{ID: p.id, From: p.from, FromName: p.name, To: "#build", Content: p.content,
		TS: p.ts, Replay: replay, Notice: p.notice, Self: self != "" && p.from == self}
	if !m.Notice {
		if st, _, ok := agentchat.ParseStamp(m.Content); ok {
			m.Stamp = &st
		}
	}
	return m
}
