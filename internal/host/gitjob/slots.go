package gitjob

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Checks and rebases run in slot worktrees (work/slot-N), one per job
// running at once, kept across runs: before each use a slot is reset to
// the commit it is for and cleaned of everything else (ResetWorktree), so
// it holds what a fresh checkout would, and only the files that differ are
// written. Making a worktree from nothing writes every file: seconds, on a
// repository of 10,000 files and a slow disk, against milliseconds.

const slotPrefix = "slot-"

// slot is a worktree for one job at a time.
type slot struct {
	dir string
	new bool // never checked out yet
}

// takeSlot lends a free slot, making one if none is free.
func (r *Runner) takeSlot() *slot {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.free); n > 0 {
		s := r.free[n-1]
		r.free = r.free[:n-1]
		return s
	}
	r.slots++
	dir := filepath.Join(r.o.Work, slotPrefix+strconv.Itoa(r.slots))
	_, err := os.Stat(dir)
	return &slot{dir: dir, new: err != nil}
}

func (r *Runner) giveSlot(s *slot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.free = append(r.free, s)
}

// ready makes s hold exactly commit. A slot that is not the worktree the
// host made (a check rewrote its .git: see gitrepo.CheckWorktree) or that
// cannot be reset (its directory damaged) is made again from nothing,
// before the host's own git runs in it.
func (r *Runner) ready(ctx context.Context, s *slot, commit string) error {
	if !s.new {
		err := r.checkSlot(s)
		if err == nil {
			if err = r.o.Repo.ResetWorktree(ctx, s.dir, commit); err == nil || ctx.Err() != nil {
				return err
			}
		}
	}
	// git worktree add and remove read and write the repository's list of
	// worktrees: two at once fail ("failed to read worktrees/slot-5/
	// commondir"), so slots are made one at a time. It is rare: a slot is
	// made once and kept.
	r.worktrees.Lock()
	defer r.worktrees.Unlock()
	if !s.new {
		_ = r.o.Repo.RemoveWorktree(context.WithoutCancel(ctx), s.dir)
	}
	if err := r.o.Repo.AddWorktree(ctx, s.dir, commit); err != nil {
		_ = r.o.Repo.RemoveWorktree(context.WithoutCancel(ctx), s.dir)
		return err
	}
	s.new = false
	return nil
}

func (r *Runner) checkSlot(s *slot) error {
	if r.o.trustSlots {
		return nil
	}
	return r.o.Repo.CheckWorktree(s.dir)
}

// isSlot tells the slots (kept when pruning, with their volumes' images)
// and the builders' caches from what a crash left.
func isSlot(name string) bool {
	return strings.HasPrefix(name, slotPrefix) || name == "cache-layers" || name == "cache-layers.disk"
}
