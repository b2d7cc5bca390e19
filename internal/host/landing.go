package host

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentforeman/foreman/internal/host/receipt"
	"github.com/agentforeman/foreman/protocol"
)

// A component's way to the target, as the host's records say it, in one
// place:
//
//	checked ──▶ approved ──▶ in the train ──▶ landing ──▶ landed
//	 OpTree,     OpApproved    a car           OpReceipt    OpLanded, MERGED
//	 OpPass      (its tip)     (train.go)      then the     (OpNoted once its
//	                                           CAS          note is written)
//
// Each move checks, from the records and nowhere else, what must hold for
// it: a component is approved at one commit (the one that passed its check
// before review, with CI gating on), which never changes while it stays
// approved; a landing lands only that commit, merged on the target, whose
// tree passed a recorded run of the checks; its receipt is recorded before
// the target moves; an approved commit lands once. The shell does what the
// jobs say and reports what it saw; it decides none of this.

// approve takes foreman's word (STATUS c ... approved=yes) that c is
// approved, fixes the commit that was approved, and puts c on the train.
// With CI gating on, what was approved is what passed the check before
// review; a record of an approval from before a restart, for the same
// builder and ref, says the same. Without gating the auditors approved a
// branch nobody checked: the commit is the branch's when the host takes
// the approval up (its first car finds it, and it is recorded then).
func (h *Core) approve(c *comp, view protocol.Heard) {
	c.asked = false
	c.phase = approved
	a := Approval{Component: c.name, Owner: c.owner, Ref: c.ref}
	a.Auditors = approvers(view, c)
	a.Round = round(view)
	a.Cost = costOf(view)
	old, had := h.approvals[c.name]
	same := had && old.Owner == a.Owner && old.Ref == a.Ref
	switch p, passed := h.passOf(c); {
	case passed:
		a.Tip = p.Tip
	case same:
		a.Tip = old.Tip
	case h.cfg.Gating:
		// What passed before review is what the auditors were shown; with
		// no record of it the host cannot know what was approved, and will
		// not guess from what the branch holds now.
		h.report(c, &run{Job: Job{Kind: Car, Component: c.name, Ref: c.ref, Owner: c.owner}}, invalidOutcome(fmt.Sprintf(
			"the host has no record of the commit of %s that passed its check before review; say READY again to have it checked and reviewed", c.ref)))
		return
	}
	if same && old.Tip == a.Tip {
		if len(a.Auditors) == 0 {
			a.Auditors = old.Auditors
		}
		if a.Round == 0 {
			a.Round = old.Round
		}
	}
	h.noteApproval(a)
	h.board(c)
}

// noteApproval records a, unless the record holds it already.
func (h *Core) noteApproval(a Approval) {
	if old, ok := h.approvals[a.Component]; ok && sameApproval(old, a) {
		return
	}
	h.approvals[a.Component] = a
	h.record(Record{Op: OpApproved, Component: a.Component, Approval: &a})
}

func sameApproval(a, b Approval) bool {
	return a.Owner == b.Owner && a.Ref == b.Ref && a.Tip == b.Tip && a.Round == b.Round && slices.Equal(a.Auditors, b.Auditors)
}

// costOf is c's cost as foreman's STATUS line says it (spent=$1.25
// tokens=1200), nil when it says none or says it wrong: the receipt then
// says nothing rather than a guess.
func costOf(view protocol.Heard) *receipt.Cost {
	spent, ok := strings.CutPrefix(view.Field("spent"), "$")
	if !ok {
		return nil
	}
	if _, ok := protocol.ParseUSD(spent); !ok {
		return nil
	}
	tokens, err := strconv.ParseInt(view.Field("tokens"), 10, 64)
	if err != nil || tokens < 0 {
		return nil
	}
	return &receipt.Cost{USD: spent, Tokens: tokens}
}

// approvers are who approved c: foreman's word (approved_by), else the
// AUDIT PASS the host heard; none if neither (the receipt says so).
func approvers(view protocol.Heard, c *comp) []string {
	if by := view.Field("approved_by"); by != "" {
		return strings.Split(by, ",")
	}
	if c.auditor != "" {
		return []string{c.auditor}
	}
	return []string{}
}

// round is which review of its builder's approved c: one more than the
// failed audits foreman counts (audits=n/max); 0 when it does not say.
func round(view protocol.Heard) int {
	n, _, ok := strings.Cut(view.Field("audits"), "/")
	if !ok {
		return 0
	}
	failed, err := strconv.Atoi(n)
	if err != nil || failed < 0 {
		return 0
	}
	return failed + 1
}

