package sim

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// Builder scripts a builder agent. Durations are contract time.
type Builder struct {
	// Prefer lists the components the builder takes, best first; it claims
	// no others. Empty: any, in TASKS order.
	Prefer []string
	// React is how long it thinks between hearing TASKS and claiming (give
	// or take a tenth). Two builders with close React values race.
	React time.Duration
	// Step is the pace of its lines while it works; keep it well inside the
	// coordinator's checkin_interval.
	Step time.Duration
	// Steps is how many lines a component takes: Steps-1 PROGRESS, then READY.
	Steps int
	// FixSteps is the same after a FIX.
	FixSteps int
	// Rest is how long it pauses after a component leaves its hands (merged,
	// TIMEOUT, RETRY, ABORT) before it claims again.
	Rest time.Duration
	// Quirks script what goes wrong, by component; each fires once.
	Quirks map[string]Quirk
	// Push, if set, is called just before READY with the component, the
	// branch READY names and how many FIXes the builder has had on it: a
	// builder with a real repository commits and pushes its work there
	// (foreman host then checks it). An error goes into a PROGRESS note,
	// and READY follows anyway: the host answers for a missing branch.
	Push func(component, branch string, fixes int) error
	// Begin, if set, is called when the builder starts work on a
	// component (its ACK): where a real builder would branch off.
	Begin func(component, branch string)
	// PushWIP, if set, is called at each PROGRESS step with the component,
	// the builder's branch and the step: a builder with a real repository
	// pushes its work in progress there, and the PROGRESS line names the
	// branch (branch=<branch>, contract section 10) so that a builder after
	// it can start from it. An error goes into the note instead.
	PushWIP func(component, branch string, step int) error
	// Handed, if set, is called when the builder learns where the last
	// builder's work on its component is: the branch its ACK names, then
	// the commit a host's handoff line pins (from). A real builder starts
	// its own branch from it.
	Handed func(component, branch, from string)
	// Hosts are the CI role's sender ids: only their handoff lines are
	// read. Empty: anyone's.
	Hosts []string
	// Namespace is what its branches start with, <Namespace>/<component>:
	// with host.branch_namespaces its id's (host.NamespaceName: what the
	// host and the push gate take); default its name.
	Namespace string
}

// QuirkKind is what a scripted quirk does.
type QuirkKind int

// Quirks a builder can be scripted with.
const (
	// GoSilent stops every line about the component, as a crashed agent
	// would: the coordinator times it out. The builder never claims that
	// component again.
	GoSilent QuirkKind = iota + 1
	// Block says BLOCKED c Dep, then checks in with PROGRESS until UNBLOCKED.
	Block
	// Abort says ABORT c Reason and gives the component up for good.
	Abort
)

// Quirk is one scripted misfortune.
type Quirk struct {
	Kind QuirkKind
	// After is how many PROGRESS lines the builder sends on the component
	// before the quirk strikes.
	After  int
	Dep    string // Block: what it needs
	Reason string // Abort: the reason (a hard blocker type first makes it a hard blocker); Block: a note
}

// DefaultBuilder is a steady builder: a component takes four lines three
// contract minutes apart, well inside the default ten-minute check-in.
func DefaultBuilder() Builder {
	return Builder{React: 30 * time.Second, Step: 3 * time.Minute, Steps: 4, FixSteps: 2}
}

type bstate int

const (
	idle      bstate = iota
	claiming         // CLAIM sent, waiting for ACK or REJECT
	working          // owns c: PROGRESS each step, then READY
	waiting          // BLOCKED on a dependency: checks in until UNBLOCKED
	reviewing        // READY sent: waits for MERGED, FIX or RETRY
	held             // an escalation froze c: waits for the operator's ACK
	silent           // scripted to say nothing more about c
)

var stateNames = [...]string{"idle", "claiming", "working", "waiting", "reviewing", "held", "silent"}

func (s bstate) String() string { return stateNames[s] }

