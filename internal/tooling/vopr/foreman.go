package vopr

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/node"
	"github.com/agentforeman/foreman/internal/recovery"
	"github.com/agentforeman/foreman/protocol"
)

// The bot's timing (internal/bot).
const (
	aliveEvery     = 1 * time.Second
	heartbeatEvery = 2 * time.Second
	minPingGap     = 200 * time.Millisecond
)

// proc is one foreman process: internal/bot's loop on the world's clock.
// Each room event is handled, the node's work committed, and only then is
// what it said handed to the client; deadlines ask the room for its clock
// and fire by it; the alive mark is saved every two seconds.
type proc struct {
	w    *world
	life int
	id   string
	twin bool // a second foreman with this identity and a journal of its own
	// deposed: a standby took the build over while this one was stalled
	// (Options.Takeovers); its gate is shut and its log fenced.
	deposed bool
	d       *disk
	st      *storage
	sess    *recovery.Session
	cl      *client
	clock   recovery.RoomClock

	dead      bool
	lastPing  time.Time
	lastHeard time.Time // when the room last sent a timestamp, by the world's clock
	timerGen  int
	stalled   bool
	failed    []node.Entry // a commit that failed: only the last snapshot keeps them
}

// start opens the journal and connects; false if foreman would not start
// (a damaged journal), with the error.
func (p *proc) start() error {
	p.st = newStorage(p.w, p.d, p.life)
	cfg := recovery.Config{
		Node: node.Config{Engine: p.w.engCfg, Storage: p.st, SnapshotEvery: p.w.plan.snapshotEvery,
			Observe: func(ev *coordinator.Event, said []coordinator.Reply) { p.w.check.observed(p, ev, said) }},
		Build: p.w.engCfg.Build, History: p.w.room.size, JournalName: "journal sim", Self: p.id,
		Instance: func() string { return p.w.instance(p.life) },
	}
	sess, err := recovery.Open(cfg)
	if err != nil {
		return err
	}
	p.sess = sess
	if !p.twin && p.w.broken == "" {
		p.w.check.opened(p)
	}
	p.cl = newClient(p)
	p.cl.tag = sess.Tag()
	p.cl.connect()
	p.w.after(aliveEvery, p.aliveTick)
	return nil
}

func (p *proc) aliveTick() {
	if p.dead {
		return
	}
	// A quiet room is asked its clock (the bot's heartbeat), so that the
	// alive mark follows a quiet stretch.
	if now := p.w.now(); !p.stalled && p.sess.InRoom() && now.Sub(p.lastHeard) >= heartbeatEvery && now.Sub(p.lastPing) >= heartbeatEvery {
		p.lastPing = now
		p.cl.ping()
	}
	if at := p.sess.AliveMark(); !p.stalled && !at.IsZero() {
		_ = p.st.SaveAlive(at)
	}
	p.w.after(aliveEvery, p.aliveTick)
}

// deliver is an event from the client, handled as the bot's loop does:
// handled, then committed and sent.
func (p *proc) deliver(ev agentchat.Event) {
	if p.dead {
		return
	}
	if err := p.handle(ev); err != nil {
		p.exit(err)
		return
	}
	if p.dead || !p.w.killPoint(p, "handled") {
		return
	}
	p.flush()
}

