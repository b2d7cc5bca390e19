package gitjob

import (
	"context"
	"path/filepath"

	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/host/checks"
)

// car does a Car job: the chain made (the base, merged with each car
// ahead in order, then with this car's approved commit, each merge made
// the same way whichever job makes it), then checked, unless its tree
// passed already. A chain that does not merge says whose merge conflicted:
// a car ahead's is not this car's fault.
func (r *Runner) car(ctx context.Context, j host.Job) host.Outcome {
	t, now, bad := r.resolve(ctx, j.Ref)
	tip := j.Tip
	switch {
	case tip == "" && bad != nil:
		return *bad
	case tip == "":
		tip = now
	case t.Branch != "" && now != tip:
		// What was reviewed is not what the builder has now: nothing
		// stale lands, and nothing unreviewed either.
		return movedAfterApproval(t.String(), tip, now)
	}
	base := j.Base
	if base == "" {
		b, bad := r.base(ctx)
		if bad != nil {
			return *bad
		}
		base = b
	}
	o := host.Outcome{Base: base, Tip: tip}
	landed, err := r.o.Repo.IsAncestor(ctx, tip, base)
	if err != nil {
		return retry(err)
	}
	if landed {
		// On the target already: a landing a crash cut short.
		o.Result, o.Commit, o.Already = host.Landed, base, true
		return o
	}
	head := base
	for _, l := range j.Ahead {
		commit, _, conflicts, err := r.mergeResult(ctx, l, head, l.Tip)
		if err != nil {
			return retry(err)
		}
		if len(conflicts) > 0 {
			o.Result, o.Files, o.Culprit = host.Conflicted, conflicts, l.Component
			return o
		}
		head = commit
	}
	commit, tree, conflicts, err := r.mergeResult(ctx, j.Link(), head, tip)
	if err != nil {
		return retry(err)
	}
	if len(conflicts) > 0 {
		o.Result, o.Files = host.Conflicted, conflicts
		return o
	}
	o.Commit, o.Tree = commit, tree
	if r.hasPassed(tree) {
		o.Result = host.Passed
		return o
	}
	res, err := r.checkTree(ctx, j, commit, base, &o)
	if ctx.Err() != nil {
		return host.Outcome{Result: host.Cancelled}
	}
	if err != nil {
		return retry(err)
	}
	if !res.Passed {
		return failed(res, o)
	}
	o.Result = host.Passed
	return o
}

// checkTree has the checks run on commit (here, or by Options.Checker)
// and notes the tree as passed when they pass. The outcome gets the log
// of the last try, and the checks that were flaky.
func (r *Runner) checkTree(ctx context.Context, j host.Job, commit, base string, o *host.Outcome) (checks.Result, error) {
	res, err := r.checker().Check(ctx, CheckRequest{Job: j, Commit: commit, Base: base})
	if n := len(res.Logs); n > 0 {
		o.Log = res.Logs[n-1]
		o.URL = r.LogURL(filepath.Base(o.Log))
	}
	o.Flaky = append(o.Flaky, res.Flaky...)
	if err == nil && res.Passed {
		r.notePassed(o.Tree)
	}
	return res.Result, err
}

// short is a commit id as people read it.
func short(oid string) string {
	if len(oid) > 12 {
		return oid[:12]
	}
	return oid
}