// builder is Builder's behaviour. What it knows of the room is only what it
// heard: the latest TASKS, minus what it has since seen assigned or merged.
type builder struct {
	s    Builder
	name string

	st    bstate
	c     string // the component claimed, owned or silent on
	pct   int
	lines int // PROGRESS lines on c since its ACK, for quirks
	left  int // lines before READY
	note  string
	dep   string // what it is blocked on
	epoch int    // bumped to cancel the work timers of an earlier state

	fixes int // FIXes on c since its ACK, for Push

	tasks    []string
	taken    map[string]bool
	avoid    map[string]bool // never claimed again: RETRY'd, aborted, gone silent on
	fired    map[string]bool
	resting  bool
	deciding bool // a claim is decided and goes out after React

	owners map[string]string // from the history: who foreman last ACKed each component still out
}

func newBuilder(name string, s Builder) *builder {
	d := DefaultBuilder()
	if s.Step <= 0 {
		s.Step = d.Step
	}
	if s.Steps <= 0 {
		s.Steps = d.Steps
	}
	if s.FixSteps <= 0 {
		s.FixSteps = d.FixSteps
	}
	return &builder{s: s, name: name, taken: map[string]bool{}, avoid: map[string]bool{}, fired: map[string]bool{}, owners: map[string]string{}}
}

// start claims from what catching up taught it, if anything: first what
// the history shows it owns (a builder started again after a crash, as
// foreman up restarts one: foreman ACKs its owner's CLAIM again, and the
// work goes on from its branch), else from the last TASKS.
func (b *builder) start(w world) {
	for _, c := range slices.Sorted(maps.Keys(b.owners)) {
		if b.owners[c] == w.self() && !b.avoid[c] {
			b.st, b.c = claiming, c
			w.say("CLAIM " + c)
			return
		}
	}
	b.consider(w)
}

// catchUp learns what is claimable: the last TASKS, minus what was
// assigned (to anyone: once it is free again TASKS says so) or merged
// after it. It reads the room's history on joining, and every live line.
func (b *builder) catchUp(r reply) {
	r = mergedByOthers(r)
	switch r.Verb {
	case protocol.ReplyTasks:
		b.tasks = r.List
		for _, c := range r.List {
			delete(b.taken, c)
		}
	case protocol.ReplyAck, protocol.ReplyMerged:
		b.taken[r.C] = true
	}
	switch r.Verb {
	case protocol.ReplyAck:
		b.owners[r.C] = r.Agent
	case protocol.ReplyMerged, protocol.ReplyTimeout, protocol.ReplyRetry:
		delete(b.owners, r.C)
	case protocol.ReplyOK:
		if cmd, err := protocol.ReadConfirmed(r.C + " " + r.Rest); err == nil && cmd.Verb == protocol.Release {
			delete(b.owners, cmd.Component)
		}
	}
}

// agent reads another's line: a host's handoff line for the component the
// builder works on (contract section 10) gives the commit to start from.
func (b *builder) agent(w world, from, text string) {
	if b.s.Handed == nil || len(b.s.Hosts) > 0 && !slices.Contains(b.s.Hosts, from) {
		return
	}
	h, ok := protocol.ReadHandoff(text)
	if !ok || h.To != w.self() || h.Component != b.c || (b.st != working && b.st != waiting) {
		return
	}
	b.s.Handed(b.c, b.branch(), h.Commit)
	b.note = "picking up from " + h.Ref
}

