package vopr

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/node"
	"github.com/agentforeman/foreman/internal/recovery"
	"github.com/agentforeman/foreman/protocol"
)

// The invariants.
const (
	invTwoOwners   = "no component has two owners"
	invTwice       = "no reply is said twice unless marked may repeat"
	invLiveTimeout = "no builder that checked in within its deadline is timed out"
	invLateClock   = "after a restart no deadline is later than the time foreman was away allows"
	invHeardOnce   = "every line heard is handled once or said missed in a gap notice"
	invRestart     = "after a restart the engine equals one that never stopped"
	invEnd         = "every build ends COMPLETE or with each unfinished component held with a reason"
	invPersist     = "no reply is sent before the journal holds it"
	invRefusal     = "foreman refuses only what it cannot account for"
	invDeposed     = "a foreman whose build a standby took over says nothing more"
	invHandoff     = "a handoff pin always points at the last tip the departed builder pushed before it left"
	invOverlapDone = "no OVERLAP for a merged component"
	invOverlapKeep = "an OVERLAP never changes an owner, a deadline or a merged component; with warn, no state either"
)

// said is one reply the engine said.
type said struct {
	seq   uint64
	text  string
	at    time.Time
	group uint64
}

type interval struct{ from, to time.Time }

type ownerKey struct{ c, agent string }

// checker watches the run from outside foreman: the journal's commits, what
// the client is handed, and the room. Foreman's own state is never trusted
// for a verdict, only compared.
type checker struct {
	w      *world
	reader protocol.Reader

	// What the journal holds, in order: the history of the build.
	chain      []node.Entry
	replies    map[uint64]said
	maxSeq     uint64
	ids        map[string]uint64
	before     map[string]bool // ids in the room when the build started: never commands
	gaps       []interval
	startAt    time.Time
	observe    map[*coordinator.Event][]said // said in this life, not yet committed
	shadow     *node.Node                    // the run that never stopped
	shadowSaid []coordinator.Reply

	// The room.
	unmarked map[uint64]int
	inRoom   map[uint64]bool
	checkins map[ownerKey][]time.Time
	complete bool

	// Ownership, replaying the replies in order as the room has them.
	cursor   uint64 // replies processed
	entry    int    // entries of the chain processed for ABORTs
	owner    map[string]string
	assignTo map[string]string
	resolved map[string]bool
	restart  map[string]time.Time // when the owner's deadline last began

	// Work in progress (section 10): when each reply first reached the
	// room, the departures foreman's lines say, the ACKs that named the
	// branch a departed builder left, the host's handoff lines not yet
	// matched to one, and what the host heard merged.
	postedAt   map[uint64]time.Time
	leftAt     map[string]departed
	handed     map[string][]handed
	handoffs   []handoffSaid
	hostMerged map[string]bool

	// Time that is not a builder's: foreman away, or paused by an operator.
	away     []interval
	awayFrom time.Time
	// Stalls: foreman in the room but handling nothing, and saving no
	// alive mark. A stall that ends in a kill is downtime foreman cannot
	// tell from the rest.
	stalls    []interval
	stalledAt time.Time
	// The room's clock jumping ahead: time foreman's mark cannot follow.
	jumps []interval
	// began is when committed replies began each builder's deadline.
	began    map[ownerKey][]time.Time
	pauses   []interval
	pausedAt time.Time
}

func newChecker(w *world) *checker {
	c := &checker{w: w, reader: protocol.Reader{Mentions: w.engCfg.Mentions},
		replies: map[uint64]said{}, ids: map[string]uint64{}, observe: map[*coordinator.Event][]said{},
		unmarked: map[uint64]int{}, inRoom: map[uint64]bool{}, checkins: map[ownerKey][]time.Time{},
		owner: map[string]string{}, assignTo: map[string]string{}, resolved: map[string]bool{}, restart: map[string]time.Time{}, began: map[ownerKey][]time.Time{},
		postedAt: map[uint64]time.Time{}, leftAt: map[string]departed{}, handed: map[string][]handed{}, hostMerged: map[string]bool{}}
	shadow, err := node.Open(node.Config{Engine: w.engCfg, SnapshotEvery: -1,
		Observe: func(_ *coordinator.Event, out []coordinator.Reply) { c.shadowSaid = append(c.shadowSaid, out...) }})
	if err != nil {
		panic(err) // the world's configuration is checked when it is made
	}
	c.shadow = shadow
	return c
}

