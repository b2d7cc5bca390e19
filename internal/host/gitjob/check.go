package gitjob

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host"
)

// check does a Check job: what the builder named, merged with the target
// as it is now, checked. The verdict is about the merge result, what would
// land, not the branch alone.
func (r *Runner) check(ctx context.Context, j host.Job) host.Outcome {
	if len(j.Ahead) > 0 || len(j.OnTrain) > 0 {
		return r.shared(ctx, j)
	}
	t, tip, bad := r.resolve(ctx, j.Ref)
	if bad != nil {
		return *bad
	}
	base, bad := r.base(ctx)
	if bad != nil {
		return *bad
	}
	var o host.Outcome
	commit, tree, conflicts, err := r.mergeResult(ctx, j.Link(), base, tip, j.Squash)
	if err != nil {
		return retry(err)
	}
	if len(conflicts) > 0 {
		if !r.o.AutoRebase || t.Branch == "" {
			return host.Outcome{Result: host.Conflicted, Files: conflicts}
		}
		// Rebase in a private worktree; if that is clean, the branch
		// moves to the result (only from the commit the host rebased).
		to, clean, err := r.rebase(ctx, j, tip, base)
		switch {
		case err != nil:
			return retry(err)
		case !clean:
			return host.Outcome{Result: host.Conflicted, Files: conflicts}
		}
		if err := r.o.Repo.UpdateRef(ctx, t.Branch, to, tip, "foreman host: rebase onto "+r.o.Target); err != nil {
			if errors.Is(err, gitrepo.ErrMoved) {
				return host.Outcome{Result: host.Moved}
			}
			return retry(err)
		}
		o.Rebased = &host.Rebase{Branch: t.String(), From: tip, To: to}
		tip = to
		if commit, tree, conflicts, err = r.mergeResult(ctx, j.Link(), base, tip, j.Squash); err != nil {
			return retry(err)
		} else if len(conflicts) > 0 {
			return host.Outcome{Result: host.Conflicted, Files: conflicts, Rebased: o.Rebased}
		}
	}
	o.Commit, o.Tip, o.Base, o.Tree = commit, tip, base, tree
	if slices.Contains(j.Passed, tree) {
		// This tree passed before (a READY said again, a car's chain that
		// was this merge): not checked twice.
		o.Result, o.Reused = host.Passed, true
		return o
	}
	res, err := r.checkTree(ctx, j, commit, base, &o)
	if ctx.Err() != nil {
		return host.Outcome{Result: host.Cancelled}
	}
	if err != nil {
		return retry(err)
	}
	if t.Branch != "" {
		// Deleted or force-pushed while its checks ran: what was checked
		// is not what the builder has now.
		now, err := r.o.Repo.Resolve(ctx, t)
		switch {
		case err != nil:
			return retry(err)
		case now == "":
			return invalid(fmt.Sprintf("branch %s was deleted while its checks ran; push it, then say READY again", t))
		case now != tip:
			return host.Outcome{Result: host.Moved}
		}
	}
	if !res.Passed {
		return r.failed(ctx, res, o)
	}
	o.Result = host.Passed
	return o
}

// rebase rebases tip onto base in a private worktree (a slot, reset to
// tip first): the new tip, or clean false when the rebase stopped on a
// conflict (and was aborted).
func (r *Runner) rebase(ctx context.Context, j host.Job, tip, base string) (string, bool, error) {
	s := r.takeSlot()
	defer r.giveSlot(s)
	if err := r.ready(ctx, s, tip); err != nil {
		return "", false, err
	}
	head, conflict, err := r.o.Repo.Rebase(ctx, s.dir, base)
	if err != nil {
		return "", false, err
	}
	return head, !conflict, nil
}

// shared does a shared Check job: each READY of j.Ahead, then j's own,
// merged with the target (or on the train's chain, j.OnTrain) one on top
// of the other (no rebase), and the checks run once on the last merge. Anything but a pass (a ref gone, a
// conflict, a failure, a branch moved meanwhile) is reported as it is for
// the whole: the core then checks each alone, where it is said whose.
func (r *Runner) shared(ctx context.Context, j host.Job) host.Outcome {
	base, bad := r.base(ctx)
	if bad != nil {
		return *bad
	}
	if len(j.OnTrain) > 0 {
		base = j.Base
	}
	links := append(slices.Clone(j.Ahead), j.Link())
	o := host.Outcome{Base: base}
	head := base
	for _, l := range j.OnTrain {
		// The train's chain, each merge made as its car makes it.
		commit, tree, conflicts, err := r.mergeResult(ctx, l, head, l.Tip, j.Squash)
		if err != nil {
			return retry(err)
		}
		if len(conflicts) > 0 {
			return host.Outcome{Result: host.Conflicted, Files: conflicts, Culprit: l.Component}
		}
		changed, err := r.checksChanged(ctx, head, commit)
		if err != nil {
			return retry(err)
		}
		head = commit
		o.Chain = append(o.Chain, host.Made{Commit: commit, Tree: tree, Tip: l.Tip, ChecksChanged: changed})
	}
	for _, l := range links {
		_, tip, bad := r.resolve(ctx, l.Ref)
		if bad != nil {
			bad.Culprit = l.Component
			return *bad
		}
		commit, tree, conflicts, err := r.mergeResult(ctx, l, head, tip, j.Squash)
		if err != nil {
			return retry(err)
		}
		if len(conflicts) > 0 {
			return host.Outcome{Result: host.Conflicted, Files: conflicts, Culprit: l.Component}
		}
		changed, err := r.checksChanged(ctx, head, commit)
		if err != nil {
			return retry(err)
		}
		head = commit
		o.Chain = append(o.Chain, host.Made{Commit: commit, Tree: tree, Tip: tip, ChecksChanged: changed})
	}
	last := o.Chain[len(o.Chain)-1]
	o.Commit, o.Tree, o.Tip = last.Commit, last.Tree, last.Tip
	if slices.Contains(j.Passed, o.Tree) {
		o.Result, o.Reused = host.Passed, true
		return o
	}
	res, err := r.checkTree(ctx, j, o.Commit, base, &o)
	if ctx.Err() != nil {
		return host.Outcome{Result: host.Cancelled}
	}
	if err != nil {
		return retry(err)
	}
	for i, l := range links {
		// Moved while the checks ran: what was checked is not what the
		// builder has now.
		if _, now, bad := r.resolve(ctx, l.Ref); bad != nil || now != o.Chain[len(j.OnTrain)+i].Tip {
			return host.Outcome{Result: host.Moved, Culprit: l.Component}
		}
	}
	if !res.Passed {
		return r.failed(ctx, res, o)
	}
	o.Result = host.Passed
	return o
}
