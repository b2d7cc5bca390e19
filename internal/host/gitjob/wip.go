package gitjob

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/protocol"
)

// Work in progress (contract section 10): the overlaps between refs in
// flight, and the pins of departed builders' work.

// maxCached bounds each cache of the scans; past it the cache starts
// again (a build's refs in flight are far fewer).
const maxCached = 4096

// scan does a Scan job: j.Ref merged with each of j.Others. Only files
// both changed since they left the target can conflict, so a pair whose
// changed files do not meet is not merged at all; a pair of commits merged
// once is not merged again (refs that did not move cost nothing). An
// overlap is a conflict in files both changed: a conflict only with work
// on the target is each one's own business with the target, not theirs.
func (r *Runner) scan(ctx context.Context, j host.Job) host.Outcome {
	_, tip, bad := r.resolve(ctx, j.Ref)
	if bad != nil {
		return *bad // not pushed yet, or gone: nothing to merge
	}
	base, bad := r.base(ctx)
	if bad != nil {
		return *bad
	}
	mine, err := r.changed(ctx, base, tip)
	if err != nil {
		return retry(err)
	}
	o := host.Outcome{Result: host.Scanned, Tip: tip}
	for _, other := range j.Others {
		_, theirTip, bad := r.resolve(ctx, other.Ref)
		if bad != nil || theirTip == tip {
			continue
		}
		theirs, err := r.changed(ctx, base, theirTip)
		if err != nil {
			return retry(err)
		}
		both := meet(mine, theirs)
		if len(both) == 0 {
			continue
		}
		conflicts, err := r.conflicts(ctx, tip, theirTip)
		if err != nil {
			return retry(err)
		}
		var files []string
		for _, f := range conflicts {
			if both[f] {
				files = append(files, f)
			}
		}
		if len(files) > 0 {
			o.Overlaps = append(o.Overlaps, host.Overlap{With: other.Component, Files: files})
		}
	}
	return o
}

// changed is what commit changed since it left base, kept per pair.
func (r *Runner) changed(ctx context.Context, base, commit string) ([]string, error) {
	key := base + " " + commit
	r.mu.Lock()
	files, ok := r.changes[key]
	r.mu.Unlock()
	if ok {
		return files, nil
	}
	files, err := r.o.Repo.Changed(ctx, base, commit)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if len(r.changes) >= maxCached {
		r.changes = map[string][]string{}
	}
	r.changes[key] = files
	r.mu.Unlock()
	return files, nil
}

// conflicts is what merging a and b conflicts in (merge-tree, no working
// tree), kept per pair of commits.
func (r *Runner) conflicts(ctx context.Context, a, b string) ([]string, error) {
	if b < a {
		a, b = b, a
	}
	key := a + " " + b
	r.mu.Lock()
	files, ok := r.merged[key]
	r.mu.Unlock()
	if ok {
		return files, nil
	}
	m, err := r.o.Repo.MergeTree(ctx, a, b)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if len(r.merged) >= maxCached {
		r.merged = map[string][]string{}
	}
	r.merged[key] = m.Conflicts
	r.mu.Unlock()
	return m.Conflicts, nil
}

func meet(a, b []string) map[string]bool {
	in := make(map[string]bool, len(a))
	for _, f := range a {
		in[f] = true
	}
	both := map[string]bool{}
	for _, f := range b {
		if in[f] {
			both[f] = true
		}
	}
	return both
}

// pin does a Pin job: what a departed builder's ref holds now is kept as
// refs/foreman/handoff/<c>/<n>, n one more than any pin of c so far (so a
// restart never reuses one), created only if it does not exist.
func (r *Runner) pin(ctx context.Context, j host.Job) host.Outcome {
	_, tip, bad := r.resolve(ctx, j.Ref)
	if bad != nil {
		return *bad // nothing pushed there: nothing to keep
	}
	first, ok := protocol.HandoffRef(j.Component, 1)
	if !ok {
		return invalid(fmt.Sprintf("%s cannot name a ref, so its work is not pinned", j.Component))
	}
	prefix := strings.TrimSuffix(first, "1")
	refs, err := r.o.Repo.RefsUnder(ctx, prefix)
	if err != nil {
		return retry(err)
	}
	n := 0
	for _, ref := range refs {
		if k, err := strconv.Atoi(strings.TrimPrefix(ref, prefix)); err == nil {
			n = max(n, k)
		}
	}
	for range 3 { // another pin made the same number meanwhile: the next one
		n++
		ref, _ := protocol.HandoffRef(j.Component, n)
		err := r.o.Repo.UpdateRef(ctx, ref, tip, "", "foreman host: "+j.Owner+" left "+j.Component+" ("+j.Ref+")")
		if err == nil {
			return host.Outcome{Result: host.Pinned, Commit: tip, N: n}
		}
		if !isExists(err) {
			return retry(err)
		}
	}
	return host.Outcome{Result: host.Retry, Line: "every handoff ref tried was taken"}
}

// isExists reports an update-ref that found the ref it was to create.
func isExists(err error) bool {
	return errors.Is(err, gitrepo.ErrMoved) || err != nil && strings.Contains(err.Error(), "already exists")
}
