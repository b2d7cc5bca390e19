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
	// The last line of defence, whatever the core handed it: the target
	// moves only to commits each exactly its approved landing, one on the
	// other from where the target is, the last one's tree the one that
	// passed.
	for _, l := range landings {
		if r.o.trustLandings {
			break
		}
		why, err := r.asApproved(ctx, l)
		if err != nil {
			return retry(err)
		}
		if why != "" {
			return host.Outcome{Result: host.Refused, Culprit: l.Component, Line: why, Target: now}
		}
	}
	tree := j.Tree
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

// asApproved says why l's commit is not exactly its approved landing ("":
// it is): its first parent is the commit it lands on (l.Base: the target,
// or the batch's landing before it), its tree is the clean merge of that
// and the approved commit (l.Tip) and the tree its receipt names, and it
// merges the approved commit, as its second and last parent, or, landed
// as a squash, has no other parent (the approved commit is kept at
// host.SquashedRef before the target moves, where verify finds it).
func (r *Runner) asApproved(ctx context.Context, l host.Job) (string, error) {
	if l.Tip == "" || l.Base == "" {
		return fmt.Sprintf("the landing of %s names no approved commit, or nothing it lands on", l.Component), nil
	}
	c, err := r.o.Repo.CommitOf(ctx, l.Commit)
	if err != nil {
		return "", err
	}
	m, err := r.o.Repo.MergeTree(ctx, l.Base, l.Tip)
	if err != nil {
		return "", err
	}
	switch {
	case len(c.Parents) == 0 || c.Parents[0] != l.Base:
		return fmt.Sprintf("%s's commit %s is not made on %s, where it lands (its parents: %s)", l.Component, short(l.Commit), short(l.Base), shortAll(c.Parents)), nil
	case l.Squash && len(c.Parents) != 1:
		return fmt.Sprintf("%s's commit %s is to squash %s, and has %d parents", l.Component, short(l.Commit), short(l.Tip), len(c.Parents)), nil
	case !l.Squash && (len(c.Parents) != 2 || c.Parents[1] != l.Tip):
		return fmt.Sprintf("%s's commit %s does not merge the approved commit %s alone (its parents: %s)", l.Component, short(l.Commit), short(l.Tip), shortAll(c.Parents)), nil
	case !m.Clean() || m.Tree != c.Tree:
		return fmt.Sprintf("%s's commit %s holds tree %s, which is not the merge of %s and the approved %s", l.Component, short(l.Commit), short(c.Tree), short(l.Base), short(l.Tip)), nil
	case c.Tree != l.Tree:
		return fmt.Sprintf("%s's commit %s holds tree %s, and its receipt names %s", l.Component, short(l.Commit), short(c.Tree), short(l.Tree)), nil
	}
	return "", nil
}

func shortAll(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = short(id)
	}
	return strings.Join(out, " ")
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

// stillApproved holds back the landing of a component whose branch no
// longer holds the commit that was approved (and checked): the builder
// pushed since, or deleted it. It reports what the branch holds (Stale);
// the core says what that means.
func (r *Runner) stillApproved(ctx context.Context, j host.Job) *host.Outcome {
	if j.Tip == "" {
		return nil
	}
	t, now, bad := r.resolve(ctx, j.Ref)
	if t.Branch == "" && bad == nil {
		return nil // a commit id cannot move
	}
	if bad != nil && (t.Branch == "" || bad.Result == host.Retry) {
		return bad
	}
	if now != j.Tip {
		return &host.Outcome{Result: host.Stale, Found: now}
	}
	return nil
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