func (c *checker) fail(inv, format string, args ...any) {
	c.w.fail(inv, fmt.Sprintf(format, args...))
}

// observed is the live node's Observe: what an event said, not yet durable.
func (c *checker) observed(p *proc, ev *coordinator.Event, out []coordinator.Reply) {
	if p.deposed {
		return // what it handles after the takeover never reaches the log
	}
	if p.twin || len(out) == 0 {
		if !p.twin {
			c.observe[ev] = nil
		}
		return
	}
	first := p.sess.Node().Produced() - uint64(len(out)) + 1
	s := make([]said, len(out))
	for i, r := range out {
		s[i] = said{seq: first + uint64(i), text: r.Text, at: r.At}
	}
	c.observe[ev] = s
}

// lifeEnded forgets what the dead life said and never committed.
func (c *checker) lifeEnded() { clear(c.observe) }

// committed is a journal commit: the history grows, and must grow as a run
// that never stopped would have it.
func (c *checker) committed(p *proc, entries []node.Entry) {
	if p.twin {
		return
	}
	for _, e := range entries {
		if e.Index != uint64(len(c.chain))+1 {
			c.fail(invRestart, "the journal got entry %d after entry %d", e.Index, len(c.chain))
			return
		}
		c.chain = append(c.chain, e)
		if e.Confirm != nil {
			c.shadow.ConfirmRanges(e.Confirm.Seqs, e.Confirm.MsgID, e.Confirm.TS)
			c.shadow.Ready()
			continue
		}
		ev := e.Event
		switch ev.Kind {
		case coordinator.KindStart:
			c.startAt = ev.At
			c.before = map[string]bool{}
			for _, id := range ev.Seen {
				c.before[id] = true
			}
		case coordinator.KindMessage:
			if prev, ok := c.ids[ev.Msg.ID]; ok && ev.Msg.ID != "" {
				c.fail(invHeardOnce, "message %s from %s handled twice: entries %d and %d", ev.Msg.ID, ev.Msg.From, prev, e.Index)
				return
			}
			c.ids[ev.Msg.ID] = e.Index
		case coordinator.KindGap:
			c.gaps = append(c.gaps, interval{ev.Since, ev.Until})
		}
		if ev.Kind == coordinator.KindMessage && ev.Msg.From == c.w.hostAgent.id {
			c.overlapCheck(ev)
		}
		live, ok := c.observe[ev]
		if !ok {
			c.fail(invRestart, "entry %d (%s) was committed but never handled by this life", e.Index, ev.Kind)
			return
		}
		delete(c.observe, ev)
		c.shadowSaid = c.shadowSaid[:0]
		if !c.shadow.Step(*ev) {
			c.fail(invRestart, "entry %d (%s %s) was handled, but an engine that never stopped would not handle it", e.Index, ev.Kind, ev.Msg.ID)
			return
		}
		c.shadow.Ready()
		if len(live) != len(c.shadowSaid) {
			c.fail(invRestart, "entry %d (%s): foreman said %q, an engine that never stopped says %q", e.Index, ev.Kind, texts(live), coordinator.Texts(c.shadowSaid))
			return
		}
		for i, s := range live {
			if s.text != c.shadowSaid[i].Text || !s.at.Equal(c.shadowSaid[i].At) {
				c.fail(invRestart, "entry %d (%s): foreman said %q at %s, an engine that never stopped says %q at %s",
					e.Index, ev.Kind, s.text, c.w.since(s.at), c.shadowSaid[i].Text, c.w.since(c.shadowSaid[i].At))
				return
			}
			s.group = e.Index
			if s.seq != c.maxSeq+1 {
				c.fail(invRestart, "reply %q numbered #%d after #%d", s.text, s.seq, c.maxSeq)
				return
			}
			c.maxSeq = s.seq
			c.replies[s.seq] = s
			c.noteBegan(s)
		}
	}
}

