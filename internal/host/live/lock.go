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
	path := filepath.Join(repo.GitDir(), lockFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("host.repo: %s: cannot make the host's lock: %w", repo.Dir(), err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			who := "another process"
			if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) != "" {
				who = "process " + strings.TrimSpace(string(b))
			}
			return nil, fmt.Errorf("host.repo: %s is in use by another foreman host (%s holds %s); stop it, or point host.repo at another repository",
				repo.Dir(), who, path)
		}
		return nil, fmt.Errorf("host.repo: %s: cannot take the host's lock %s: %w", repo.Dir(), path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt(fmt.Appendf(nil, "%d\n", os.Getpid()), 0)
	}
	return f, nil
}
