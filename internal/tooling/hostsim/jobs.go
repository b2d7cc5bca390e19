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
		return host.Outcome{Result: host.Invalid, Line: "branch " + j.Ref + " moved after " + tip[:12] + " was approved; say READY again"}, nil
	}
	base := j.Base
	if base == "" {
		base = now
	}
	head := base
	for _, l := range j.Ahead {
		head = r.merge(head, l.Tip).id
	}
	m := r.merge(head, tip)
	o := host.Outcome{Base: base, Tip: tip, Commit: m.id, Tree: m.tree}
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

// land does a Land job, as gitjob's land does: cas is false when it must
// stop right before the compare-and-swap (the host dies there).
func (r *repo) land(j host.Job) host.Outcome {
	now := r.refs["main"]
	if r.isAncestor(j.Commit, now) {
		o := host.Outcome{Result: host.Landed, Commit: j.Commit, Already: true}
		o.Noted = r.note(j)
		return o
	}
	if now != j.Base {
		return host.Outcome{Result: host.Moved, Target: now}
	}
	c := r.commits[j.Commit]
	if c == nil || !r.isAncestor(j.Base, j.Commit) || c.tree != j.Tree {
		return host.Outcome{Result: host.Moved, Target: now}
	}
	if branch := r.refs[ref(j.Ref)]; j.Tip != "" && branch != j.Tip && r.plant != "branch-now" {
		return host.Outcome{Result: host.Invalid, Line: "branch " + j.Ref + " moved after " + j.Tip[:12] + " was approved; say READY again"}
	}
	r.refs["main"] = j.Commit
	r.landed[j.Commit] = landing{component: j.Component, tip: j.Tip, run: j.Run}
	o := host.Outcome{Result: host.Landed, Commit: j.Commit, Tree: c.tree}
	o.Noted = r.note(j)
	return o
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
