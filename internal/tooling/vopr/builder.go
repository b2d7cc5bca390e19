package vopr

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentforeman/foreman/protocol"
)

type bstate int

const (
	idle bstate = iota
	claiming
	working
	blocked
	reviewing
	held
)

// builder is an agent that follows docs/AGENTS.md, as a careful LLM agent
// would: it claims from TASKS, checks in well inside its deadline, says
// READY, fixes what an audit finds, waits when blocked, and stops when a
// human must decide. Lines that may have been lost it says again: an
// unanswered CLAIM or READY after a while, and what it said during a gap
// foreman announces. Faults make it misbehave for a while (quirks).
type builder struct {
	step      time.Duration // between check-ins: well inside the deadline
	steps     int
	fixSteps  int
	react     time.Duration
	patience  time.Duration // how long to wait on an unanswered line
	giveUp    time.Duration // how long to stay blocked before letting go
	startedAt time.Time

	st        bstate
	c         string
	pct, left int
	epoch     int
	sure      bool // READY was answered (REVIEW, or "already in review")
	since     time.Time

	tasks    []string
	taken    map[string]bool // not claimable as far as it knows
	avoid    map[string]bool // barred after RETRY
	deciding bool
	polling  bool
	done     bool

	silentUntil time.Time
	repeat      bool
	secret      bool // its branches look like secrets
}

func newBuilder(w *world, r interface{ Int64N(int64) int64 }) *builder {
	ci := w.engCfg.Rules.CheckinInterval
	b := &builder{
		step:     ci*3/10 + time.Duration(r.Int64N(int64(ci*4/10))),
		steps:    2 + int(r.Int64N(4)),
		fixSteps: 1 + int(r.Int64N(2)),
		react:    time.Duration(r.Int64N(int64(30 * time.Second))),
		taken:    map[string]bool{},
		avoid:    map[string]bool{},
	}
	b.patience = 3*b.step + time.Minute
	b.secret = r.Int64N(8) == 0
	b.giveUp = 4 * w.engCfg.Rules.CheckinInterval * time.Duration(w.engCfg.Rules.MissedCheckins)
	return b
}

// start claims what it knows to be free, or, knowing nothing yet (the
// TASKS may have left the history before it joined), asks later.
func (b *builder) start(a *agent) { b.consider(a) }

func (b *builder) line(a *agent, from, line string) {}

func (b *builder) silent(a *agent) bool { return a.w.now().Before(b.silentUntil) }

// sayState says a line about the component it works on.
func (b *builder) sayState(a *agent, l string) {
	if b.silent(a) {
		return
	}
	if b.repeat {
		b.repeat = false
		a.say(l, l)
		return
	}
	a.say(l)
}

