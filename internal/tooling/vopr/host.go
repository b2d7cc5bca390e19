package vopr

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// Work in progress, handoffs and overlaps (contract section 10), modelled
// without git: the builders push tips to a repository that only counts
// them, and a host, the CI role, watches the branches named in the room,
// says OVERLAP for the pairs of components the seed made collide, and pins
// a departed builder's tip for the builder after it.

// repo is the host's repository, as tips: every push is kept, with the
// room's time it happened at, so that what a branch held at any time can
// be told (as git's reflog of it can).
type repo struct {
	w      *world
	n      int
	tips   map[string]string // branch -> its tip now
	pushes []push
	pins   map[string]string // refs/foreman/handoff/<c>/<n> -> commit; never moved
}

// push is one push: a branch moved to tip by an agent.
type push struct {
	branch, tip, by string
	at              time.Time // the room's clock
}

func newRepo(w *world) *repo {
	return &repo{w: w, tips: map[string]string{}, pins: map[string]string{}}
}

// push moves branch to a new commit of by's, or, empty, to an empty one (a
// force-push that drops the work).
func (r *repo) push(branch, by string, empty bool) string {
	r.n++
	tip := fmt.Sprintf("%040x", uint64(r.n)*0x9e3779b97f4a7c15+r.w.seed)
	if empty {
		tip = fmt.Sprintf("%040x", uint64(r.n))
	}
	r.tips[branch] = tip
	// The room's clock, not cut to its milliseconds: a push made just
	// after a line reached the room must not look as if made before it.
	r.pushes = append(r.pushes, push{branch: branch, tip: tip, by: by, at: r.w.now().Add(r.w.room.skew)})
	return tip
}

// tipAt is what branch held at the room's time at, pushed by anyone; ""
// if nothing had been pushed to it by then.
func (r *repo) tipAt(branch string, at time.Time) string {
	tip := ""
	for _, p := range r.pushes {
		if p.branch == branch && !p.at.After(at) {
			tip = p.tip
		}
	}
	return tip
}

// lastBy is the last tip by pushed to branch at or before at, among the
// first n pushes: what a builder who left at at had pushed last.
func (r *repo) lastBy(branch, by string, at time.Time, n int) string {
	tip := ""
	for _, p := range r.pushes[:n] {
		if p.branch == branch && p.by == by && !p.at.After(at) {
			tip = p.tip
		}
	}
	return tip
}

// pin keeps commit as ref. A pin is never moved: a second pin of the same
// ref to another commit breaks the invariant.
func (r *repo) pin(ref, commit string) {
	if old, ok := r.pins[ref]; ok && old != commit {
		r.w.fail(invHandoff, fmt.Sprintf("%s was pinned to %s, and again to %s", ref, old, commit))
		return
	}
	r.pins[ref] = commit
}

// departure is a builder leaving a component, as the host heard it.
type departure struct {
	n     int
	from  string
	why   string    // as the ACK after it says: TIMEOUT, RETRY, ABORT, RELEASE, ASSIGN
	at    time.Time // the room's time of the line that said it
	named string    // the branch it named itself for the component, if any
	// unanswered counts its builder lines about the component since it
	// left that foreman has not refused yet.
	unanswered int
}

// pinned is a handoff ref the host made: whose work, on which branch.
type pinned struct {
	n            int
	commit       string
	from, branch string
}

// host plays foreman host's part in section 10, from what it hears: the
// owners and states foreman announces, the branches builders name. When a
// component's branch moves it says OVERLAP for each other component in
// flight whose work the seed made collide with it, once per pair and set
// of files. When a builder leaves a component it notes when (the room's
// time of the line that said so); at the next ACK of that component, which
// names the branch the builder left and who left how, it pins what that
// branch held when the builder left (as git's reflog of the branch would
// tell) and says so to the new builder. When the builder who left named no
// branch of its own, the branch handed over is an earlier builder's: the
// pin made when that one left is handed again. It pins nothing it is not
// sure of: a departure it heard only as a line said again after a restart,
// or whose ACK names another builder or another way of leaving, or after
// which the builder spoke of the component unrefused (an ACK it missed).
type host struct {
	owner  map[string]string // as foreman's lines say
	flying map[string]bool   // building, blocked, in CI or in review
	merged map[string]bool
	branch map[string]string // the last ref named for each, as heard
	namer  map[string]string // who named it
	tip    map[string]string // the tip last looked at, per component
	pins   map[string][]pinned
	said   map[string]bool // OVERLAP c d files, once per pair and files
	count  map[string]int  // departures heard, per component
	left   map[string]*departure
	// aborting is a builder's ABORT foreman has not shown it took yet: a
	// departure once foreman's TASKS or hard-blocker ESCALATE of the
	// component (or an ACK naming it) says so, nothing once foreman
	// refuses the builder's line.
	aborting map[string]*departure
}