// board puts approved c on the train, last, unless it is on it or its
// approved commit landed already (then its first car says so).
func (h *Core) board(c *comp) {
	if h.carOf(c) != nil {
		return
	}
	h.cars++
	k := &car{id: h.cars, c: c, boarded: h.now}
	if a, ok := h.approvals[c.name]; ok && a.Owner == c.owner && a.Ref == c.ref {
		k.tip = a.Tip
	}
	h.train = append(h.train, k)
}

// tipFound: without CI gating, the first car of c found the commit its
// branch held when the host took the approval up: that is what was
// approved from now on, recorded before anything is made of it.
func (h *Core) tipFound(k *car, tip string) {
	k.tip = tip
	a := h.approvals[k.c.name]
	a.Component, a.Owner, a.Ref, a.Tip = k.c.name, k.c.owner, k.c.ref, tip
	h.noteApproval(a)
}

// passedTree records what passed on a tree (before the verdict that uses
// it): the run and the commit are the core's, the rest the shell's report.
func (h *Core) passedTree(r *run, o Outcome) {
	if o.Tree == "" {
		return
	}
	var ev receipt.Checks
	if o.Checks != nil {
		ev = *o.Checks
	}
	ev.Run, ev.Kind, ev.Commit, ev.Tree = r.Run, r.Kind.String(), o.Commit, o.Tree
	if ev.Commands == nil {
		ev.Commands = []receipt.Command{}
	}
	if ev.Tries == nil {
		ev.Tries = []receipt.Log{}
	}
	if ev.RanOn == nil {
		ev.RanOn = []string{}
	}
	h.trees.put(ev.Tree, ev)
	h.record(Record{Op: OpTree, Component: r.Component, Checks: &ev})
}

func (h *Core) keepLanded(tip, commit string) {
	if tip != "" {
		h.landedAt.put(tip, commit)
	}
}

// land starts landing the front car once it passed, or, once a chain
// behind it passed, every car up to that one (a batch): the receipts are
// made and recorded, one per landed commit, then the target moves from
// where the host last knew it to the chain's head, by one compare-and-swap,
// so that it never holds a commit of the batch whose tree did not pass.
// Nothing lands that the records do not vouch for (mayLand).
func (h *Core) land() {
	if h.landing != nil || len(h.train) == 0 || h.target == "" || h.unsettled() {
		return
	}
	last := 0
	if !passed(h.train[0]) {
		if last = h.coverOf(0); last < 0 {
			return
		}
	}
	head := h.train[last]
	if head.notBefore.After(h.now) {
		return
	}
	ev, ok := h.trees.get(head.done.Tree)
	if !ok {
		// Its tree's run is no longer on record (the oldest trees are
		// forgotten): nothing lands on a pass it cannot show; the chain
		// is checked again.
		head.done = nil
		h.reconcile()
		return
	}
	if why := h.rules().Passed(h.cfg.Checks, &ev); why != "" {
		// On record, and it does not count (the checks changed since):
		// checked again.
		h.say("queue: not landing " + head.c.name + " yet: the run that passed on its tree does not count: " + why + "; checked again")
		head.done = nil
		h.reconcile()
		return
	}
	for i, k := range h.train[:last+1] {
		if why := h.mayLand(k); why != "" {
			// Never expected: the train only carries what the records
			// allow. The car steps off, and is checked again when it
			// boards again.
			h.say("queue: not landing " + k.c.name + ": " + why)
			h.train = slices.Delete(h.train, i, i+1)
			k.c.phase = unknown
			h.emptied()
			h.reconcile()
			return
		}
	}
	jobs, err := h.landings(h.train[:last+1], ev)
	if err != nil {
		wait := h.backoff(head.tries + 1)
		head.tries++
		head.notBefore = h.now.Add(wait)
		if why := "cannot sign its receipt: " + err.Error(); why != head.said {
			head.said = why
			h.say("queue: cannot land " + head.c.name + " yet: " + why + "; trying again in " + wait.String())
		}
		return
	}
	for _, j := range jobs {
		h.record(Record{Op: OpReceipt, Run: j.Run, Component: j.Component, Commit: j.Commit, Base: j.Base, Tip: j.Tip, Receipt: j.Receipt, Chain: j.Chain})
		h.receipts[j.Commit] = &Receipt{Component: j.Component, Commit: j.Commit, Base: j.Base, Tip: j.Tip, Envelope: j.Receipt, Link: j.Chain}
	}
	j := jobs[len(jobs)-1]
	if len(jobs) > 1 {
		j.Batch = jobs[:len(jobs)-1]
	}
	r := &run{Job: j, queued: h.now}
	h.landing = r
	for _, k := range h.train[:last+1] {
		if k.run != nil {
			h.cancel(k.run) // its own check can tell nothing more: its work passed
			k.run = nil
		}
		k.c.run = r
	}
}