func texts(s []said) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = x.text
	}
	return out
}

// opened is a restart: the node read back from the journal must be the
// node of a run that never stopped, fed the same entries.
func (c *checker) opened(p *proc) {
	n := p.sess.Node()
	if got, want := n.Produced(), c.shadow.Produced(); got != want {
		c.fail(invRestart, "restarted with %d replies produced; a run that never stopped produced %d (the journal holds %d entries, %s)", got, want, len(c.chain), p.d.describe())
		return
	}
	a, _ := json.Marshal(n.Engine().Snapshot())
	b, _ := json.Marshal(c.shadow.Engine().Snapshot())
	if string(a) != string(b) {
		c.fail(invRestart, "the engine read back from the journal differs from one that never stopped:\n  restarted: %s\n  never stopped: %s", a, b)
		return
	}
	ua, ub := n.Unconfirmed(), c.shadow.Unconfirmed()
	if !slices.Equal(ua, ub) {
		c.fail(invRestart, "restarted with replies %v unconfirmed; a run that never stopped has %v", ua, ub)
		return
	}
	if n.LastEcho() != c.shadow.LastEcho() {
		c.fail(invRestart, "restarted with the last echo %v; a run that never stopped has %v", n.LastEcho(), c.shadow.LastEcho())
		return
	}
	ia, ta := n.LastMessage()
	ib, tb := c.shadow.LastMessage()
	if ia != ib || !ta.Equal(tb) {
		c.fail(invRestart, "restarted with the last message %s; a run that never stopped has %s", ia, ib)
	}
}

// sending is lines handed to the client: each must be in the journal, as
// the journal has it.
func (c *checker) sending(lines []agentchat.Line, resent bool) {
	for _, l := range lines {
		s, ok := c.replies[l.Seq]
		if !ok {
			c.fail(invPersist, "reply #%d %q handed to the room before the journal held it", l.Seq, l.Text)
			return
		}
		if s.text != l.Text {
			c.fail(invPersist, "reply #%d sent as %q, but the journal has %q", l.Seq, l.Text, s.text)
			return
		}
	}
}

// joined is foreman back in the room: the time away ends.
func (c *checker) joined(p *proc, j recovery.Joined, ev agentchat.Joined) {
	if p.deposed {
		return
	}
	if p.twin {
		if j.Started {
			c.w.limitReached("a second foreman with this identity started a build: the room's history no longer showed the first one's stamps (docs/RELIABILITY.md, known limits)")
		}
		return
	}
	if j.Started && c.startAt != (time.Time{}) {
		c.w.limitReached("a foreman whose journal was deleted started a new build: the room's history no longer showed its stamps (docs/RELIABILITY.md, known limits)")
		return
	}
	if !c.awayFrom.IsZero() {
		c.away = append(c.away, interval{c.awayFrom, ev.TS})
		c.awayFrom = time.Time{}
	}
	c.deadlinesAfterRestart(p, ev.TS)
}

// aliveSlack is how far before a stop foreman's last alive mark on disk
// may be, each stop: a room quiet for heartbeatEvery is asked its clock at
// the next tick, its answer saved at the tick after (ticks aliveEvery
// apart), and the answer takes up to the room's latency (at most 200 ms
// here; a second allowed).
const aliveSlack = heartbeatEvery + 2*aliveEvery + time.Second

