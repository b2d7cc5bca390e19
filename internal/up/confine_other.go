//go:build !linux

package up

import (
	"github.com/agentforeman/foreman/internal/agents"
	"github.com/agentforeman/foreman/internal/config"
)

type confinement struct {
	launch  agents.Launcher
	program string
	said    string
}

// confine: agents are confined on Linux only; elsewhere they run
// unconfined, and up says so.
func confine(c *config.Config, _, program, _ string) (confinement, error) {
	if c.Host.Unconfined {
		return confinement{program: program, said: "host.sandbox is off: the agents run unconfined"}, nil
	}
	return confinement{program: program, said: "the agents run unconfined: they are confined on Linux only (namespaces, Landlock)"}, nil
}