// handle is internal/bot's handle, for the events the room model sends.
func (p *proc) handle(ev agentchat.Event) error {
	now := p.w.now()
	if p.w.opts.Trace != nil {
		p.w.trace("foreman %d hears %s", p.life, describe(ev))
	}
	switch ev := ev.(type) {
	case agentchat.Joined:
		p.clock.Saw(ev.TS, now)
		if p.w.opts.Trace != nil {
			alive, _ := p.st.Alive()
			p.w.trace("foreman %d joins: engine at %s, alive mark %s", p.life, p.w.since(p.sess.Node().Engine().Now()), p.w.since(alive))
		}
		j, err := p.sess.Join(recovery.Join{At: ev.TS, History: ev.History, Created: ev.Created, Replayed: ev.Replayed, Overlap: ev.Overlap,
			Members: ev.Agents})
		if err != nil {
			return p.refuse(err)
		}
		p.w.check.joined(p, j, ev)
		if j.Started {
			p.cl.tag = p.sess.Tag()
			if !p.twin && !p.deposed {
				p.w.tag = p.sess.Tag()
			}
		}
		if j.CaughtUp {
			lines := make([]agentchat.Line, len(j.Resend))
			for i, l := range j.Resend {
				lines[i] = wireLine(l)
			}
			p.w.check.sending(lines, true)
			if p.w.opts.Trace != nil {
				p.w.trace("foreman %d caught up: %d found, sure %v, last echo %v, sends again %v", p.life, j.Found, j.Sure, p.sess.Node().LastEcho(), j.Resend)
			}
			p.cl.send(lines...)
		}
		if j.Gap != nil {
			p.w.count(faultGap)
		}
	case agentchat.Message:
		p.clock.Saw(ev.TS, now)
		p.sess.Saw(ev.TS)
		p.lastHeard = now
		if ev.Self {
			if err := p.sess.Hear(ev); err != nil {
				return p.refuse(err)
			}
			return nil
		}
		if ev.Notice || !p.sess.InRoom() {
			return nil
		}
		return p.sess.Hear(ev)
	case agentchat.Delivered:
		p.clock.Saw(ev.TS, now)
		p.lastHeard = now
		p.sess.Delivered(ev)
	case agentchat.Clock:
		p.clock.Saw(ev.TS, now)
		p.lastHeard = now
		p.sess.Clock(ev.TS)
	case agentchat.AgentJoined:
		p.sess.Members(ev.Agent)
	case agentchat.Disconnected:
		p.sess.Disconnected()
	}
	return nil
}

// refusal is foreman refusing to coordinate: it says so, then exits.
type refusal struct{ err *recovery.RefusedError }

func (r *refusal) Error() string { return r.err.Why }

func (p *proc) refuse(err error) error {
	var re *recovery.RefusedError
	if !errors.As(err, &re) {
		return err
	}
	p.cl.send(agentchat.Line{Text: protocol.Error(protocol.BuildSubject, "foreman will not coordinate here: "+re.Room).Text, Urgent: true})
	return &refusal{re}
}

// flush commits what the node did, then hands what it said to the client,
// then saves a snapshot if one is due: with a chance to be killed between
// each.
func (p *proc) flush() {
	if !p.w.killPoint(p, "before-commit") {
		return
	}
	rd, err := p.sess.Commit()
	if err != nil {
		p.failed = rd.Entries
		p.exit(err)
		return
	}
	p.w.check.committed(p, rd.Entries)
	if !p.w.killPoint(p, "after-commit") {
		return
	}
	if len(rd.Messages) > 0 {
		lines := make([]agentchat.Line, len(rd.Messages))
		for i, l := range rd.Messages {
			lines[i] = wireLine(l)
		}
		p.w.check.sending(lines, false)
		if p.w.opts.Trace != nil {
			for _, l := range lines {
				p.w.trace("foreman %d says #%d %s", p.life, l.Seq, l.Text)
			}
		}
		p.cl.send(lines...)
	}
	if rd.Snapshot != nil {
		_ = p.st.SaveSnapshot(rd.Snapshot)
	}
	p.armTimer()
}

func wireLine(l node.Line) agentchat.Line {
	return agentchat.Line{Seq: l.Seq, Text: l.Text, Group: l.Group, Urgent: l.Urgent, Resent: l.Resent}
}

// armTimer wakes foreman when, by its clock, the room's clock reaches the
// next deadline: it then asks the room for its clock (a deadline fires by
// the room's time, after every line the room sent before).
func (p *proc) armTimer() {
	p.timerGen++
	if !p.sess.InRoom() {
		return
	}
	d, ok := p.sess.Node().Engine().NextDeadline()
	if !ok {
		return
	}
	at := p.clock.LocalFor(d)
	if next := p.lastPing.Add(minPingGap); at.Before(next) {
		at = next
	}
	gen := p.timerGen
	p.w.at(at, func() {
		if p.dead || gen != p.timerGen || p.stalled {
			return
		}
		p.lastPing = p.w.now()
		p.cl.ping()
	})
}

