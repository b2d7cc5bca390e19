package gitjob

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host"
)

// land does a Land job: the target moves from j.From() to j.Commit, a car's
// chain head whose tree (j.Tree) passed the checks, by compare-and-swap,
// and only forward (j.Commit holds where it moves from); then each
// landing's receipt becomes its commit's note. A batch moves the target
// once, past every commit of it: the first-parent commits between are
// exactly the batch's, and the target never holds one alone. A target
// that is not where the job moves it from is reported as it is (Moved):
// the train is made again on it. Something on the target already is not
// landed again, whatever the branch holds by now: a landing cut short by a
// crash ends here, with its notes written.
//
// The core decided that these commits may land (their receipts are
// recorded already); the job checks only that the repository is what the
// core believes: the target where it was, the head's tree the one that
// passed, the commits below it the batch's, each branch still at the
// approved commit.
func (r *Runner) land(ctx context.Context, j host.Job) host.Outcome {
	now, bad := r.base(ctx)
	if bad != nil {
		return *bad
	}
	landings, from := j.Landings(), j.From()
	landed, err := r.o.Repo.IsAncestor(ctx, j.Commit, now)
	if err != nil {
		return retry(err)
	}
	if landed {
		o := host.Outcome{Result: host.Landed, Commit: j.Commit, Already: true}
		for _, l := range landings {
			if err := r.keepSquashed(ctx, l); err != nil {
				return retry(err)
			}
		}
		r.keepReceipts(ctx, j, &o)
		return o
	}
	if now != from {
		return host.Outcome{Result: host.Moved, Target: now}
	}
	forward, err := r.o.Repo.IsAncestor(ctx, from, j.Commit)
	if err != nil {
		return retry(err)
	}
	tree, err := r.o.Repo.TreeOf(ctx, j.Commit)
	if err != nil {
		return retry(err)
	}
	ours, err := r.batchAsMade(ctx, j)
	if err != nil {
		return retry(err)
	}
	if !forward || tree != j.Tree || !ours {
		// Not made on the target as it is, or not what passed, or not the
		// batch's commits: never landed. The train is made again on the
		// target.
		return host.Outcome{Result: host.Moved, Target: now}
	}
	for _, l := range landings {
		if bad := r.stillApproved(ctx, l); bad != nil {
			bad.Culprit = l.Component
			return *bad
		}
	}
	checkouts, bad := r.cleanCheckouts(ctx)
	if bad != nil {
		return *bad
	}
	if ctx.Err() != nil {
		return host.Outcome{Result: host.Cancelled}
	}
	if r.o.MayLand != nil {
		if err := r.o.MayLand(); err != nil {
			return host.Outcome{Result: host.Retry, Line: err.Error()}
		}
	}
	for _, l := range landings {
		if err := r.keepSquashed(ctx, l); err != nil {
			return retry(err)
		}
	}
	// From here on the job runs to its end whatever ctx says: what the
	// compare-and-swap did must be reported, and its notes written.
	ctx = context.WithoutCancel(ctx)
	err = r.o.Repo.UpdateRef(ctx, r.targetRef(), j.Commit, from, "foreman host: land "+landedNames(landings))
	if errors.Is(err, gitrepo.ErrMoved) {
		if now, bad := r.base(ctx); bad == nil {
			return host.Outcome{Result: host.Moved, Target: now}
		}
		return host.Outcome{Result: host.Retry, Line: r.o.Target + " moved while " + landedNames(landings) + " was landed"}
	}
	if err != nil {
		return retry(err)
	}
	for _, dir := range checkouts {
		// The target is checked out there: bring its files along, as a
		// fast-forward would. It was clean a moment ago.
		_ = r.o.Repo.SyncCheckout(ctx, dir, from, j.Commit)
	}
	o := host.Outcome{Result: host.Landed, Commit: j.Commit, Tree: tree}
	r.keepReceipts(ctx, j, &o)
	if j.Prune {
		for _, l := range landings {
			switch pruned := r.prune(ctx, l); {
			case pruned && l.Commit == j.Commit:
				o.Pruned = true
			case pruned:
				o.PrunedOf = append(o.PrunedOf, l.Component)
			}
		}
	}
	return o
}

