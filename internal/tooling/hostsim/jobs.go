package hostsim

import (
	"slices"

	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/host/receipt"
	"github.com/agentforeman/foreman/protocol"
)

// The host's jobs, done on the simulated repository as package gitjob does
// them on a real one (the same order of looking: what landed, where the
// target is, then the branch), reporting what they saw: the core decides.
// A check or a car sees the repository when it starts and reports when it
// ends; a landing, a note, a pin or a scan is done at its end.

// ref is a READY's ref as the repository names it: its branch.
func ref(name string) string {
	if r, err := protocol.CheckRef(name); err == nil && r.Branch != "" {
		return r.String()
	}
	return name
}

// evidence is how the checks ran, for the receipts.
func evidence() *receipt.Checks {
	return &receipt.Checks{Commands: []receipt.Command{{Command: "make test", Result: "passed"}},
		Tries: []receipt.Log{}, RanOn: []string{"host"}, Sandbox: "off"}
}

// checked is the verdict of the checks on c, noted when they pass.
func (r *repo) checked(c *commit, o *host.Outcome) {
	o.Commit, o.Tree = c.id, c.tree
	if !r.passes(c) {
		o.Result, o.Line = host.Failed, "make test: FAIL: a broken version"
		return
	}
	o.Result, o.Checks = host.Passed, evidence()
}

// check starts a Check job: what the builder named, merged with main now;
// its end (done) says Moved if the branch moved meanwhile.
func (r *repo) check(j host.Job) (o host.Outcome, done func(host.Outcome) host.Outcome) {
	if len(j.Ahead) > 0 || len(j.OnTrain) > 0 {
		return r.shared(j)
	}
	tip := r.refs[ref(j.Ref)]
	if tip == "" {
		return host.Outcome{Result: host.Invalid, Line: "no branch " + j.Ref + " in the host's repository; push it, then say READY again"}, nil
	}
	base := r.refs["main"]
	m := r.merge(base, tip)
	o = host.Outcome{Tip: tip, Base: base}
	if slices.Contains(j.Passed, m.tree) {
		// A tree that passed before is not checked again (gitjob's check).
		o.Commit, o.Tree, o.Result, o.Reused = m.id, m.tree, host.Passed, true
		return o, nil
	}
	r.checked(m, &o)
	return o, func(o host.Outcome) host.Outcome {
		if now := r.refs[ref(j.Ref)]; now != tip {
			return host.Outcome{Result: host.Moved}
		}
		if o.Result == host.Passed {
			r.passed[o.Tree] = true
		}
		return o
	}
}

// shared starts a shared Check job, as gitjob's shared does: each READY
// merged on main, one on top of the other, checked once on the last; its
// end says Moved if any branch moved meanwhile.
func (r *repo) shared(j host.Job) (host.Outcome, func(host.Outcome) host.Outcome) {
	links := append(slices.Clone(j.Ahead), j.Link())
	o := host.Outcome{Base: r.refs["main"]}
	if len(j.OnTrain) > 0 {
		o.Base = j.Base
	}
	head := o.Base
	for _, l := range j.OnTrain {
		m := r.merge(head, l.Tip)
		head = m.id
		o.Chain = append(o.Chain, host.Made{Commit: m.id, Tree: m.tree, Tip: l.Tip})
	}
	for _, l := range links {
		tip := r.refs[ref(l.Ref)]
		if tip == "" {
			return host.Outcome{Result: host.Invalid, Culprit: l.Component, Line: "no branch " + l.Ref}, nil
		}
		m := r.merge(head, tip)
		head = m.id
		o.Chain = append(o.Chain, host.Made{Commit: m.id, Tree: m.tree, Tip: tip})
	}
	chain := o.Chain
	o.Tip = chain[len(chain)-1].Tip
	if m := r.commits[head]; slices.Contains(j.Passed, m.tree) {
		o.Commit, o.Tree, o.Result, o.Reused = m.id, m.tree, host.Passed, true
		return o, nil
	}
	r.checked(r.commits[head], &o)
	return o, func(o host.Outcome) host.Outcome {
		for i, l := range links {
			if r.refs[ref(l.Ref)] != chain[len(j.OnTrain)+i].Tip {
				return host.Outcome{Result: host.Moved, Culprit: l.Component}
			}
		}
		if o.Result == host.Passed {
			r.passed[o.Tree] = true
		}
		return o
	}
}

