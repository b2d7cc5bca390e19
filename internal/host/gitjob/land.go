package gitjob

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host"
)

// land does a Land job. The target moves only by compare-and-swap from the
// commit what lands was checked against, and only to a tree that passed
// the checks: the one CI passed when the target has not moved since, else
// a new merge, checked first. Something already on the target is not
// landed again: a landing cut short by a crash ends here.
func (r *Runner) land(ctx context.Context, j host.Job) host.Outcome {
	pass := j.Pass
	var tip string
	if pass != nil && pass.Tip != "" {
		tip = pass.Tip
	} else {
		var bad *host.Outcome
		if _, tip, bad = r.resolve(ctx, j.Ref); bad != nil {
			return *bad
		}
	}
	var o host.Outcome
	for range r.o.MaxMoves {
		base, bad := r.base(ctx)
		if bad != nil {
			return *bad
		}
		on, err := r.o.Repo.IsAncestor(ctx, tip, base)
		if err != nil {
			return retry(err)
		}
		if on {
			return host.Outcome{Result: host.Landed, Commit: base, Already: true}
		}
		var commit string
		if pass != nil && pass.Base == base && pass.Commit != "" {
			commit = pass.Commit // checked against the target as it is
		} else {
			c, tree, conflicts, err := r.mergeResult(ctx, j, base, tip)
			if err != nil {
				return retry(err)
			}
			if len(conflicts) > 0 {
				return host.Outcome{Result: host.Conflicted, Files: conflicts}
			}
			commit = c
			o = host.Outcome{Commit: c, Tip: tip, Base: base, Tree: tree}
			if !r.hasPassed(tree) && (pass == nil || pass.Tree != tree) {
				res, err := r.runChecks(ctx, j, c, base, &o)
				if ctx.Err() != nil {
					return host.Outcome{Result: host.Cancelled}
				}
				if err != nil {
					return retry(err)
				}
				if !res.Passed {
					return failed(res, o)
				}
				r.notePassed(tree)
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
		err = r.o.Repo.UpdateRef(ctx, r.targetRef(), commit, base, "foreman host: land "+j.Component)
		if errors.Is(err, gitrepo.ErrMoved) {
			pass = nil // merge again with the target as it is now
			continue
		}
		if err != nil {
			return retry(err)
		}
		for _, dir := range checkouts {
			// The target is checked out there: bring its files along, as
			// a fast-forward would. It was clean a moment ago.
			_ = r.o.Repo.SyncCheckout(ctx, dir, base, commit)
		}
		return host.Outcome{Result: host.Landed, Commit: commit, Log: o.Log, URL: o.URL}
	}
	return host.Outcome{Result: host.Retry, Line: fmt.Sprintf("%s moved %d times while %s was landed", r.o.Target, r.o.MaxMoves, j.Component)}
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