func (b *builder) coordinator(w world, r reply) {
	r = mergedByOthers(r)
	b.catchUp(r)
	mine := r.Agent == w.self()
	switch r.Verb {
	case protocol.ReplyTasks:
		if b.st == claiming && slices.Contains(protocol.ClaimAgain(r.Rest), w.self()) {
			b.st = idle // its CLAIM came before foreman joined: claim again
		}
		b.consider(w)
	case protocol.ReplyAck:
		if !mine {
			if r.C == b.c && b.owns() { // an operator gave c to another: stop
				b.drop(w)
			}
			return
		}
		switch {
		case b.st == claiming && b.c == r.C, b.st == idle:
			b.begin(w, r.C, resumedAt(r.Rest))
			if ref, ok := protocol.HandedBranch(r.Rest); ok && b.s.Handed != nil {
				b.s.Handed(b.c, b.branch(), ref)
				if b.note == "" {
					b.note = "picking up from " + ref
				} else {
					b.note += " on " + ref
				}
			}
		case b.st == held && b.c == r.C:
			b.st = working
			b.later(w, b.step)
		}
	case protocol.ReplyReject:
		if mine && b.st == claiming && b.c == r.C {
			if owned := alreadyOwns(r.Rest); owned != "" && !b.avoid[owned] {
				// A builder started again (foreman up restarts a crashed
				// one) owns what it had: foreman ACKs its owner's CLAIM
				// again, and the work goes on from its branch.
				b.c = owned
				w.say("CLAIM " + owned)
				return
			}
			b.taken[r.C] = true
			b.st, b.c = idle, ""
			b.consider(w)
		}
	case protocol.ReplyTimeout:
		if mine && b.c == r.C {
			if b.st == silent {
				b.avoid[r.C] = true
			}
			b.drop(w)
		}
	case protocol.ReplyRetry:
		if mine {
			b.avoid[r.C] = true
			if b.c == r.C {
				b.drop(w)
			}
		}
	case protocol.ReplyFix:
		if mine && b.c == r.C && b.st != silent {
			_, findings := word(r.Rest)
			b.epoch++
			b.fixes++
			// Fixing reopens the work: progress steps back from READY.
			b.st, b.pct, b.left, b.note = working, 60, b.s.FixSteps, "fixing: "+findings
			b.later(w, b.step)
		}
	case protocol.ReplyWait:
		if mine && b.c == r.C && b.st == working { // a WAIT it did not ask for: a CONFLICT, say
			b.dep = r.Rest
			b.wait(w)
		}
	case protocol.ReplyUnblocked:
		if mine && b.c == r.C && b.st == waiting {
			b.epoch++
			b.st, b.note = working, "unblocked, going on"
			b.later(w, b.step)
		}
	case protocol.ReplyMerged:
		if b.c == r.C && b.st != idle && b.st != claiming {
			b.drop(w)
		}
	case protocol.ReplyOK:
		// OK RELEASE c: an operator took c from its builder. If that is
		// this one, it stops, and leaves c to others: lines about a
		// component it no longer owns would only be refused, and end in a
		// claim dispute.
		if cmd, err := protocol.ReadConfirmed(r.C + " " + r.Rest); err == nil && cmd.Verb == protocol.Release && cmd.Component == b.c && b.owns() {
			b.avoid[b.c] = true
			b.drop(w)
		}
	case protocol.ReplyEscalate:
		if r.C == b.c && protocol.Escalation(r.Code).Holds() && (b.st == working || b.st == waiting || b.st == reviewing) {
			b.epoch++
			b.st = held
		}
	}
}

// alreadyOwns reads the component a REJECT says the builder owns
// already ("you already own api (at most 1 at a time)..."), or "".
func alreadyOwns(reason string) string {
	rest, ok := strings.CutPrefix(reason, "you already own ")
	if !ok {
		return ""
	}
	c, _, _ := strings.Cut(rest, " ")
	c, _, _ = strings.Cut(c, ",")
	if !protocol.ValidComponent(c) {
		return ""
	}
	return c
}

// owns reports whether the builder holds its component (not merely
// claiming it).
func (b *builder) owns() bool { return b.c != "" && b.st != idle && b.st != claiming }

// mergedByOthers reads OK MERGED c (merge mode external: an operator or
// the merger said MERGED c, and foreman took it) as MERGED c.
func mergedByOthers(r reply) reply {
	if r.Verb == protocol.ReplyOK && r.C == "MERGED" {
		c, _ := word(r.Rest)
		return reply{Verb: protocol.ReplyMerged, C: c}
	}
	return r
}

// consider decides what to claim, if the builder is free. The choice is
// made now, from what it knows now, and said after React: a builder that
// hears TASKS with another does not see the other's ACK before it claims,
// which is how claim races happen.
func (b *builder) consider(w world) {
	if b.st != idle || b.resting || b.deciding {
		return
	}
	c := b.pick()
	if c == "" {
		return
	}
	b.deciding = true
	w.after(spread(w, b.s.React), func() {
		b.deciding = false
		if b.st != idle {
			return
		}
		b.st, b.c = claiming, c
		w.say("CLAIM " + c)
	})
}