// deadlinesAfterRestart checks each builder's deadline once foreman is back
// at at (contract section 3): a restart counts only the time foreman was
// away, so no deadline may be later than the builder's last check-in, the
// deadline and the time away or paused since, give or take what foreman
// could not know (the alive mark's age when it stopped, a stall before
// it). An earlier one is invLiveTimeout's to judge, if it fires.
func (c *checker) deadlinesAfterRestart(p *proc, at time.Time) {
	v := p.sess.Node().Engine().View()
	if v.Paused || !c.pausedAt.IsZero() {
		return
	}
	rules := c.w.engCfg.Rules
	deadline := rules.CheckinInterval * time.Duration(rules.MissedCheckins)
	for _, cv := range v.Components {
		if cv.Next != "timeout" || cv.Owner == "" || cv.Deadline.IsZero() {
			continue
		}
		last := cv.Since
		if t := c.restart[cv.Name]; t.After(last) {
			last = t
		}
		// The replies that begin a deadline, committed or said in this
		// join and not yet committed (a FIX for an AUDIT FAIL heard in
		// the history).
		k := ownerKey{cv.Name, cv.Owner}
		for _, t := range c.began[k] {
			if t.After(last) && !t.After(at) {
				last = t
			}
		}
		for _, out := range c.observe {
			for _, r := range out {
				if kk, ok := beginsDeadline(r); ok && kk == k && r.at.After(last) && !r.at.After(at) {
					last = r.at
				}
			}
		}
		for _, t := range c.checkins[ownerKey{cv.Name, cv.Owner}] {
			if t.After(last) && !t.After(at) {
				last = t
			}
		}
		if last.After(at) {
			continue
		}
		excused := at.Sub(last) - c.active(last, at)
		for _, st := range c.stalls {
			excused += overlap(st, last, at)
		}
		if !c.stalledAt.IsZero() {
			excused += overlap(interval{c.stalledAt, at}, last, at)
		}
		for _, j := range c.jumps {
			if j.to.After(last) && !j.to.After(at) {
				excused += j.to.Sub(j.from)
			}
		}
		want := last.Add(deadline + excused)
		// Each stop within the deadline may add its own slack.
		slack := aliveSlack
		if c.w.opts.Takeovers {
			slack += renewEvery // the mark rides on the lease's renewals
		}
		stops := 0
		for _, a := range c.away {
			if overlap(a, last, at) > 0 {
				stops++
			}
		}
		slack *= time.Duration(max(stops, 1))
		if late := cv.Deadline.Sub(want); late > slack {
			c.fail(invLateClock, "%s %s (%s, deadline %s) times out at %s after the restart at %s, %s later than its last check-in at %s allows (away %v, paused %v, stalled %v)",
				cv.Name, cv.Owner, cv.State, deadline, c.w.since(cv.Deadline), c.w.since(at), late, c.w.since(last), c.spans(c.away), c.spans(c.pauses), c.spans(c.stalls))
		}
	}
	c.resumed(at) // a stall of a life that died: it ended with it
}

// beginsDeadline reports whose deadline a reply begins: an ACK, FIX or
// UNBLOCKED names the component and its builder.
func beginsDeadline(r said) (ownerKey, bool) {
	rp, ok := parseReply(r.text)
	if !ok {
		return ownerKey{}, false
	}
	switch rp.verb {
	case protocol.ReplyAck, protocol.ReplyFix, protocol.ReplyUnblocked:
		return ownerKey{rp.c, rp.agent}, true
	}
	return ownerKey{}, false
}

// noteBegan keeps when each committed reply began a builder's deadline.
func (c *checker) noteBegan(r said) {
	if k, ok := beginsDeadline(r); ok {
		c.began[k] = append(c.began[k], r.at)
	}
}

// jumped is the room's clock jumping ahead by d, to at.
func (c *checker) jumped(at time.Time, d time.Duration) {
	if d > 0 {
		c.jumps = append(c.jumps, interval{at.Add(-d), at})
	}
}

// stalled and resumed bound a stall of foreman's.
func (c *checker) stalled(at time.Time) {
	if c.stalledAt.IsZero() {
		c.stalledAt = at
	}
}

func (c *checker) resumed(at time.Time) {
	if !c.stalledAt.IsZero() {
		c.stalls = append(c.stalls, interval{c.stalledAt, at})
		c.stalledAt = time.Time{}
	}
}

// gone is foreman out of the room from the room's time at: killed, exited,
// or its connection dropped.
func (c *checker) gone(at time.Time) {
	if c.awayFrom.IsZero() {
		c.awayFrom = at
	}
}

