package live

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentforeman/foreman/internal/gitrepo"
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
		who := "another process"
		if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) != "" {
			who = "process " + strings.TrimSpace(string(b))
		}
		return nil, fmt.Errorf("host.repo: %s is in use by another foreman host (%s holds %s); stop it, or point host.repo at another repository",
			repo.Dir(), who, path)
	}
	if err != nil {
		return nil, fmt.Errorf("host.repo: %s: %w", repo.Dir(), err)
	}
	return f, nil
}

// errLocked: another process holds the lock.
var errLocked = errors.New("the host's lock is held by another process")

// tryLock takes the lock in gitDir if no other process holds it, and
// writes this process's pid in it.
func tryLock(gitDir string) (*os.File, error) {
	path := filepath.Join(gitDir, lockFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cannot make the host's lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, errLocked
		}
		return nil, fmt.Errorf("cannot take the host's lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt(fmt.Appendf(nil, "%d\n", os.Getpid()), 0)
	}
	return f, nil
}