func (b *builder) reply(a *agent, r reply) {
	me := r.agent == a.id
	switch r.verb {
	case protocol.ReplyTasks:
		b.done = false // a build reopened after COMPLETE (a component added)
		b.tasks = r.list
		for _, c := range r.list {
			delete(b.taken, c)
		}
		b.consider(a)
	case protocol.ReplyAck:
		b.ack(a, r, me)
	case protocol.ReplyReject:
		if me {
			b.rejected(a, r)
		}
	case protocol.ReplyTimeout:
		if me && b.c == r.c {
			b.dropPushed(a, r.c)
			b.drop(a)
		}
	case protocol.ReplyRetry:
		if me {
			b.avoid[r.c] = true
			if b.c == r.c {
				b.dropPushed(a, r.c)
				b.drop(a)
			}
		}
	case protocol.ReplyFix:
		if me && b.c == r.c {
			b.work(a, b.fixSteps)
		}
	case protocol.ReplyWait:
		if me && b.c == r.c && (b.st == working || b.st == blocked) {
			if b.st != blocked {
				b.since = a.w.now()
			}
			b.st = blocked
		}
	case protocol.ReplyUnblocked:
		if me && b.c == r.c && (b.st == blocked || b.st == working) {
			b.work(a, max(b.left, 1))
		}
	case protocol.ReplyReview:
		if me && b.c == r.c {
			b.st, b.sure = reviewing, true
		}
	case protocol.ReplyMerged:
		b.taken[r.c] = true
		if b.c == r.c {
			b.drop(a)
		}
	case protocol.ReplyEscalate:
		if b.c == r.c && protocol.Escalation(r.code).Holds() && b.st != idle && b.st != claiming {
			if strings.Contains(r.rest, " let "+r.c+" go") || strings.Contains(r.rest, "gave up "+r.c) {
				return // its own ABORT, answered
			}
			b.epoch++
			b.st = held
		}
	case protocol.ReplyOK:
		verb, rest := cut(r.c + " " + r.rest)
		c, rest := cut(rest)
		switch verb {
		case "RESOLVE":
			delete(b.avoid, c) // the bars are lifted
		case "RELEASE":
			if b.c == c && b.st != claiming {
				b.dropPushed(a, c)
				b.drop(a)
			}
		case "ASSIGN":
			who, _ := cut(rest)
			if who == a.id {
				delete(b.avoid, c) // its bar is lifted
			}
			if b.c == c && who != a.id && b.st != claiming {
				b.dropPushed(a, c)
				b.drop(a)
			}
		}
	case protocol.ReplyStatus:
		if r.c == b.c && b.c != "" {
			b.status(a, r)
			return
		}
		// The board, asked for when it knew of nothing to claim.
		if state, rest := cut(r.rest); state == "pending" && !strings.Contains(rest, "waits=") && !b.avoid[r.c] &&
			!slices.Contains(b.tasks, r.c) {
			b.tasks = append(b.tasks, r.c)
			delete(b.taken, r.c)
			b.consider(a)
		}
	case protocol.ReplyComplete:
		b.done = true
	case protocol.ReplyError:
		if r.isGap() {
			b.sayAgain(a)
		}
	}
}

func (b *builder) ack(a *agent, r reply, me bool) {
	if !me {
		b.taken[r.c] = true
		if b.c == r.c && b.st != idle {
			b.drop(a) // an operator gave it to someone else
		}
		return
	}
	switch {
	case b.c == r.c && b.st == claiming, b.st == idle:
		b.begin(a, r.c, resumedAt(r.rest))
	case b.c == r.c && (b.st == held || b.st == reviewing):
		b.work(a, 1)
	case b.c == r.c:
		// an ACK again, for a CLAIM said twice: nothing changes
	default:
		// given another component while busy: it cannot take two
		a.say(line("ABORT", r.c, "phase_incomplete busy with "+b.c))
	}
}

func (b *builder) rejected(a *agent, r reply) {
	reason := r.rest
	if i := strings.Index(reason, "you already own "); i >= 0 && (b.st == idle || b.st == claiming) {
		own, _, _ := strings.Cut(reason[i+len("you already own "):], " ")
		own = strings.TrimRight(strings.Split(own, ",")[0], ";")
		if protocol.ValidComponent(own) {
			b.begin(a, own, 0) // foreman says it is ours: go on with it
			return
		}
	}
	if r.c != b.c {
		return
	}
	switch b.st {
	case claiming:
		b.st, b.c = idle, ""
		b.epoch++
		if strings.Contains(reason, "paused") || strings.Contains(reason, "halted") {
			b.poll(a)
			return
		}
		b.taken[r.c] = true
		b.consider(a)
	case working, blocked, reviewing, held:
		switch {
		case strings.Contains(reason, "held for a human"):
			b.epoch++
			b.st = held
		case strings.Contains(reason, "already in review"), strings.Contains(reason, "pushback comes before READY"):
			b.st, b.sure = reviewing, true
		case strings.Contains(reason, "timed out"), strings.Contains(reason, "not yours"),
			strings.Contains(reason, "owned by"), strings.Contains(reason, "audit attempts"),
			strings.Contains(reason, "already merged"):
			b.drop(a)
		}
	}
}

