package gitjob

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/host/checks"
	"github.com/agentforeman/foreman/internal/host/receipt"
)

// car does a Car job: the chain made (the base, merged with each car
// ahead in order, then with this car's approved commit, each merge made
// the same way whichever job makes it), then checked, unless its tree
// passed already (the core says which trees did). A chain that does not
// merge says whose merge conflicted: a car ahead's is not this car's
// fault.
//
// What it looks at first is what must not be mistaken for anything else:
// whether the approved commit is on the target already (a landing a stop
// or a crash cut short), then whether the target is where the host left
// it (a commit pushed straight to it), and only then the builder's branch.
func (r *Runner) car(ctx context.Context, j host.Job) host.Outcome {
	now, bad := r.base(ctx)
	if bad != nil {
		return *bad
	}
	if j.Tip != "" {
		landed, err := r.o.Repo.IsAncestor(ctx, j.Tip, now)
		if err != nil {
			return retry(err)
		}
		if landed {
			return host.Outcome{Result: host.Landed, Commit: now, Base: now, Tip: j.Tip, Already: true}
		}
	}
	if j.Target != "" && now != j.Target && now != j.Landing {
		return host.Outcome{Result: host.Moved, Target: now}
	}
	t, branch, bad := r.resolve(ctx, j.Ref)
	tip := j.Tip
	switch {
	case tip == "" && bad != nil:
		return *bad
	case tip == "":
		// No check before review: what was approved is what the branch
		// holds now, and the core records it so before anything lands.
		tip = branch
		landed, err := r.o.Repo.IsAncestor(ctx, tip, now)
		if err != nil {
			return retry(err)
		}
		if landed {
			return host.Outcome{Result: host.Landed, Commit: now, Base: now, Tip: tip, Already: true}
		}
	case t.Branch != "" && branch != tip:
		// What was reviewed is not what the builder has now: the core
		// says what that means.
		return host.Outcome{Result: host.Stale, Found: branch, Tip: tip}
	}
	base := j.Base
	if base == "" {
		base = now
	}
	o := host.Outcome{Base: base, Tip: tip}
	head := base
	for _, l := range j.Ahead {
		commit, tree, conflicts, err := r.mergeResult(ctx, l, head, l.Tip, j.Squash)
		if err != nil {
			return retry(err)
		}
		if len(conflicts) > 0 {
			o.Result, o.Files, o.Culprit = host.Conflicted, conflicts, l.Component
			return o
		}
		changed, err := r.checksChanged(ctx, head, commit)
		if err != nil {
			return retry(err)
		}
		head = commit
		o.Chain = append(o.Chain, host.Made{Commit: commit, Tree: tree, ChecksChanged: changed})
	}
	commit, tree, conflicts, err := r.mergeResult(ctx, j.Link(), head, tip, j.Squash)
	if err != nil {
		return retry(err)
	}
	if len(conflicts) > 0 {
		o.Result, o.Files = host.Conflicted, conflicts
		return o
	}
	changed, err := r.checksChanged(ctx, head, commit)
	if err != nil {
		return retry(err)
	}
	o.Commit, o.Tree = commit, tree
	o.Chain = append(o.Chain, host.Made{Commit: commit, Tree: tree, ChecksChanged: changed})
	if slices.Contains(j.Passed, tree) {
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
	if !res.Passed {
		return r.failed(ctx, res, o)
	}
	o.Result = host.Passed
	return o
}

// checkTree has the checks run on commit (here, or by Options.Checker).
// The outcome gets the log of the last try, the checks that were flaky,
// and, when they passed, how they ran, for the receipts.
func (r *Runner) checkTree(ctx context.Context, j host.Job, commit, base string, o *host.Outcome) (checks.Result, error) {
	res, err := r.checker().Check(ctx, CheckRequest{Job: j, Commit: commit, Base: base})
	if n := len(res.Logs); n > 0 {
		o.Log = res.Logs[n-1]
		o.URL = r.LogURL(filepath.Base(o.Log))
	}
	o.Flaky = append(o.Flaky, res.Flaky...)
	o.Tries = len(res.Logs)
	if err == nil && res.Passed {
		o.Checks = r.evidence(res)
	}
	return res.Result, err
}

// evidence is what a receipt says of checks that passed: each command,
// each try's log by digest, where they ran and how confined. The core
// adds the run, the commit and the tree.
func (r *Runner) evidence(res Checked) *receipt.Checks {
	ev := &receipt.Checks{Commands: append([]receipt.Command{}, res.Commands...), Tries: []receipt.Log{}, Flaky: res.Flaky,
		RanOn: res.RanOn, Sandbox: res.Sandbox}
	for _, log := range res.Logs {
		ev.Tries = append(ev.Tries, receipt.Log{Name: filepath.Base(log), Digest: fileDigest(log)})
	}
	if ev.RanOn == nil {
		ev.RanOn = []string{"host"}
	}
	return ev
}

// fileDigest is a file's sha256, or none when it cannot be read.
func fileDigest(path string) map[string]string {
	f, err := os.Open(path)
	if err != nil {
		return map[string]string{}
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return map[string]string{}
	}
	return map[string]string{"sha256": hex.EncodeToString(h.Sum(nil))}
}

// short is a commit id as people read it.
func short(oid string) string {
	if len(oid) > 12 {
		return oid[:12]
	}
	return oid
}