// reload is SIGHUP: the components and the roles read again (the bot's
// reload, through the session).
func (p *proc) reload(comps []coordinator.Component, roles coordinator.Roles) {
	if p.dead || p.stalled || !p.sess.Node().Started() {
		return
	}
	p.sess.Reload(p.clock.Now(p.w.now()), comps, roles)
	p.flush()
}

// stall stops the process (SIGSTOP) until resume: what arrives waits.
func (p *proc) stall() {
	p.stalled = true
	if !p.twin {
		p.w.check.stalled(p.w.room.now())
	}
}

func (p *proc) resume() {
	if p.dead || !p.stalled {
		return
	}
	p.stalled = false
	if !p.twin {
		p.w.check.resumed(p.w.room.now())
	}
	// The bot's loop picks among what is ready at random (Go's select):
	// the alive mark may be saved before what arrived meanwhile is read.
	if at := p.sess.AliveMark(); p.w.rnd.IntN(2) == 0 && !at.IsZero() {
		_ = p.st.SaveAlive(at)
	}
	p.cl.resume()
	if !p.dead {
		p.armTimer()
	}
}

// kill is kill -9, or the machine's power: nothing more is written and
// the connection drops. The journal syncs each alive mark it writes
// (internal/journal), so none is lost; in a cluster the mark rides on the
// lease's renewals, and what was noted since the last one is.
func (p *proc) kill() {
	if p.dead {
		return
	}
	p.dead = true
	var lag time.Duration
	if p.w.opts.Takeovers {
		lag = renewEvery
	}
	p.d.crash(p.w.now(), lag)
	if p.cl != nil {
		p.cl.hangUp()
	}
	p.w.ended(p, nil)
}

// exit is foreman stopping by itself: a refusal, a displaced connection, a
// journal that failed. It commits what it can and saves a last snapshot,
// as internal/bot's close does.
func (p *proc) exit(err error) {
	if p.dead {
		return
	}
	var re *refusal
	refused := errors.As(err, &re)
	if p.deposed {
		// The cluster's bot stops with its log fenced: nothing of its
		// last words is written, and its alive marks went with its lease.
		p.dead = true
		if p.cl != nil {
			p.cl.hangUp()
		}
		p.w.ended(p, err)
		return
	}
	if p.sess != nil && p.sess.Node().Started() {
		// internal/bot's close: what is left goes to the journal, then a
		// last snapshot, which holds what a failed commit did not.
		if rd, cerr := p.sess.Commit(); cerr == nil {
			p.st.saveNow(p.sess.Node().Snapshot())
			p.w.check.committed(p, p.failed)
			p.w.check.committed(p, rd.Entries)
		}
	}
	p.dead = true
	p.d.close()
	if p.cl != nil {
		p.cl.leaveAfter(refused)
	}
	p.w.ended(p, err)
}

func describe(ev agentchat.Event) string {
	switch ev := ev.(type) {
	case agentchat.Joined:
		return fmt.Sprintf("joined at %s, %d in history, created %v", ev.TS.Format("15:04:05.000"), len(ev.History), ev.Created)
	case agentchat.Message:
		return fmt.Sprintf("message %s from %s self=%v: %q", ev.ID, ev.From, ev.Self, clip(ev.Content))
	case agentchat.Delivered:
		return fmt.Sprintf("delivered %v as %s", ev.Seqs, ev.MsgID)
	case agentchat.Clock:
		return "clock " + ev.TS.Format("15:04:05.000")
	case agentchat.AgentJoined:
		return fmt.Sprintf("%s (%s) joined", ev.Agent.ID, ev.Agent.Name)
	case agentchat.Disconnected:
		return "disconnected"
	}
	return fmt.Sprintf("%T", ev)
}
