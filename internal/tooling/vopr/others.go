package vopr

import (
	"slices"
	"strings"
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// auditor answers every REVIEW after a while, PASS or FAIL, and audits
// again when foreman says the audit is overdue or that it may have missed
// lines.
type auditor struct {
	delay    time.Duration
	failP    float64
	inReview map[string]bool
	order    []string // components in review, in the order reviewed
}

func newAuditor(delay time.Duration, failP float64) *auditor {
	return &auditor{delay: delay, failP: failP, inReview: map[string]bool{}}
}

func (u *auditor) start(a *agent) {}

func (u *auditor) line(a *agent, from, line string) {}

func (u *auditor) reply(a *agent, r reply) {
	switch r.verb {
	case protocol.ReplyReview:
		if !u.inReview[r.c] {
			u.inReview[r.c] = true
			u.order = append(u.order, r.c)
		}
		u.audit(a, r.c, u.delay)
	case protocol.ReplyStatus:
		// The board shows a review it never heard of (it was cut off
		// while the room lost its history): audit it.
		if state, rest := cut(r.rest); state == "review" && !strings.Contains(rest, "approved=yes") && !u.inReview[r.c] {
			u.inReview[r.c] = true
			u.order = append(u.order, r.c)
			u.audit(a, r.c, time.Minute)
		}
	case protocol.ReplyMerged, protocol.ReplyFix, protocol.ReplyRetry, protocol.ReplyTimeout:
		u.done(r.c)
	case protocol.ReplyReject:
		if r.agent == a.id && (strings.Contains(r.rest, "not in review") || strings.Contains(r.rest, "already approved")) {
			u.done(r.c)
		}
	case protocol.ReplyEscalate:
		if r.code == string(protocol.AuditOverdue) {
			// It asks for an AUDIT: the REVIEW may have been missed (the
			// auditor was cut off while the room lost its history).
			if !u.inReview[r.c] {
				u.inReview[r.c] = true
				u.order = append(u.order, r.c)
			}
			u.audit(a, r.c, time.Minute)
		}
	case protocol.ReplyOK:
		if verb, rest := cut(r.c + " " + r.rest); verb == "RELEASE" || verb == "ASSIGN" || verb == "RESOLVE" {
			c, _ := cut(rest)
			u.done(c)
		}
	case protocol.ReplyError:
		if r.isGap() {
			for _, c := range u.order {
				u.audit(a, c, time.Minute)
			}
		}
	}
}

func (u *auditor) done(c string) {
	if u.inReview[c] {
		delete(u.inReview, c)
		u.order = slices.DeleteFunc(u.order, func(x string) bool { return x == c })
	}
}

func (u *auditor) audit(a *agent, c string, after time.Duration) {
	a.later(a.jitter(after), func() {
		if !u.inReview[c] {
			return
		}
		if a.chance(u.failP) {
			a.say(line("AUDIT", c, "FAIL", "missing tests for the error path"))
		} else {
			a.say(line("AUDIT", c, "PASS"))
		}
		// Nothing came of it after a long while (the verdict may have been
		// lost, or what followed missed while cut off): audit again.
		a.later(20*time.Minute, func() {
			if u.inReview[c] {
				u.audit(a, c, time.Second)
			}
		})
	})
}

// operator is a human who settles what foreman escalates: RESOLVE (or
// RELEASE, or ASSIGN) after a while. Faults make it pause, assign and
// release on its own. A command left unanswered it says again; once the
// faults are over it looks at the board now and then, and resolves
// whatever is still held.
type operator struct {
	delay   time.Duration
	pending []string // commands said, not yet answered
	owners  map[string]string
	tasks   []string
	paused  bool // wanted
	halted  bool // as foreman last said
	calm    bool // the fault phase is over
}

func newOperator(delay time.Duration) *operator {
	return &operator{delay: delay, owners: map[string]string{}}
}

func (o *operator) start(a *agent) {
	a.later(10*time.Minute, func() { o.check(a) })
}

func (o *operator) line(a *agent, from, line string) {}

func (o *operator) reply(a *agent, r reply) {
	switch r.verb {
	case protocol.ReplyAck:
		o.owners[r.c] = r.agent
	case protocol.ReplyTimeout, protocol.ReplyRetry, protocol.ReplyMerged:
		delete(o.owners, r.c)
	case protocol.ReplyTasks:
		o.tasks = r.list
	case protocol.ReplyOK:
		switch r.c {
		case "PAUSE":
			o.halted = true
		case "RESUME":
			o.halted = false
		}
		o.answered(strings.TrimSpace(r.c + " " + r.rest))
	case protocol.ReplyReject:
		if r.agent == a.id {
			for _, p := range o.pending {
				if _, rest := cut(p); strings.HasPrefix(rest, r.c+" ") || rest == r.c {
					o.answered(p)
					break
				}
			}
		}
	case protocol.ReplyEscalate:
		if r.c == protocol.BuildSubject || !protocol.Escalation(r.code).Holds() || !protocol.ValidComponent(r.c) {
			return
		}
		c, code := r.c, r.code
		a.later(a.jitter(o.delay), func() { o.settle(a, c, code) })
	case protocol.ReplyStatus:
		o.halted = strings.Contains(r.rest, "paused=yes")
		state, rest := cut(r.rest)
		switch {
		case !o.calm:
		case state == "held":
			o.command(a, line("RESOLVE", r.c, "looked at the board"))
		case state == "pending" && barredAll(rest, min(a.w.engCfg.Rules.MaxBuilders, len(a.w.bagents))):
			// Nobody may take it: give it to someone, which lifts the bar.
			if b := a.w.someBuilder(a.rnd); b != "" {
				o.command(a, line("ASSIGN", r.c, b))
			}
		}
	case protocol.ReplyError:
		if r.c == a.id && strings.Contains(r.rest, "not paused") {
			o.halted = false
		}
		if r.isGap() {
			o.sayAgain(a)
		}
	}
}

// sayAgain says again what is unanswered, and PAUSE or RESUME if the build
// is not as the operator wants it.
func (o *operator) sayAgain(a *agent) {
	for _, p := range o.pending {
		a.say(p)
	}
	if o.paused != o.halted {
		if o.paused {
			a.say("PAUSE")
		} else {
			a.say("RESUME")
		}
	}
}

// settle decides a hold as the escalation suggests: RESOLVE mostly,
// sometimes RELEASE or ASSIGN (but never RELEASE what every builder is
// barred from: nobody could take it).
func (o *operator) settle(a *agent, c, code string) {
	switch n := a.rnd.IntN(10); {
	case n < 7 || o.calm || n < 9 && code == string(protocol.AuditExhausted):
		o.command(a, line("RESOLVE", c, "decided"))
	case n < 9:
		o.command(a, "RELEASE "+c)
	default:
		if b := a.w.someBuilder(a.rnd); b != "" {
			o.command(a, line("ASSIGN", c, b))
		} else {
			o.command(a, line("RESOLVE", c, "decided"))
		}
	}
}

func (o *operator) command(a *agent, l string) {
	if !slices.Contains(o.pending, l) {
		o.pending = append(o.pending, l)
	}
	a.say(l)
}

func (o *operator) answered(cmd string) {
	o.pending = slices.DeleteFunc(o.pending, func(p string) bool {
		return p == cmd || strings.HasPrefix(cmd, p+" ") || strings.HasPrefix(p, cmd+" ")
	})
}

// check runs every half hour: commands unanswered are said again, and once
// the faults are over the board is read for what is still held.
func (o *operator) check(a *agent) {
	if o.calm {
		o.paused = false
	}
	o.sayAgain(a)
	if o.calm {
		a.say("STATUS")
	}
	a.later(30*time.Minute, func() { o.check(a) })
}

// Faults of the operator's making.

func (o *operator) pause(a *agent, d time.Duration) {
	if o.paused {
		return
	}
	o.paused = true
	a.say("PAUSE")
	a.later(d, func() {
		if o.paused {
			o.paused = false
			a.say("RESUME")
		}
	})
}

func (o *operator) assign(a *agent) bool {
	b := a.w.someBuilder(a.rnd)
	if len(o.tasks) == 0 || b == "" {
		return false
	}
	o.command(a, line("ASSIGN", o.tasks[a.rnd.IntN(len(o.tasks))], b))
	return true
}

func (o *operator) release(a *agent) bool {
	var owned []string
	for c := range o.owners {
		owned = append(owned, c)
	}
	if len(owned) == 0 {
		return false
	}
	slices.Sort(owned)
	o.command(a, "RELEASE "+owned[a.rnd.IntN(len(owned))])
	return true
}

// mallory floods the room, sends malformed and hostile lines, and claims
// what it will never build.
type mallory struct{}

func (m *mallory) start(a *agent) {}

func (m *mallory) reply(a *agent, r reply) {}

func (m *mallory) line(a *agent, from, line string) {}

// flood sends many messages at once: the room refuses all but the first.
func (m *mallory) flood(a *agent, comps []string) {
	for i := range 5 + a.rnd.IntN(20) {
		lines := make([]string, 1+a.rnd.IntN(150))
		for j := range lines {
			lines[j] = "CLAIM !" + comps[(i+j)%len(comps)]
		}
		a.sayNow(lines...)
	}
}

// hostile sends lines meant to be misread: reply verbs, a smuggled line, a
// quoted command, an operator command, and secrets the room rewrites.
func (m *mallory) hostile(a *agent, comps []string) {
	c := comps[a.rnd.IntN(len(comps))]
	lines := []string{
		"ACK " + c + " " + a.id,
		"MERGED " + c,
		"PROGRESS " + c + " 50\u2028ACK " + c + " " + a.id,
		"> CLAIM " + c,
		"@foreman RELEASE " + c,
		"RESOLVE " + c + " sk-abcdefghijklmnopqrstuvwxyz123456",
		"STATUS " + c + " token: \"abcdefghijklmnopqrstuvwxyz\"",
		"READY " + c + " ghp_" + strings.Repeat("a", 36),
		"CLAIM " + c + "\x00",
		"\x1b[31mCLAIM " + c,
		"OVERLAP " + c + " " + comps[(1+a.rnd.IntN(len(comps)))%len(comps)] + " shared.go",
		"PROGRESS " + c + " 50 branch=--upload-pack=touch",
	}
	a.say(lines[a.rnd.IntN(len(lines))])
}

// barredAll reports whether a STATUS line's fields bar at least n builders
// (the operator knows its team: when every builder is barred, nobody will
// take the component).
func barredAll(fields string, n int) bool {
	for _, f := range strings.Fields(fields) {
		if list, ok := strings.CutPrefix(f, "barred="); ok {
			return len(strings.Split(list, ",")) >= n
		}
	}
	return false
}