// consider claims something the last TASKS offered, after thinking a while.
func (b *builder) consider(a *agent) {
	if b.st != idle || b.deciding || b.done {
		return
	}
	c := b.pick(a)
	if c == "" {
		b.poll(a)
		return
	}
	b.deciding = true
	a.later(a.jitter(b.react), func() {
		b.deciding = false
		if b.st != idle {
			return
		}
		b.claim(a, c)
	})
}

func (b *builder) pick(a *agent) string {
	var free []string
	for _, c := range b.tasks {
		if !b.taken[c] && !b.avoid[c] {
			free = append(free, c)
		}
	}
	if len(free) == 0 {
		return ""
	}
	if a.chance(0.5) {
		return free[0]
	}
	return free[a.rnd.IntN(len(free))]
}

func (b *builder) claim(a *agent, c string) {
	b.st, b.c = claiming, c
	b.epoch++
	epoch := b.epoch
	if !b.silent(a) {
		a.say("CLAIM " + c)
	}
	var again func()
	again = func() {
		if b.epoch == epoch && b.st == claiming {
			if !b.silent(a) {
				a.say("CLAIM " + c) // unanswered: it may have been lost
			}
			a.later(b.patience, again)
		}
	}
	a.later(b.patience, again)
}

// poll tries again later when nothing is offered: what it knows may be old.
func (b *builder) poll(a *agent) {
	if b.polling || b.done {
		return
	}
	b.polling = true
	a.later(a.jitter(15*time.Minute), func() {
		b.polling = false
		if b.st == idle {
			clear(b.taken)
			if b.pick(a) == "" {
				a.say("STATUS") // what is there to claim?
			}
			b.consider(a)
		}
	})
}

func (b *builder) begin(a *agent, c string, from int) {
	b.c, b.pct = c, from
	b.work(a, b.steps)
}

// work builds: a PROGRESS every step, then READY.
func (b *builder) work(a *agent, steps int) {
	b.epoch++
	b.st, b.left, b.sure = working, steps, false
	b.pct = min(b.pct, 90)
	b.since = a.w.now()
	b.tick(a, b.epoch)
}

func (b *builder) tick(a *agent, epoch int) {
	a.later(a.jitter(b.step), func() {
		if b.epoch != epoch {
			return
		}
		switch b.st {
		case working:
			if b.left--; b.left <= 0 {
				b.pct = 100
				b.ready(a)
				return
			}
			b.pct += (100 - b.pct) / (b.left + 1)
			b.sayState(a, line("PROGRESS", b.c, strconv.Itoa(b.pct), b.pushWIP(a)))
		case blocked:
			if a.w.now().Sub(b.since) > b.giveUp {
				// Waiting too long on what nobody builds: let it go.
				a.say(line("ABORT", b.c, "phase_incomplete blocked too long"))
				b.drop(a)
				return
			}
			b.sayState(a, line("PROGRESS", b.c, strconv.Itoa(b.pct), "waiting"))
		default:
			return
		}
		b.tick(a, epoch)
	})
}

// pr is the branch it names in READY: now and then one the room takes
// for a secret and rewrites, in foreman's REVIEW too.
func (b *builder) pr(a *agent) string {
	if b.secret {
		return "sk-" + a.name + strings.Repeat("x", 24) + "/" + b.c
	}
	return a.name + "/" + b.c
}

// branch is where it pushes its work on c: its own branch (contract
// section 10).
func (b *builder) branch(a *agent) string { return a.name + "/" + b.c }

// pushWIP pushes its work in progress, as an agent following the guide
// does before each PROGRESS, and names the branch for the line; nothing
// while silent (it is not working).
func (b *builder) pushWIP(a *agent) string {
	if b.silent(a) {
		return ""
	}
	a.w.repo.push(b.branch(a), a.id, false)
	return protocol.BranchKey + b.branch(a)
}

func (b *builder) ready(a *agent) {
	b.st, b.sure = reviewing, false
	if !b.silent(a) {
		a.w.repo.push(b.branch(a), a.id, false)
	}
	b.sayState(a, line("READY", b.c, b.pr(a)))
	epoch := b.epoch
	var again func()
	again = func() {
		if b.epoch != epoch || b.st != reviewing {
			return
		}
		if !b.sure {
			b.sayState(a, line("READY", b.c, b.pr(a)))
			a.later(b.patience, again)
			return
		}
		// In review for long: what happened may have been missed (cut
		// off while the room lost its history). Ask.
		a.say("STATUS " + b.c)
		a.later(10*b.patience, again)
	}
	a.later(b.patience, again)
}

