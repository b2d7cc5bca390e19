package gitjob

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host"
)

// land does a Land job: the target moves from j.Base to j.Commit, a car's
// chain head whose tree (j.Tree) passed the checks, by compare-and-swap,
// and only forward (j.Commit holds j.Base); then the landing's receipt
// becomes j.Commit's note. A target that is not at j.Base is reported as it
// is (Moved): the train is made again on it. Something on the target
// already is not landed again, whatever the branch holds by now: a landing
// cut short by a crash ends here, with its note written.
//
// The core decided that this commit may land (its receipt is recorded
// already); the job checks only that the repository is what the core
// believes: the target where it was, the commit's tree the one that
// passed, the branch still at the approved commit.
func (r *Runner) land(ctx context.Context, j host.Job) host.Outcome {
	now, bad := r.base(ctx)
	if bad != nil {
		return *bad
	}
	landed, err := r.o.Repo.IsAncestor(ctx, j.Commit, now)
	if err != nil {
		return retry(err)
	}
	if landed {
		o := host.Outcome{Result: host.Landed, Commit: j.Commit, Already: true}
		if err := r.keepSquashed(ctx, j); err != nil {
			return retry(err)
		}
		r.keepReceipt(ctx, j, &o)
		return o
	}
	if now != j.Base {
		return host.Outcome{Result: host.Moved, Target: now}
	}
	forward, err := r.o.Repo.IsAncestor(ctx, j.Base, j.Commit)
	if err != nil {
		return retry(err)
	}
	tree, err := r.o.Repo.TreeOf(ctx, j.Commit)
	if err != nil {
		return retry(err)
	}
	if !forward || tree != j.Tree {
		// Not made on the target as it is, or not what passed: never
		// landed. The train is made again on the target.
		return host.Outcome{Result: host.Moved, Target: now}
	}
	if bad := r.stillApproved(ctx, j); bad != nil {
		return *bad
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
	if err := r.keepSquashed(ctx, j); err != nil {
		return retry(err)
	}
	// From here on the job runs to its end whatever ctx says: what the
	// compare-and-swap did must be reported, and its note written.
	ctx = context.WithoutCancel(ctx)
	err = r.o.Repo.UpdateRef(ctx, r.targetRef(), j.Commit, j.Base, "foreman host: land "+j.Component)
	if errors.Is(err, gitrepo.ErrMoved) {
		if now, bad := r.base(ctx); bad == nil {
			return host.Outcome{Result: host.Moved, Target: now}
		}
		return host.Outcome{Result: host.Retry, Line: r.o.Target + " moved while " + j.Component + " was landed"}
	}
	if err != nil {
		return retry(err)
	}
	for _, dir := range checkouts {
		// The target is checked out there: bring its files along, as a
		// fast-forward would. It was clean a moment ago.
		_ = r.o.Repo.SyncCheckout(ctx, dir, j.Base, j.Commit)
	}
	o := host.Outcome{Result: host.Landed, Commit: j.Commit, Tree: tree}
	r.keepReceipt(ctx, j, &o)
	if j.Prune {
		o.Pruned = r.prune(ctx, j)
	}
	return o
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
