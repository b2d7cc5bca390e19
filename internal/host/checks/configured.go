package checks

import (
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/host/sandbox"
)

// ConfiguredPrograms checks host.checks' programs before any work is
// checked with them, as the checks will run them (Programs): a program of
// the worktree in the target's tree (lookUp nil: not looked up: a worker
// has none), any other on this machine, in the sandbox's sight (here
// false: the workers run them, not this machine). foreman host, up,
// worker and validate refuse to start with one that would not run, in
// one line that says what to do.
func ConfiguredPrograms(c *config.Config, lookUp func(file string) (string, error), here bool) error {
	p := Programs{Commands: c.Host.Checks, Env: Env("", c.Host.Env, nil), Target: c.Host.Target, InTree: lookUp}
	if !c.Host.Unconfined {
		p.Runnable = sandbox.Configured(c, "").Runnable()
	}
	if !here {
		var kept [][]string
		for _, argv := range p.Commands {
			if len(argv) > 0 && inTree(argv[0]) {
				kept = append(kept, argv)
			}
		}
		p.Commands = kept
	}
	return p.Check()
}