func newHost() *host {
	return &host{owner: map[string]string{}, flying: map[string]bool{}, merged: map[string]bool{},
		branch: map[string]string{}, namer: map[string]string{}, tip: map[string]string{}, said: map[string]bool{}, pins: map[string][]pinned{},
		count: map[string]int{}, left: map[string]*departure{}, aborting: map[string]*departure{}}
}

func (h *host) start(a *agent) {}

// line reads a builder's line: a branch named, or an ABORT (a departure).
func (h *host) line(a *agent, from, line string) {
	cmd, err := protocol.Read(line)
	if err != nil {
		var pe *protocol.ParseError
		if !errors.As(err, &pe) || !pe.CheckIn() {
			return
		}
	}
	if d := h.left[cmd.Component]; d != nil && d.from == from && cmd.Verb.IsBuilderLine() {
		// It speaks of c after it left: foreman refuses the line if it
		// has not c again (REJECT). One it does not refuse means the host
		// missed an ACK: when it left is then no longer known.
		d.unanswered++
	}
	if cmd.Verb == protocol.NoVerb || h.owner[cmd.Component] != from {
		return
	}
	switch cmd.Verb {
	case protocol.Progress:
		if cmd.Branch != "" {
			h.named(a, cmd.Component, from, cmd.Branch)
		}
	case protocol.Ready:
		if _, err := protocol.CheckRef(cmd.PR); err == nil {
			h.named(a, cmd.Component, from, cmd.PR)
		}
	case protocol.Abort:
		// Foreman may refuse it (it no longer owns c, though the host has
		// not heard that yet): a departure only once foreman took it.
		h.aborting[cmd.Component] = &departure{from: from, why: "ABORT", at: a.heardAt}
	}
}

// aborted: foreman took c's pending ABORT (its TASKS or ESCALATE of c
// says so, or an ACK naming it): the departure, at the time of the line.
func (h *host) aborted(a *agent, c string) {
	d := h.aborting[c]
	if d == nil {
		return
	}
	delete(h.aborting, c)
	if h.owner[c] != d.from {
		return
	}
	h.depart(a, c, d.from, "ABORT", d.at, false)
	h.flying[c] = false
}

// named is a branch named for c by its builder: when it moved, look for
// overlaps.
func (h *host) named(a *agent, c, by, branch string) {
	h.branch[c], h.namer[c] = branch, by
	tip := a.w.repo.tips[branch]
	if tip == "" || tip == h.tip[c] || !h.flying[c] {
		return
	}
	h.tip[c] = tip
	others := make([]string, 0, len(h.flying))
	for d, f := range h.flying {
		if f && d != c && h.branch[d] != "" && !h.merged[d] {
			others = append(others, d)
		}
	}
	if a.w.opts.plant == "overlap-merged" {
		for d := range h.merged {
			if d != c && h.branch[d] != "" {
				others = append(others, d)
			}
		}
	}
	slices.Sort(others)
	for _, d := range others {
		files := a.w.overlapFiles(c, d)
		if files == "" || h.said[c+" "+d+" "+files] || h.said[d+" "+c+" "+files] {
			continue
		}
		h.said[c+" "+d+" "+files] = true
		line := protocol.OverlapLine(c, d, strings.Fields(files))
		a.w.check.hostSays(c, d)
		a.w.count(faultOverlap)
		a.w.trace("host: %s", line)
		a.say(line)
	}
}

// leave is a departure of from from c, heard in a line at the room's time
// the message carries. One heard only as a line said again after a
// restart cannot be timed: it is counted, never pinned.
func (h *host) leave(a *agent, c, from, why string, again bool) {
	h.depart(a, c, from, why, a.heardAt, again)
}

// depart is a departure of from from c at the room's time at.
func (h *host) depart(a *agent, c, from, why string, at time.Time, again bool) {
	delete(h.aborting, c)
	if from == "" {
		return
	}
	h.count[c]++
	h.owner[c] = ""
	if again {
		delete(h.left, c)
		return
	}
	d := &departure{n: h.count[c], from: from, why: why, at: at}
	if h.namer[c] == from {
		d.named = h.branch[c]
	}
	h.left[c] = d
}