// landings are the Land jobs of cars, the front of the train up to the
// one whose chain passed (ev), each with its signed receipt: one car's
// own, or a batch's, each chained to the one before it (head.go).
func (h *Core) landings(cars []*car, ev receipt.Checks) ([]Job, error) {
	if h.cfg.Repository == "" {
		return nil, fmt.Errorf("the host has no repository name for its receipts (host.repository)")
	}
	h.lastRun++
	head := cars[len(cars)-1].done
	var batch *receipt.Batch
	made := []Made{{Commit: head.Commit, Tree: head.Tree}}
	if len(cars) > 1 {
		made = head.Chain[len(head.Chain)-len(cars):]
		batch = &receipt.Batch{Head: head.Commit}
		for _, m := range made {
			batch.Commits = append(batch.Commits, m.Commit)
		}
	}
	var jobs []Job
	on, prev := h.target, h.chain
	for i, k := range cars {
		c := k.c
		l := receipt.Landing{Host: h.cfg.Self, Target: "refs/heads/" + h.cfg.Target, Component: c.name, Builder: c.owner,
			Ref: c.ref, Approved: h.approvals[c.name].Approval, LandedOn: on, Commit: made[i].Commit, Tree: made[i].Tree,
			Checks: ev, At: h.now, LandedAs: h.landAs(), Batch: batch, Repository: h.cfg.Repository, Chain: h.link(prev, on),
			ChecksChanged: checksChangedBy(head, made[i].Commit), Cost: h.approvals[c.name].Cost}
		env, err := h.sign(receipt.New(l))
		if err != nil {
			return nil, err
		}
		start := prev.Start
		if start == "" {
			start = l.Chain.Start
		}
		link := &receipt.Link{Seq: l.Chain.Seq, Digest: receipt.StatementDigest(env), Commit: l.Commit, Start: start}
		jobs = append(jobs, Job{Run: h.lastRun, Kind: Land, Component: c.name, Ref: c.ref, Owner: c.owner,
			Base: on, Tip: k.tip, Commit: l.Commit, Tree: l.Tree, Receipt: env, Chain: link, Prune: h.cfg.Prune, Squash: h.cfg.Squash})
		on, prev = l.Commit, *link
	}
	return jobs, nil
}

// checksChangedBy is what the chain o made says commit changed of the
// files that define the checks.
func checksChangedBy(o *Outcome, commit string) []string {
	for _, m := range o.Chain {
		if m.Commit == commit {
			return m.ChecksChanged
		}
	}
	return nil
}

// mayLand is why the records say k may not land now ("": it may), by the
// rules (rules.go): no approval of what it holds, or that landed before.
// (Whether its tree, or its batch's, passed, land looks up.)
func (h *Core) mayLand(k *car) string {
	c := k.c
	l := Landable{Component: c.name, Owner: c.owner, Ref: c.ref, Tip: k.tip, Target: h.cfg.Target}
	if a, ok := h.approvals[c.name]; ok {
		l.Approval = &a
		if at, ok := h.landedAt.get(a.Tip); ok {
			l.LandedAt = at
		}
	}
	return h.rules().MayLand(l)
}

func (h *Core) sign(s receipt.Signed) ([]byte, error) {
	if h.cfg.Sign == nil {
		return nil, fmt.Errorf("the host has no key to sign with")
	}
	return h.cfg.Sign(s)
}

