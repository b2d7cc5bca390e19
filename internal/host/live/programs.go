package live

import (
	"context"

	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host/checks"
)

// CheckPrograms checks host.checks' programs before any work is checked
// with them (checks.ConfiguredPrograms), looking a program of the worktree
// up in repo's target (nil: not looked up).
func CheckPrograms(ctx context.Context, c *config.Config, repo *gitrepo.Repo, here bool) error {
	var inTree func(string) (string, error)
	if repo != nil {
		inTree = func(file string) (string, error) { return repo.Mode(ctx, "refs/heads/"+c.Host.Target, file) }
	}
	return checks.ConfiguredPrograms(c, inTree, here)
}