// batchAsMade reports whether the first-parent commits from j.From() up to
// j.Commit are exactly the landings' (always so for one landing: its
// commit is the chain's head, checked by the caller).
func (r *Runner) batchAsMade(ctx context.Context, j host.Job) (bool, error) {
	if len(j.Batch) == 0 {
		return true, nil
	}
	commits, err := r.o.Repo.FirstParents(ctx, j.Commit, j.From())
	if err != nil {
		return false, err
	}
	landings := j.Landings()
	if len(commits) != len(landings) {
		return false, nil
	}
	for i, c := range commits { // newest first
		if c.ID != landings[len(landings)-1-i].Commit {
			return false, nil
		}
	}
	return true, nil
}

// keepReceipts writes each landing's receipt as its commit's note: o is
// Noted only when every one was written (else the core has them written).
func (r *Runner) keepReceipts(ctx context.Context, j host.Job, o *host.Outcome) {
	noted := true
	for _, l := range j.Landings() {
		var lo host.Outcome
		r.keepReceipt(ctx, l, &lo)
		noted = noted && lo.Noted
		o.ReceiptFiles = append(o.ReceiptFiles, lo.ReceiptFile)
		if l.Commit == j.Commit {
			o.ReceiptFile = lo.ReceiptFile
		}
	}
	o.Noted = noted && len(j.Receipt) > 0
}

// landedNames names what a landing lands, for the reflog and for people.
func landedNames(landings []host.Job) string {
	names := make([]string, len(landings))
	for i, l := range landings {
		names[i] = l.Component
	}
	return strings.Join(names, " ")
}

// keepSquashed keeps the approved commit a squash landing squashes
// reachable (host.SquashedRef), before the target moves: no branch may
// hold it once the builder's is pruned, and foreman verify makes the
// landing again from it. A landing that then does not happen leaves a ref
// to an approved commit, which is harmless.
func (r *Runner) keepSquashed(ctx context.Context, j host.Job) error {
	if !j.Squash || j.Tip == "" {
		return nil
	}
	return r.o.Repo.SetRef(ctx, host.SquashedRef(j.Commit), j.Tip, "foreman host: "+j.Component+" squashed")
}

// stillApproved refuses to land a component whose branch no longer holds
// the commit that was approved (and checked): the builder pushed since,
// and what it has now was neither checked nor reviewed. Nothing stale
// lands: it steps back, to say READY again.
func (r *Runner) stillApproved(ctx context.Context, j host.Job) *host.Outcome {
	if j.Tip == "" {
		return nil
	}
	t, now, bad := r.resolve(ctx, j.Ref)
	if t.Branch == "" && bad == nil {
		return nil // a commit id cannot move
	}
	if bad != nil && t.Branch == "" {
		return bad
	}
	if now != j.Tip {
		o := movedAfterApproval(t.String(), j.Tip, now)
		return &o
	}
	return nil
}

// movedAfterApproval is the verdict on a branch that moved after what it
// held was approved.
func movedAfterApproval(branch, approved, now string) host.Outcome {
	what := "was deleted"
	if now != "" {
		what = "moved to " + short(now)
	}
	return invalid(fmt.Sprintf("branch %s %s after %s was approved; say READY again to have it checked and reviewed", branch, what, short(approved)))
}

// prune deletes the builder's branch once its work landed, only if it
// still holds what landed (a builder who pushed more keeps it).
func (r *Runner) prune(ctx context.Context, j host.Job) bool {
	t, err := gitrepo.ParseRef(j.Ref)
	if err != nil || t.Branch == "" || j.Tip == "" {
		return false
	}
	return r.o.Repo.DeleteRef(ctx, t.Branch, j.Tip, "foreman host: "+j.Component+" landed (host.prune)") == nil
}

// cleanCheckouts lists the worktrees that have the target checked out, and
// refuses (for now) when one has changes the landing would run over.
func (r *Runner) cleanCheckouts(ctx context.Context) ([]string, *host.Outcome) {
	dirs, err := r.o.Repo.Checkouts(ctx, r.targetRef())
	if err != nil {
		o := retry(err)
		return nil, &o
	}
	for _, d := range dirs {
		dirty, first, err := r.o.Repo.Dirty(ctx, d)
		if err != nil {
			o := retry(err)
			return nil, &o
		}
		if dirty {
			o := host.Outcome{Result: host.Retry, Line: fmt.Sprintf("%s is checked out at %s with uncommitted changes (%s); commit or stash them",
				r.o.Target, d, strings.TrimSpace(first))}
			return nil, &o
		}
	}
	return dirs, nil
}