// posted is a message the room took.
func (c *checker) posted(p post) {
	if p.from != c.w.foremanID {
		for l := range protocol.Lines(p.content) {
			cmd, err := c.reader.Read(l)
			var pe *protocol.ParseError
			if err != nil && (!errors.As(err, &pe) || !pe.CheckIn()) {
				continue
			}
			switch cmd.Verb {
			case protocol.Progress, protocol.Blocked, protocol.Conflict, protocol.Ready:
				k := ownerKey{cmd.Component, p.from}
				c.checkins[k] = append(c.checkins[k], p.ts)
			}
		}
		return
	}
	st, body, ok := agentchat.ParseStamp(p.content)
	if !ok || c.w.fm == nil || st.Tag != c.w.tag {
		return // a refusal, or a twin's build
	}
	var seqs []uint64
	for _, r := range st.Seqs {
		for s := r.From; s <= r.To; s++ {
			seqs = append(seqs, s)
		}
	}
	i := 0
	for l := range protocol.Lines(body) {
		if i >= len(seqs) {
			break
		}
		s := seqs[i]
		i++
		if !c.inRoom[s] {
			c.postedAt[s] = p.ts
		}
		c.inRoom[s] = true
		if !st.Again {
			if c.unmarked[s]++; c.unmarked[s] > 1 {
				c.fail(invTwice, "reply #%d %q is in the room twice, unmarked", s, strings.TrimSpace(l))
				return
			}
		}
	}
	c.advance()
}

// advance replays, in order, the replies the room now has, with the
// builders' ABORTs the journal took between them, and checks who owns
// what, and every TIMEOUT against the builder's check-ins.
func (c *checker) advance() {
	for c.inRoom[c.cursor+1] {
		c.cursor++
		s, ok := c.replies[c.cursor]
		if !ok {
			c.fail(invPersist, "reply #%d is in the room but not in the journal", c.cursor)
			return
		}
		for c.entry < len(c.chain) && c.chain[c.entry].Index <= s.group {
			c.aborts(c.chain[c.entry])
			c.entry++
		}
		c.reply(s)
		if c.w.failed() {
			return
		}
	}
	c.matchHandoffs()
}

func (c *checker) aborts(e node.Entry) {
	if e.Event == nil || e.Event.Kind != coordinator.KindMessage {
		return
	}
	m := e.Event.Msg
	n := 0
	for l := range protocol.Lines(m.Content) {
		cmd, err := c.reader.Read(l)
		if err == nil && cmd.Verb == protocol.NoVerb {
			continue
		}
		if n++; n > coordinator.MaxCommands {
			return
		}
		if err == nil && cmd.Verb == protocol.Abort && c.owner[cmd.Component] == m.From {
			c.left(cmd.Component, m.From, m.At)
			c.owner[cmd.Component] = ""
		}
	}
}

func (c *checker) reply(s said) {
	r, _ := parseReply(s.text)
	switch r.verb {
	case protocol.ReplyAck:
		c.handedOver(r)
		prev := c.owner[r.c]
		if prev != "" && prev != r.agent && c.assignTo[r.c] != r.agent {
			c.fail(invTwoOwners, "%s ACKed to %s (reply #%d) while %s still owns it", r.c, r.agent, s.seq, prev)
			return
		}
		if prev != r.agent || c.assignTo[r.c] == r.agent || c.resolved[r.c] {
			c.restart[r.c] = s.at
		}
		c.owner[r.c] = r.agent
		delete(c.assignTo, r.c)
		delete(c.resolved, r.c)
	case protocol.ReplyFix, protocol.ReplyUnblocked:
		// A WAIT begins no deadline (contract section 5): after BLOCKED or
		// CONFLICT the builder's own line was the check-in, and after the
		// host's OVERLAP (rules.overlap wait) there was none.
		if c.owner[r.c] == r.agent {
			c.restart[r.c] = s.at
		}
	case protocol.ReplyTimeout:
		c.timeout(r, s)
		c.left(r.c, c.owner[r.c], c.postedAt[s.seq])
		c.owner[r.c] = ""
	case protocol.ReplyRetry:
		c.left(r.c, c.owner[r.c], c.postedAt[s.seq])
		c.owner[r.c] = ""
	case protocol.ReplyMerged:
		c.owner[r.c] = ""
	case protocol.ReplyEscalate:
		if strings.Contains(r.rest, " let "+r.c+" go") || strings.Contains(r.rest, " gave up "+r.c+" ") {
			c.owner[r.c] = ""
		}
	case protocol.ReplyComplete:
		c.complete = true
	case protocol.ReplyTasks:
		c.complete = false // a component added after COMPLETE reopens the build
	case protocol.ReplyOK:
		verb, rest := cut(r.c + " " + r.rest)
		comp, rest := cut(rest)
		switch verb {
		case "RELEASE":
			c.left(comp, c.owner[comp], c.postedAt[s.seq])
			c.owner[comp] = ""
		case "ASSIGN":
			who, _ := cut(rest)
			c.assignTo[comp] = who
			if c.owner[comp] != who {
				c.left(comp, c.owner[comp], c.postedAt[s.seq])
			}
		case "RESOLVE":
			c.resolved[comp] = true
		case "PAUSE":
			if c.pausedAt.IsZero() {
				c.pausedAt = s.at
			}
		case "RESUME":
			if !c.pausedAt.IsZero() {
				c.pauses = append(c.pauses, interval{c.pausedAt, s.at})
				c.pausedAt = time.Time{}
			}
		}
	}
}