// landFinished takes the end of a landing (of one car, or a batch). A
// landing under way is never cancelled (its compare-and-swap may be done):
// what it did is said even when a component left approval meanwhile.
func (h *Core) landFinished(r *run, o Outcome) {
	h.landing = nil
	landings := r.Landings()
	for _, l := range landings {
		if c := h.get(l.Component); c.run == r {
			c.run = nil
		}
	}
	switch o.Result {
	case Landed:
		// What landed is what the job was to land, whatever else it says:
		// the target is at r.Commit, each landing at its own.
		h.target = r.Commit
		left := false // a car of it left the train while it landed
		for i, l := range landings {
			c, lo := h.get(l.Component), o
			lo.Commit, lo.Tree = l.Commit, l.Tree
			if l.Commit != r.Commit {
				lo.ReceiptFile = ""
				lo.Pruned = slices.Contains(o.PrunedOf, l.Component)
			}
			if len(o.ReceiptFiles) == len(landings) {
				lo.ReceiptFile = o.ReceiptFiles[i]
			}
			lo.Flaky = nil
			if len(h.train) > 0 && h.train[0].c == c {
				k := h.train[0]
				h.train = h.train[1:]
				h.landed = append(h.landed, landing{id: k.id, link: h.linkOf(k)})
				if k.done != nil {
					lo.Flaky = k.done.Flaky
				}
			} else {
				left = true
			}
			h.verdict(c, &run{Job: l}, lo)
		}
		if left {
			// The chains behind were made without it: made again on the
			// target.
			h.base, h.landed = h.target, nil
		}
		h.emptied()
	case Moved:
		// The target moved outside the queue: every chain is made again on
		// it. The landing was not made.
		h.record(Record{Op: OpEnd, Run: r.Run, Component: r.Component, Result: o.Result.String()})
		for _, l := range landings {
			h.void(l.Commit)
		}
		h.movedByHand(o.Target)
	case Retry:
		h.record(Record{Op: OpEnd, Run: r.Run, Component: r.Component, Result: o.Result.String()})
		if h.carOf(h.get(r.Component)) != nil {
			h.retryLanding(r, o.Line)
		}
	case Refused:
		// The last check before the compare-and-swap found a commit that
		// is not exactly its approved landing: nothing moved. Never
		// expected (these jobs are the core's): said, and the cars are
		// checked again, after a wait, as if they had not passed.
		h.record(Record{Op: OpEnd, Run: r.Run, Component: r.Component, Result: o.Result.String()})
		var names []string
		for _, l := range landings {
			h.void(l.Commit)
			names = append(names, l.Component)
			if k := h.carOf(h.get(l.Component)); k != nil {
				k.done, k.seen = nil, 0
				k.tries++
				k.notBefore = h.now.Add(h.backoff(k.tries))
			}
		}
		h.say(fmt.Sprintf("queue: not landing %s: the check before the compare-and-swap refused it: %s; checked again",
			strings.Join(names, " "), bound(o.Line, detailRoom)))
	case Invalid, Stale:
		// A branch moved after approval (o.Culprit's, in a batch): it
		// steps back, and the cars behind it are checked again without it.
		for _, l := range landings {
			h.void(l.Commit)
		}
		who := landings[len(landings)-1]
		for _, l := range landings {
			if l.Component == o.Culprit {
				who = l
			}
		}
		c := h.get(who.Component)
		if k := h.carOf(c); k != nil {
			h.train = slices.DeleteFunc(h.train, func(x *car) bool { return x == k })
			h.emptied()
			h.verdict(c, &run{Job: who}, o)
		} else {
			h.record(Record{Op: OpEnd, Run: r.Run, Component: r.Component, Result: o.Result.String()})
		}
	default:
		// Cancelled: the shell stopped before the compare-and-swap, or
		// cannot say. Whether it landed is found out (a Note job each)
		// before anything else lands: the next receipt must follow the
		// chain's true newest landing.
		h.record(Record{Op: OpEnd, Run: r.Run, Component: r.Component, Result: o.Result.String()})
		for _, l := range landings {
			if x := h.receipts[l.Commit]; x != nil {
				h.settle(*x)
			}
		}
	}
}

// movedByHand: the target is not where the host left it (a commit pushed
// straight to it): the room is told, and the train is made again on it.
func (h *Core) movedByHand(to string) {
	h.say(fmt.Sprintf("queue: %s moved outside the queue (to %s); the train is checked again on it", h.cfg.Target, short(to)))
	h.target, h.base, h.landed = to, to, nil
}