// status is the board's line on its own component, asked for when unsure.
func (b *builder) status(a *agent, r reply) {
	state, rest := cut(r.rest)
	mine := strings.Contains(" "+rest+" ", " owner="+a.id+" ")
	switch {
	case !mine:
		if b.st != claiming {
			b.drop(a)
		}
	case (state == "building" || state == "blocked") && b.st == reviewing:
		b.work(a, 1)
	case state == "held" && b.st != held:
		b.epoch++
		b.st = held
	}
}

// sayAgain answers a gap notice: what it said last about where it stands.
func (b *builder) sayAgain(a *agent) {
	switch b.st {
	case claiming:
		a.say("CLAIM " + b.c)
	case working:
		b.sayState(a, line("PROGRESS", b.c, strconv.Itoa(b.pct), protocol.BranchKey+b.branch(a)))
	case blocked:
		b.sayState(a, line("PROGRESS", b.c, strconv.Itoa(b.pct)))
	case reviewing:
		if !b.sure {
			b.sayState(a, line("READY", b.c, b.pr(a)))
		}
	}
}

// dropPushed is a builder that lost c (foreman said it left) dropping
// what it had pushed, now and then: a force-push of an empty branch,
// which the host's pin must survive.
func (b *builder) dropPushed(a *agent, c string) {
	if b.c == c && c != "" && a.chance(0.2) && !b.silent(a) {
		a.w.repo.push(b.branch(a), a.id, true)
	}
}

func (b *builder) drop(a *agent) {
	b.epoch++
	b.st, b.c, b.pct = idle, "", 0
	b.consider(a)
}

// Quirks: faults of the builder's own making.

func (b *builder) goSilent(a *agent, d time.Duration) { b.silentUntil = a.w.now().Add(d) }

func (b *builder) blockOn(a *agent, dep string) bool {
	if b.st != working {
		return false
	}
	a.say(line("BLOCKED", b.c, dep, "need its interface"))
	return true
}

func (b *builder) conflictWith(a *agent, other, kind string) bool {
	if b.st != working || other == b.c {
		return false
	}
	a.say(line("CONFLICT", b.c, other, kind, "both touch shared.go"))
	return true
}

func (b *builder) abort(a *agent, hard bool) bool {
	if b.st != working && b.st != blocked {
		return false
	}
	reason := "context_exhaustion_handoff at " + strconv.Itoa(b.pct) + "%"
	if hard {
		reason = "Missing_Dependency: libfoo is not in the spec"
	}
	a.say(line("ABORT", b.c, reason))
	b.drop(a)
	return true
}

// notMine reports on a component it does not own, as a confused agent does.
func (b *builder) notMine(a *agent, comps []string) {
	var others []string
	for _, c := range comps {
		if c != b.c {
			others = append(others, c)
		}
	}
	if len(others) == 0 {
		return
	}
	c := others[a.rnd.IntN(len(others))]
	for range 3 {
		a.say(line("PROGRESS", c, "40", "is this mine?"))
	}
}

func (b *builder) malformed(a *agent) {
	c := b.c
	if c == "" {
		c = "db"
	}
	bad := []string{"PROGRESS " + c + " lots", "CLAIM", "READY " + c, "BLOCKED", "AUDIT " + c + " MAYBE"}
	a.say(bad[a.rnd.IntN(len(bad))])
}

// resumedAt reads the progress an ACK's context says the last builder left.
func resumedAt(context string) int {
	i := strings.Index(context, "progress ")
	if i < 0 {
		return 0
	}
	f := strings.Fields(context[i+len("progress "):])
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimRight(f[0], "%,"))
	return min(max(n, 0), 100)
}

func line(words ...string) string {
	var out []string
	for _, w := range words {
		if w != "" {
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
}