func (h *host) reply(a *agent, r reply) {
	switch r.verb {
	case protocol.ReplyReject:
		if d := h.aborting[r.c]; d != nil && d.from == r.agent {
			delete(h.aborting, r.c) // refused: not a departure
		} else if d := h.left[r.c]; d != nil && d.from == r.agent && d.unanswered > 0 {
			d.unanswered--
		}
	case protocol.ReplyAck:
		h.acked(a, r)
	case protocol.ReplyTimeout, protocol.ReplyRetry:
		if h.owner[r.c] == r.agent {
			h.leave(a, r.c, r.agent, r.verb.String(), a.heardAgain)
		}
		h.flying[r.c] = false
	case protocol.ReplyReview, protocol.ReplyWait, protocol.ReplyUnblocked, protocol.ReplyFix:
		h.flying[r.c] = true
	case protocol.ReplyMerged:
		h.done(r.c)
	case protocol.ReplyEscalate:
		if r.c != protocol.BuildSubject && protocol.Escalation(r.code) == protocol.HardBlocker {
			h.aborted(a, r.c) // only an ABORT holds c as a hard blocker
		}
		if r.c != protocol.BuildSubject && protocol.Escalation(r.code).Holds() {
			h.flying[r.c] = false
		}
	case protocol.ReplyOK:
		verb, rest := cut(r.c + " " + r.rest)
		c, rest := cut(rest)
		switch verb {
		case "MERGED":
			h.done(c)
		case "RELEASE":
			h.leave(a, c, h.owner[c], verb, a.heardAgain)
			h.flying[c] = false
		case "ASSIGN":
			if who, _ := cut(rest); h.owner[c] != "" && h.owner[c] != who {
				h.leave(a, c, h.owner[c], verb, a.heardAgain)
			}
		}
	case protocol.ReplyTasks:
		for _, c := range r.list {
			h.aborted(a, c)
			h.flying[c], h.owner[c] = false, ""
		}
	}
}

func (h *host) done(c string) {
	h.merged[c], h.flying[c], h.owner[c] = true, false, ""
	delete(h.left, c)
}

// acked: c has a new builder. If foreman's ACK names the branch the last
// one left, and the host heard when it left, what that branch held then
// is pinned and the new builder told.
func (h *host) acked(a *agent, r reply) {
	c := r.c
	if d := h.aborting[c]; d != nil {
		if hand, ok := protocol.ReadHandover(r.rest); ok && hand.Why == "ABORT" && hand.From == d.from {
			h.aborted(a, c) // the ACK names it: foreman took it, and the TASKS was missed
		}
	}
	if prev := h.owner[c]; prev != "" && prev != r.agent {
		h.leave(a, c, prev, "ASSIGN", a.heardAgain) // an ASSIGN whose OK it missed
	}
	h.owner[c], h.flying[c] = r.agent, true
	d := h.left[c]
	delete(h.left, c)
	hand, ok := protocol.ReadHandover(r.rest)
	if d == nil || !ok || hand.Branch == "" || hand.From != d.from || hand.Why != d.why || d.unanswered > 0 {
		return // no work named, or a departure the host did not hear
	}
	branch := hand.Branch
	h.branch[c], h.namer[c] = branch, ""
	if d.named != branch {
		// The builder who left named no branch of its own: the one handed
		// over is an earlier builder's, whose work was pinned when that
		// one left (what the branch holds now may have been dropped since).
		h.rehand(a, c, r.agent, branch)
		return
	}
	tip := a.w.repo.tipAt(branch, d.at)
	if a.w.opts.plant == "pin-late" {
		tip = a.w.repo.tips[branch]
	}
	if tip == "" {
		return
	}
	ref, ok := protocol.HandoffRef(c, d.n)
	if !ok {
		return
	}
	line, ok := protocol.HandoffLine(protocol.Handoff{To: r.agent, Component: c, N: d.n, Commit: tip, From: d.from, Branch: branch})
	if !ok {
		return
	}
	a.w.repo.pin(ref, tip)
	h.pins[c] = append(h.pins[c], pinned{n: d.n, commit: tip, from: d.from, branch: branch})
	h.hands(a, line)
	a.w.count(faultHandoff)
	a.w.trace("host: pins %s at %s, what %s held when %s left", ref, tip[:12], branch, d.from)
	a.say(line)
}

// hands is the host about to say a handoff line: the checks read it as
// said.
func (h *host) hands(a *agent, line string) {
	if ho, ok := protocol.ReadHandoff(line); ok {
		a.w.check.hostHands(ho)
	}
}

// rehand tells a new builder of the pin made when the branch handed over
// was last left by the builder who pushed it, if there is one.
func (h *host) rehand(a *agent, c, to, branch string) {
	for i := len(h.pins[c]) - 1; i >= 0; i-- {
		p := h.pins[c][i]
		if p.branch != branch {
			continue
		}
		line, ok := protocol.HandoffLine(protocol.Handoff{To: to, Component: c, N: p.n, Commit: p.commit, From: p.from, Branch: branch})
		if ok {
			a.w.trace("host: hands %s the pin of what %s left on %s", to, p.from, branch)
			h.hands(a, line)
			a.say(line)
		}
		return
	}
}
