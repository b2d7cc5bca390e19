package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Merge is what merging two commits gives, computed without a working tree.
type Merge struct {
	Tree      string   // the merged tree (with conflict markers where Conflicts)
	Conflicts []string // the files that conflict; none when the merge is clean
}

// Clean reports a merge without conflicts.
func (m Merge) Clean() bool { return len(m.Conflicts) == 0 }

// MergeTree merges theirs into ours (both commit ids) the way git merge
// would, writing only objects: no index, no working tree, no lock (git
// merge-tree --write-tree, git 2.38 and later).
func (r *Repo) MergeTree(ctx context.Context, ours, theirs string) (Merge, error) {
	out, code, err := r.run(ctx, r.dir, nil, "merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", ours, theirs)
	if err != nil && code != 1 { // 1: conflicts, with the tree and files on stdout
		return Merge{}, err
	}
	// -z: the tree, then each conflicted file, each NUL-terminated; a
	// blank entry ends the file list (the messages section, off here).
	parts := strings.Split(out, "\x00")
	if len(parts) == 0 || parts[0] == "" {
		if err != nil {
			return Merge{}, err
		}
		return Merge{}, errors.New("git merge-tree gave no tree")
	}
	m := Merge{Tree: strings.TrimSpace(parts[0])}
	seen := map[string]bool{}
	for _, p := range parts[1:] {
		if p == "" {
			break
		}
		if !seen[p] {
			seen[p] = true
			m.Conflicts = append(m.Conflicts, p)
		}
	}
	if code == 1 && len(m.Conflicts) == 0 {
		return Merge{}, err // a failure that is not a conflict (unrelated histories, say)
	}
	return m, nil
}

// CommitMerge makes the merge commit of tree with parents the same way
// every time: dated with the newest of its parents' committer dates, so
// that the same tree, parents and message always give the same commit,
// whichever process makes it and when. A merge queue that checks a chain
// of merges in several jobs at once lands the very commits it checked.
func (r *Repo) CommitMerge(ctx context.Context, tree, message string, parents ...string) (string, error) {
	return r.commitTree(ctx, tree, message, parents, parents)
}

// CommitSquash makes a commit of tree on parent alone, with message: what
// from (the commit squashed) brought, as one commit. Like CommitMerge it
// is deterministic, dated as the newer of parent and from.
func (r *Repo) CommitSquash(ctx context.Context, tree, message, parent, from string) (string, error) {
	return r.commitTree(ctx, tree, message, []string{parent}, []string{parent, from})
}

// commitTree makes a commit of tree with parents, dated as the newest of
// datedAs, so that the same inputs always make the same commit.
func (r *Repo) commitTree(ctx context.Context, tree, message string, parents, datedAs []string) (string, error) {
	out, err := r.git(ctx, append([]string{"show", "--no-patch", "--format=%ct", "--end-of-options"}, datedAs...)...)
	if err != nil {
		return "", err
	}
	newest := int64(0)
	for _, f := range strings.Fields(out) {
		if t, err := strconv.ParseInt(f, 10, 64); err == nil && t > newest {
			newest = t
		}
	}
	date := fmt.Sprintf("@%d +0000", newest)
	args := []string{"commit-tree"}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	args = append(args, "-F", "-", tree)
	commit, _, err := r.runEnv(ctx, r.dir, []byte(message), []string{"GIT_AUTHOR_DATE=" + date, "GIT_COMMITTER_DATE=" + date}, args...)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(commit), nil
}

// TreeOf is the tree of a commit.
func (r *Repo) TreeOf(ctx context.Context, commit string) (string, error) {
	out, err := r.git(ctx, "rev-parse", "--verify", "--end-of-options", commit+"^{tree}")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// IsAncestor reports whether commit a is b or one of b's ancestors.
func (r *Repo) IsAncestor(ctx context.Context, a, b string) (bool, error) {
	_, err := r.git(ctx, "merge-base", "--is-ancestor", a, b)
	if err == nil {
		return true, nil
	}
	if exitCode(err) == 1 {
		return false, nil
	}
	return false, err
}

// ErrMoved means a ref did not hold the commit a compare-and-swap expected.
var ErrMoved = errors.New("the ref moved")

// UpdateRef moves ref (a full name) to commit new only if it holds old now
// (git update-ref's compare-and-swap, under git's own ref lock): ErrMoved
// if it does not. A held lock is an *Error that is Locked.
func (r *Repo) UpdateRef(ctx context.Context, ref, new, old, reason string) error {
	_, err := r.git(ctx, "update-ref", "-m", reason, "--end-of-options", ref, new, old)
	if err == nil {
		return nil
	}
	var ge *Error
	if errors.As(err, &ge) && !ge.Locked() &&
		(strings.Contains(ge.Stderr, "but expected") || strings.Contains(ge.Stderr, "unable to resolve reference")) {
		return ErrMoved
	}
	return err
}

// DeleteRef deletes ref (a full name) only if it holds old now: ErrMoved
// if it does not.
func (r *Repo) DeleteRef(ctx context.Context, ref, old, reason string) error {
	_, err := r.git(ctx, "update-ref", "-m", reason, "-d", "--end-of-options", ref, old)
	var ge *Error
	if errors.As(err, &ge) && !ge.Locked() && (strings.Contains(ge.Stderr, "but expected") || strings.Contains(ge.Stderr, "unable to resolve reference")) {
		return ErrMoved
	}
	return err
}

// RefUpdate is one entry of a ref's reflog.
type RefUpdate struct {
	Commit string
	Reason string // the message the update was made with
}

// Reflog lists what ref (a full name) was moved to, newest first, with why.
// A ref never moved with a reflog has none.
func (r *Repo) Reflog(ctx context.Context, ref string) ([]RefUpdate, error) {
	out, err := r.git(ctx, "reflog", "show", "--format=%H %gs", "--end-of-options", ref)
	if err != nil {
		return nil, err
	}
	var ups []RefUpdate
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if commit, reason, ok := strings.Cut(line, " "); ok {
			ups = append(ups, RefUpdate{Commit: commit, Reason: reason})
		}
	}
	return ups, nil
}