// car starts a Car job, as gitjob's car does.
func (r *repo) car(j host.Job) (host.Outcome, func(host.Outcome) host.Outcome) {
	now := r.refs["main"]
	if j.Tip != "" && r.isAncestor(j.Tip, now) {
		return host.Outcome{Result: host.Landed, Commit: now, Base: now, Tip: j.Tip, Already: true}, nil
	}
	if j.Target != "" && now != j.Target && now != j.Landing {
		return host.Outcome{Result: host.Moved, Target: now}, nil
	}
	branch := r.refs[ref(j.Ref)]
	tip := j.Tip
	if r.plant == "branch-now" && branch != "" {
		tip = branch // the bug: what the branch holds now, reviewed or not
	}
	switch {
	case tip == "" && branch == "":
		return host.Outcome{Result: host.Invalid, Line: "no branch " + j.Ref}, nil
	case tip == "":
		tip = branch
		if r.isAncestor(tip, now) {
			return host.Outcome{Result: host.Landed, Commit: now, Base: now, Tip: tip, Already: true}, nil
		}
	case branch != tip:
		return host.Outcome{Result: host.Stale, Found: branch, Tip: tip}, nil
	}
	base := j.Base
	if base == "" {
		base = now
	}
	// The chain, one commit per link: each car ahead, then this one.
	head := base
	var chain []host.Made
	for _, l := range j.Ahead {
		c := r.merge(head, l.Tip)
		chain = append(chain, host.Made{Commit: c.id, Tree: c.tree})
		head = c.id
	}
	m := r.merge(head, tip)
	chain = append(chain, host.Made{Commit: m.id, Tree: m.tree})
	o := host.Outcome{Base: base, Tip: tip, Commit: m.id, Tree: m.tree, Chain: chain}
	if slices.Contains(j.Passed, m.tree) {
		o.Result, o.Reused = host.Passed, true
		return o, nil
	}
	r.checked(m, &o)
	return o, func(o host.Outcome) host.Outcome {
		if o.Result == host.Passed {
			r.passed[o.Tree] = true
		}
		return o
	}
}

// land does a Land job, as gitjob's land does: main moves from j.From()
// to j.Commit by one compare-and-swap, past every landing of its batch
// (the first-parent commits between are exactly theirs), then each
// landing's receipt becomes its commit's note. It is done at once: the
// host killed with a landing under way has it done, or not (host.go).
func (r *repo) land(j host.Job) host.Outcome {
	now := r.refs["main"]
	landings, from := j.Landings(), j.From()
	if r.isAncestor(j.Commit, now) {
		o := host.Outcome{Result: host.Landed, Commit: j.Commit, Already: true}
		o.Noted = r.noteAll(landings) && len(j.Receipt) > 0
		return o
	}
	if now != from {
		return host.Outcome{Result: host.Moved, Target: now}
	}
	c := r.commits[j.Commit]
	if c == nil || !r.isAncestor(from, j.Commit) || c.tree != j.Tree || !r.batchAsMade(j) {
		return host.Outcome{Result: host.Moved, Target: now}
	}
	for _, l := range landings {
		if branch := r.refs[ref(l.Ref)]; l.Tip != "" && branch != l.Tip && r.plant != "branch-now" {
			return host.Outcome{Result: host.Stale, Culprit: l.Component, Found: branch}
		}
	}
	r.refs["main"] = j.Commit
	if r.plant == "batch-prefix" && len(j.Batch) > 0 {
		// The bug: main holds the batch's first commit alone, whose tree
		// no check passed (the batch's head's did).
		r.refs["main"] = j.Batch[0].Commit
	}
	head := ""
	if len(j.Batch) > 0 {
		head = j.Commit
	}
	for _, l := range landings {
		r.landed[l.Commit] = landing{component: l.Component, tip: l.Tip, run: l.Run, head: head}
	}
	o := host.Outcome{Result: host.Landed, Commit: j.Commit, Tree: c.tree}
	if r.noteFails {
		// The notes ref was locked: main moved, no note was written; the
		// core has them written later (Note jobs), or they are never
		// written, which the end of the seed finds.
		return o
	}
	o.Noted = r.noteAll(landings) && len(j.Receipt) > 0
	return o
}

// batchAsMade reports whether the first-parent commits from j.From() up to
// j.Commit are exactly j's landings' (always so for one landing: the caller
// checks that j.Commit comes from j.From()).
func (r *repo) batchAsMade(j host.Job) bool {
	if len(j.Batch) == 0 {
		return true
	}
	landings := j.Landings()
	id := j.Commit
	for i := len(landings) - 1; i >= 0; i-- {
		c := r.commits[id]
		if c == nil || id != landings[i].Commit || len(c.parents) == 0 {
			return false
		}
		id = c.parents[0]
	}
	return id == j.From()
}

// noteAll writes each landing's receipt as its commit's note: true when
// every one was written.
func (r *repo) noteAll(landings []host.Job) bool {
	all := true
	for _, l := range landings {
		all = r.note(l) && all
	}
	return all
}

func (r *repo) note(j host.Job) bool {
	if len(j.Receipt) == 0 {
		return false
	}
	r.notes[j.Commit] = j.Receipt
	return true
}

// noteJob does a Note job.
func (r *repo) noteJob(j host.Job) host.Outcome {
	if !r.isAncestor(j.Commit, r.refs["main"]) {
		return host.Outcome{Result: host.Moved, Target: r.refs["main"]}
	}
	r.note(j)
	return host.Outcome{Result: host.Landed, Commit: j.Commit, Already: true, Noted: true}
}