// timeout checks a TIMEOUT: the builder's last check-in (its own lines in
// the room, or the reply that began its deadline) must be a whole
// deadline ago, not counting the time foreman was away or paused. A line
// said inside a gap foreman announced does not count: foreman said it may
// have missed it.
func (c *checker) timeout(r reply, s said) {
	if c.owner[r.c] != r.agent {
		c.fail(invTwoOwners, "TIMEOUT %s %s (reply #%d), but %q owns it", r.c, r.agent, s.seq, c.owner[r.c])
		return
	}
	last := c.restart[r.c]
	for _, t := range c.checkins[ownerKey{r.c, r.agent}] {
		if t.After(last) && !t.After(s.at) && !c.inGap(t) {
			last = t
		}
	}
	rules := c.w.engCfg.Rules
	deadline := rules.CheckinInterval * time.Duration(rules.MissedCheckins)
	if active := c.active(last, s.at); active < deadline-time.Millisecond {
		c.fail(invLiveTimeout, "TIMEOUT %s %s at %s (reply #%d): its last check-in was at %s, only %s of the %s deadline before (foreman away %v, paused %v)",
			r.c, r.agent, c.w.since(s.at), s.seq, c.w.since(last), active, deadline, c.spans(c.away), c.spans(c.pauses))
	}
}

func (c *checker) inGap(t time.Time) bool {
	for _, g := range c.gaps {
		if !t.Before(g.from) && !t.After(g.to) {
			return true
		}
	}
	return false
}

// active is the time from a to b that was a builder's.
func (c *checker) active(a, b time.Time) time.Duration {
	d := b.Sub(a)
	var ex []interval
	ex = append(ex, c.away...)
	if !c.awayFrom.IsZero() {
		ex = append(ex, interval{c.awayFrom, b})
	}
	ex = append(ex, c.pauses...)
	if !c.pausedAt.IsZero() {
		ex = append(ex, interval{c.pausedAt, b})
	}
	// Overlapping spans count once.
	slices.SortFunc(ex, func(x, y interval) int { return x.from.Compare(y.from) })
	var cur interval
	for _, iv := range append(ex, interval{b.Add(time.Hour), b.Add(time.Hour)}) {
		if cur.to.IsZero() || iv.from.After(cur.to) {
			d -= overlap(cur, a, b)
			cur = iv
			continue
		}
		if iv.to.After(cur.to) {
			cur.to = iv.to
		}
	}
	return d
}

func overlap(iv interval, a, b time.Time) time.Duration {
	from, to := iv.from, iv.to
	if from.Before(a) {
		from = a
	}
	if to.After(b) {
		to = b
	}
	if to.After(from) {
		return to.Sub(from)
	}
	return 0
}

func (c *checker) spans(ivs []interval) string {
	var out []string
	for _, iv := range ivs {
		out = append(out, c.w.since(iv.from)+"-"+c.w.since(iv.to))
	}
	return "[" + strings.Join(out, " ") + "]"
}

