package live

import (
	"context"

	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host/checks"
)

// CheckPrograms checks host.checks' programs before any work is checked
// with them, as the checks will run them (checks.Programs): a program of
// the worktree in the target's tree (repo nil: not looked up: a worker
// has none), any other on this machine, in the sandbox's sight (here
// false: the workers run them, not this machine). foreman host, up,
// worker and validate refuse to start with one that would not run, in
// one line that says what to do.
func CheckPrograms(ctx context.Context, c *config.Config, repo *gitrepo.Repo, here bool) error {
	p := checks.Programs{Commands: c.Host.Checks, Env: checks.Env("", c.Host.Env, nil), Target: c.Host.Target}
	if !c.Host.Unconfined {
		p.Runnable = SandboxConfig(c, "").Runnable()
	}
	if repo != nil {
		p.InTree = func(file string) (string, error) { return repo.Mode(ctx, "refs/heads/"+c.Host.Target, file) }
	}
	if !here {
		var inTree [][]string
		for _, argv := range p.Commands {
			if len(argv) > 0 && checks.InTree(argv[0]) {
				inTree = append(inTree, argv)
			}
		}
		p.Commands = inTree
	}
	return p.Check()
}
