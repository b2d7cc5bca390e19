package gitrepo

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentforeman/foreman/internal/nofollow"
)

// AddWorktree checks commit out, detached, in a new worktree at dir (which
// must not exist). The repository's other worktrees are not touched.
func (r *Repo) AddWorktree(ctx context.Context, dir, commit string) error {
	_, err := r.git(ctx, "worktree", "add", "--detach", "--quiet", "--", dir, commit)
	return err
}

// RemoveWorktree removes the worktree at dir, whatever it holds, and
// forgets it.
func (r *Repo) RemoveWorktree(ctx context.Context, dir string) error {
	_, err := r.git(ctx, "worktree", "remove", "--force", "--force", "--", dir)
	if err != nil {
		// Half made, or its files already gone: clean up by hand. A
		// git worktree add stopped midway leaves its worktree locked
		// ("initializing"), which prune keeps: unlocked first.
		_, _ = r.git(ctx, "worktree", "unlock", "--", dir)
		rmErr := os.RemoveAll(dir)
		_, _ = r.git(ctx, "worktree", "prune")
		return rmErr
	}
	return nil
}

// ResetWorktree makes the worktree at dir hold exactly commit, detached,
// as a fresh checkout would: a rebase left unfinished is aborted, tracked
// files are forced to the commit's, and every untracked or ignored file is
// removed. Only the files that differ are written, which on a repository
// of many files is what makes a check start in milliseconds, not seconds.
func (r *Repo) ResetWorktree(ctx context.Context, dir, commit string) error {
	r.abortRebase(ctx, dir)
	if _, err := r.gitIn(ctx, dir, "checkout", "--quiet", "--force", "--detach", commit); err != nil {
		return err
	}
	_, err := r.gitIn(ctx, dir, "clean", "--quiet", "-ffdx")
	return err
}

// CheckWorktree checks that the worktree at dir is still what git
// worktree add made of it: its .git a regular file naming an admin
// directory of this repository's (worktrees/<name>), whose gitdir file
// names that .git back. Anything else a check may leave there (a .git
// naming another repository, a .git directory with a configuration of its
// own, or none, so that git looks up into the directories above) would
// steer the host's own git when it next runs there: the caller makes the
// worktree again instead.
func (r *Repo) CheckWorktree(dir string) error {
	gitFile := filepath.Join(dir, ".git")
	// A check may have made it anything: read without following a link,
	// a regular file only, 4 KiB at most.
	data, err := nofollow.ReadFile(dir, ".git", 4096)
	if err != nil {
		return fmt.Errorf("%s is not the file git worktree add wrote: %w", gitFile, err)
	}
	admin, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: ")
	if !ok {
		return fmt.Errorf("%s does not say gitdir: ...", gitFile)
	}
	if !filepath.IsAbs(admin) {
		admin = filepath.Join(dir, admin)
	}
	if !sameFile(filepath.Dir(admin), filepath.Join(r.gitDir, "worktrees")) {
		return fmt.Errorf("%s names %s, not a worktree of %s", gitFile, admin, r.gitDir)
	}
	back, err := os.ReadFile(filepath.Join(admin, "gitdir"))
	if err != nil {
		return err
	}
	named := strings.TrimSpace(string(back))
	if !filepath.IsAbs(named) {
		named = filepath.Join(admin, named)
	}
	fi, err := os.Lstat(gitFile)
	if err != nil {
		return err
	}
	if ni, err := os.Stat(named); err != nil || !os.SameFile(ni, fi) {
		return fmt.Errorf("%s belongs to %s, not %s", admin, named, gitFile)
	}
	return nil
}

func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// PruneWorktrees removes everything under root (the host's own directory of
// worktrees, pruned when no run is live: after a crash) but the names keep
// says to keep, and has git forget worktrees whose directories are gone.
func (r *Repo) PruneWorktrees(ctx context.Context, root string, keep func(name string) bool) error {
	if root != "" {
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if keep != nil && keep(e.Name()) {
				continue
			}
			_ = r.RemoveWorktree(ctx, filepath.Join(root, e.Name()))
		}
	}
	_, err := r.git(ctx, "worktree", "prune")
	return err
}

// Rebase rebases the detached HEAD of the worktree dir onto onto, as git
// rebase does (commits already on onto are dropped). It returns the new
// HEAD, or conflict true (and the rebase aborted) when it stopped on a
// conflict.
func (r *Repo) Rebase(ctx context.Context, dir, onto string) (head string, conflict bool, err error) {
	if _, err := r.gitIn(ctx, dir, "rebase", "--no-autostash", "--no-autosquash", "--no-verify", "--quiet", onto); err != nil {
		// Stopped on a conflict: git leaves its state to resume from.
		// Refused outright (a dirty worktree, say): it leaves none.
		if r.abortRebase(ctx, dir) {
			return "", true, nil
		}
		return "", false, err
	}
	out, err := r.gitIn(ctx, dir, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return "", false, err
	}
	return strings.TrimSpace(out), false, nil
}

// abortRebase aborts a rebase left unfinished in the worktree dir, if there
// is one (git keeps its state in rebase-merge or rebase-apply), and reports
// whether there was.
func (r *Repo) abortRebase(ctx context.Context, dir string) bool {
	gd := r.worktreeGitDir(ctx, dir)
	for _, state := range []string{"rebase-merge", "rebase-apply"} {
		if _, err := os.Stat(filepath.Join(gd, state)); err == nil {
			_, _ = r.gitIn(ctx, dir, "rebase", "--abort")
			return true
		}
	}
	return false
}

func (r *Repo) worktreeGitDir(ctx context.Context, dir string) string {
	out, err := r.gitIn(ctx, dir, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return dir
	}
	return strings.TrimSpace(out)
}

// Checkouts lists the worktrees (the main one included) that have branch
// (a full name) checked out.
func (r *Repo) Checkouts(ctx context.Context, branch string) ([]string, error) {
	out, err := r.git(ctx, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, err
	}
	var dirs []string
	var cur string
	var bare bool
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "worktree "):
			cur, bare = strings.TrimPrefix(line, "worktree "), false
		case line == "bare":
			bare = true
		case line == "branch "+branch && !bare:
			dirs = append(dirs, cur)
		}
	}
	return dirs, nil
}

// Dirty reports whether the worktree at dir has changes to tracked files,
// staged or not, with git's first line about them.
func (r *Repo) Dirty(ctx context.Context, dir string) (bool, string, error) {
	out, err := r.gitIn(ctx, dir, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return false, "", err
	}
	out = strings.TrimSpace(out)
	return out != "", firstLine(out), nil
}

// SyncCheckout brings the worktree at dir, whose branch was moved from old
// to new behind its back, along: index and files go from old to new as a
// fast-forward would take them. git refuses if that would lose a change.
func (r *Repo) SyncCheckout(ctx context.Context, dir, old, new string) error {
	_, err := r.gitIn(ctx, dir, "read-tree", "-m", "-u", old, new)
	return err
}