// finish is the end of the run: every line heard handled or in a gap,
// every reply in the room, and the build complete or held.
func (c *checker) finish(p *proc) {
	for _, m := range c.w.room.log {
		if m.from == c.w.foremanID || m.ts.Before(c.startAt) || c.before[m.id] {
			continue
		}
		if _, ok := c.ids[m.id]; !ok && !c.inGap(m.ts) {
			c.fail(invHeardOnce, "message %s from %s at %s (%q) was neither handled nor said missed in a gap notice",
				m.id, m.from, c.w.since(m.ts), clip(m.content))
			return
		}
	}
	for s := uint64(1); s <= c.maxSeq; s++ {
		if !c.inRoom[s] {
			c.fail(invTwice, "reply #%d %q never reached the room", s, c.replies[s].text)
			return
		}
	}
	if len(c.handoffs) > 0 {
		h := c.handoffs[0]
		c.fail(invHandoff, "the host handed %s to %s as %s (%s), and no ACK after a departure named a branch for it",
			h.Component, h.To, h.Ref, h.Commit)
		return
	}
	if u := p.sess.Node().Unconfirmed(); len(u) > 0 {
		c.fail(invTwice, "replies %v were never confirmed", u)
		return
	}
	v := p.sess.Node().Engine().View()
	if c.complete && v.Complete {
		return
	}
	for _, cv := range v.Components {
		if cv.State == "merged" {
			continue
		}
		if cv.State != "held" || cv.Escalation == "" {
			c.fail(invEnd, "the build ended with %s %s (owner %q), not held for a human (%d of %d merged)",
				cv.Name, cv.State, cv.Owner, v.Merged, len(v.Components))
			return
		}
	}
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// departed is a builder leaving a component, as foreman's lines say: who,
// and when the line that said it first reached the room.
type departed struct {
	agent string
	at    time.Time
}

// handed is an ACK after a departure that named the branch the departed
// builder left: the new builder, and what the host must pin for it.
type handed struct {
	to, from, branch string
	at               time.Time
}

// left records a departure of agent from comp ("" when nobody owned it:
// none).
func (c *checker) left(comp, agent string, at time.Time) {
	if agent != "" {
		c.leftAt[comp] = departed{agent, at}
	}
}

// handedOver is an ACK: after a departure, the branch it names is what the
// new builder is handed.
func (c *checker) handedOver(r reply) {
	d, ok := c.leftAt[r.c]
	if !ok {
		return
	}
	delete(c.leftAt, r.c)
	if branch, ok := protocol.HandedBranch(r.rest); ok {
		c.handed[r.c] = append(c.handed[r.c], handed{to: r.agent, from: d.agent, branch: branch, at: d.at})
	}
}

// handoffSaid is a handoff line the host said, and how many pushes the
// repository had then: what was pushed later cannot be in the pin.
type handoffSaid struct {
	protocol.Handoff
	pushes int
}

// hostHands is the host saying a handoff line: it is checked once the
// checks have reached the ACK it follows.
func (c *checker) hostHands(h protocol.Handoff) {
	c.handoffs = append(c.handoffs, handoffSaid{h, len(c.w.repo.pushes)})
	c.matchHandoffs()
}

// matchHandoffs checks each handoff line of the host against the ACK it
// follows: the pin is the last tip the departed builder pushed to the
// branch handed over, at or before the time it left. A line whose ACK the
// checks have not reached yet waits for it.
func (c *checker) matchHandoffs() {
	kept := c.handoffs[:0]
	for _, hs := range c.handoffs {
		h := hs.Handoff
		var candidates []handed
		for _, x := range c.handed[h.Component] {
			if x.to == h.To {
				candidates = append(candidates, x)
			}
		}
		if len(candidates) == 0 {
			kept = append(kept, hs)
			continue
		}
		if pin := c.w.repo.pins[h.Ref]; pin != h.Commit {
			c.fail(invHandoff, "the host said %s holds %s, but it holds %q", h.Ref, h.Commit, pin)
			return
		}
		// The branch handed over is the one foreman's ACK named, and the
		// commit is what the builder the line names pushed to it last
		// before one of its departures: this one, or, when the builder who
		// left now named no branch of its own, the departure of the
		// builder whose branch it is (its pin is handed again).
		var want []string
		named, match := false, false
		for _, x := range candidates {
			named = named || x.branch == h.Branch
		}
		for _, y := range c.handed[h.Component] {
			if y.from != h.From || y.branch != h.Branch {
				continue
			}
			tip := c.w.repo.lastBy(y.branch, y.from, y.at, hs.pushes)
			want = append(want, fmt.Sprintf("%s of %s at %s", tip, y.branch, c.w.since(y.at)))
			match = match || tip == h.Commit
		}
		if !named || !match {
			c.fail(invHandoff, "the host handed %s %s as %s (%s, the work of %s on %s), but foreman handed over %v and that builder left %v",
				h.To, h.Component, h.Ref, h.Commit, h.From, h.Branch, candidates, want)
			return
		}
	}
	c.handoffs = kept
}

// hostHeard is a message as it reached the host: what it could know was
// merged.
func (c *checker) hostHeard(m agentchat.Message) {
	if m.From != c.w.foremanID {
		return
	}
	body := m.Content
	if _, rest, ok := agentchat.ParseStamp(m.Content); ok {
		body = rest
	}
	for l := range protocol.Lines(body) {
		f := strings.Fields(l)
		switch {
		case len(f) == 2 && f[0] == "MERGED":
			c.hostMerged[f[1]] = true
		case len(f) == 3 && f[0] == "OK" && f[1] == "MERGED":
			c.hostMerged[f[2]] = true
		}
	}
}

// hostSays is the host about to say OVERLAP c d: neither may be one it
// heard merged.
func (c *checker) hostSays(comp, d string) {
	for _, x := range []string{comp, d} {
		if c.hostMerged[x] {
			c.fail(invOverlapDone, "the host says OVERLAP %s %s after it heard %s merged", comp, d, x)
			return
		}
	}
}

// overlapCheck runs the OVERLAP lines of a host's message on a copy of the
// engine that never stopped, just before it handles the message: whatever
// the rules, no owner, deadline or merged component changes; with
// overlap: warn, no state either, and nothing is said but a refusal.
func (c *checker) overlapCheck(ev *coordinator.Event) {
	var lines []string
	for l := range protocol.Lines(ev.Msg.Content) {
		if cmd, err := protocol.Read(l); err == nil && cmd.Verb == protocol.Overlap {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return
	}
	e, err := coordinator.Restore(c.w.engCfg, c.shadow.Engine().Snapshot())
	if err != nil {
		c.fail(invOverlapKeep, "the engine's snapshot does not restore: %v", err)
		return
	}
	e.Step(coordinator.Event{Kind: coordinator.KindAdvance, At: ev.At})
	before := e.View()
	out := e.Step(coordinator.Heard(coordinator.Message{From: ev.Msg.From, Verified: ev.Msg.Verified, At: ev.At, Content: strings.Join(lines, "\n")}))
	after := e.View()
	warn := c.w.engCfg.Rules.Overlap != coordinator.OverlapWait
	for i, b := range before.Components {
		a := after.Components[i]
		switch {
		case b.Owner != a.Owner, !b.Deadline.Equal(a.Deadline), b.Next != a.Next:
			c.fail(invOverlapKeep, "%q changed %s: owner %q -> %q, %s at %s -> %s at %s", lines, b.Name, b.Owner, a.Owner, b.Next, b.Deadline, a.Next, a.Deadline)
			return
		case b.State != a.State && (b.State == "merged" || warn || b.State != "building" || a.State != "blocked"):
			c.fail(invOverlapKeep, "%q moved %s from %s to %s (overlap: %s)", lines, b.Name, b.State, a.State, c.w.engCfg.Rules.Overlap)
			return
		}
	}
	for _, r := range out {
		if r.Verb == protocol.ReplyReject || r.Verb == protocol.ReplyError || r.Verb == protocol.ReplyWait && !warn {
			continue
		}
		c.fail(invOverlapKeep, "%q said %q (overlap: %s)", lines, r.Text, c.w.engCfg.Rules.Overlap)
		return
	}
}