// landedNow records that r put c's approved commit on the target at
// o.Commit (a landing just made, or found made), before MERGED is said;
// its receipt is written as a note now, if the job did not. It says which
// commit landed it and whether the host holds its receipt.
func (h *Core) landedNow(c *comp, r *run, o Outcome) (string, bool) {
	// The approved commit: the job's, or, for a car that went out before
	// it was known (no check before review), the one it found landed.
	tip := cmp.Or(r.Tip, o.Tip)
	commit, base := o.Commit, r.Base
	known := !o.Already
	if o.Already {
		// Found on the target, landed before: by which commit, on which,
		// is the records' to say (a landing this host made), or nobody's
		// (pushed by hand, or landed before receipts): then no base.
		commit, base = o.Commit, ""
		if at, ok := h.landedAt.get(tip); ok {
			commit, known = at, true // recorded by this host: its receipt came first
		}
		for _, x := range h.receipts {
			if x.Tip == tip && x.Component == c.name {
				commit, base = x.Commit, x.Base
			}
		}
	}
	if at, ok := h.landedAt.get(tip); !ok || at != commit {
		h.record(Record{Op: OpLanded, Component: c.name, Commit: commit, Base: base, Tip: tip})
		h.keepLanded(tip, commit)
	}
	x := h.receipts[commit]
	if x != nil {
		known = true
		x.Landed = true
		h.chained(x.Link)
		if o.Noted {
			h.noted(commit)
		} else {
			h.settle(*x)
		}
	}
	h.landedN++
	h.lands = append(h.lands, LandedView{Component: c.name, Commit: commit, Tip: tip, Receipt: known, File: o.ReceiptFile, At: h.now})
	if len(h.lands) > maxLanded {
		h.lands = h.lands[1:]
	}
	return commit, known
}

func (h *Core) noted(commit string) {
	delete(h.receipts, commit)
	h.record(Record{Op: OpNoted, Commit: commit})
}

func (h *Core) void(commit string) {
	if _, ok := h.receipts[commit]; ok {
		delete(h.receipts, commit)
		h.record(Record{Op: OpVoid, Commit: commit})
	}
}

// settle has a receipt written as its commit's note, if that commit is on
// the target (a Note job): a landing whose note a crash or a stop cut off,
// or whose record did too.
func (h *Core) settle(x Receipt) {
	h.receipts[x.Commit] = &x
	for _, r := range h.notes {
		if r.Commit == x.Commit {
			return
		}
	}
	h.lastRun++
	h.notes = append(h.notes, &run{Job: Job{Run: h.lastRun, Kind: Note, Component: x.Component, Base: x.Base, Tip: x.Tip,
		Commit: x.Commit, Receipt: x.Envelope}, queued: h.now})
}

// noteFinished takes the end of a Note job.
func (h *Core) noteFinished(r *run, o Outcome) {
	h.notes = slices.DeleteFunc(h.notes, func(n *run) bool { return n == r })
	h.record(Record{Op: OpEnd, Run: r.Run, Component: r.Component, Result: o.Result.String(), Commit: r.Commit})
	x := h.receipts[r.Commit]
	if x == nil {
		return
	}
	switch o.Result {
	case Landed:
		if !x.Landed {
			// The target moved and the ledger never heard: it is landed.
			x.Landed = true
			h.record(Record{Op: OpLanded, Component: x.Component, Commit: x.Commit, Base: x.Base, Tip: x.Tip})
			h.keepLanded(x.Tip, x.Commit)
			h.chained(x.Link)
		}
		h.noted(x.Commit)
	case Moved:
		h.void(x.Commit)
	case Retry:
		h.notes = append(h.notes, h.again(r, "write the receipt of "+r.Component+" ("+short(r.Commit)+")", o.Line))
	}
}

// LandedView is one landing this host made (or found made), with where
// its receipt is.
type LandedView struct {
	Component string `json:"c"`
	Commit    string `json:"commit"`
	Tip       string `json:"tip,omitempty"`
	// Receipt: the host holds this landing's receipt (refs/notes/foreman
	// on Commit); false for one found already made with no receipt of the
	// host's (pushed by hand, or landed by a host before receipts).
	Receipt bool      `json:"receipt"`
	File    string    `json:"file,omitempty"` // the receipt's copy in host.logs, for the board
	At      time.Time `json:"at"`
}

func invalidOutcome(why string) Outcome { return Outcome{Result: Invalid, Line: why} }

// landAs is how a component lands (host.land_as), as its receipt says.
func (h *Core) landAs() string {
	if h.cfg.Squash {
		return receipt.LandedAsSquash
	}
	return receipt.LandedAsMerge
}
