package live

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/lockfile"
)

// lockFile is the host's lock in a repository's git directory.
const lockFile = "foreman-host.lock"

// lockRepo takes the repository for one host. Two hosts on one repository
// (two foreman up or foreman host, from two configs) would prune each
// other's worktrees and race each other's landings; the second is refused.
// The lock is a flock, so a host that dies releases it; the file holds the
// holder's pid, for the refusal to name.
func lockRepo(repo *gitrepo.Repo) (*os.File, error) {
	f, err := tryLock(repo.GitDir())
	if errors.Is(err, errLocked) {
		path := filepath.Join(repo.GitDir(), lockFile)
		return nil, fmt.Errorf("host.repo: %s is in use by another foreman host (%s holds %s); stop it, or point host.repo at another repository",
			repo.Dir(), lockfile.Holder(path), path)
	}
	if err != nil {
		return nil, fmt.Errorf("host.repo: %s: %w", repo.Dir(), err)
	}
	return f, nil
}

// errLocked: another process holds the lock.
var errLocked = lockfile.ErrHeld

// tryLock takes the lock in gitDir if no other process holds it.
func tryLock(gitDir string) (*os.File, error) {
	return lockfile.Take(filepath.Join(gitDir, lockFile))
}