func (b *builder) pick() string {
	ok := func(c string) bool { return slices.Contains(b.tasks, c) && !b.taken[c] && !b.avoid[c] }
	if len(b.s.Prefer) == 0 {
		for _, c := range b.tasks {
			if ok(c) {
				return c
			}
		}
		return ""
	}
	for _, c := range b.s.Prefer {
		if ok(c) {
			return c
		}
	}
	return ""
}

// begin starts work on c, from the progress an earlier builder left.
func (b *builder) begin(w world, c string, from int) {
	b.epoch++
	b.st, b.c, b.pct, b.lines, b.left, b.note, b.fixes = working, c, from, 0, b.s.Steps, "", 0
	if b.s.Begin != nil {
		b.s.Begin(c, b.branch())
	}
	if from > 0 {
		b.note = fmt.Sprintf("picking up from %d%%", from)
	}
	b.later(w, b.step)
}

// step is one unit of work: a quirk, a PROGRESS, or READY.
func (b *builder) step(w world) {
	if q, ok := b.s.Quirks[b.c]; ok && !b.fired[b.c] && b.lines >= q.After {
		b.fired[b.c] = true
		switch q.Kind {
		case GoSilent:
			b.epoch++
			b.st = silent
			return
		case Block:
			w.say(line("BLOCKED", b.c, q.Dep, q.Reason))
			b.dep = q.Dep
			b.wait(w)
			return
		case Abort:
			w.say(line("ABORT", b.c, q.Reason))
			b.avoid[b.c] = true
			b.drop(w)
			return
		}
	}
	if b.left--; b.left <= 0 {
		b.pct = 100
		branch := b.branch()
		if b.s.Push != nil {
			if err := b.s.Push(b.c, branch, b.fixes); err != nil {
				w.say(line("PROGRESS", b.c, "100", "push failed: "+err.Error()))
			}
		}
		w.say(line("READY", b.c, branch))
		b.st = reviewing
		return
	}
	b.pct += (100 - b.pct) / (b.left + 1)
	wip := ""
	if b.s.PushWIP != nil {
		if err := b.s.PushWIP(b.c, b.branch(), b.lines+1); err != nil {
			b.note = strings.TrimSpace(b.note + " push failed: " + err.Error())
		} else {
			wip = protocol.BranchKey + b.branch()
		}
	}
	w.say(line("PROGRESS", b.c, strconv.Itoa(b.pct), wip, b.note))
	b.note = ""
	b.lines++
	b.later(w, b.step)
}

// branch is the builder's own branch for its component.
func (b *builder) branch() string {
	if b.s.Namespace != "" {
		return b.s.Namespace + "/" + b.c
	}
	return b.name + "/" + b.c
}

// wait checks in on c at every step until UNBLOCKED: a blocked component
// still owes check-ins.
func (b *builder) wait(w world) {
	b.epoch++
	b.st = waiting
	var checkin func(world)
	checkin = func(w world) {
		w.say(line("PROGRESS", b.c, strconv.Itoa(b.pct), "waiting for "+b.dep))
		b.later(w, checkin)
	}
	b.later(w, checkin)
}

// later runs f after a step, unless the state has moved on by then.
func (b *builder) later(w world, f func(world)) {
	epoch := b.epoch
	w.after(spread(w, b.s.Step), func() {
		if b.epoch == epoch {
			f(w)
		}
	})
}

// drop lets c go and rests before claiming again.
func (b *builder) drop(w world) {
	b.epoch++
	b.st, b.c = idle, ""
	if b.s.Rest <= 0 {
		b.consider(w)
		return
	}
	b.resting = true
	w.after(spread(w, b.s.Rest), func() {
		b.resting = false
		b.consider(w)
	})
}

var progressRE = regexp.MustCompile(`progress (\d+)%`)

// resumedAt reads the progress an ACK's context says the last builder left
// (after a TIMEOUT, RETRY or ABORT), which the new builder picks up from:
// the demo shows foreman's handover working, so what the builder says
// next must follow from what foreman told it.
func resumedAt(context string) int {
	m := progressRE.FindStringSubmatch(context)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return min(n, 100)
}

// line joins the non-empty words of a protocol line.
func line(words ...string) string {
	out := ""
	for _, w := range words {
		if w == "" {
			continue
		}
		if out != "" {
			out += " "
		}
		out += w
	}
	return out
}
