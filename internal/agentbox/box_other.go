//go:build !linux

package agentbox

import (
	"errors"
	"os"
	"os/exec"
)

// Process is one confined agent.
type Process struct {
	cmd *exec.Cmd
	UID int
}

func (p *Process) Pid() int                   { return p.cmd.Process.Pid }
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }
func (p *Process) Wait() error                { return p.cmd.Wait() }

// Launch refuses: agents are confined on Linux only (namespaces and
// Landlock), and never run less confined than foreman up promises.
func Launch(Config, Spec) (*Process, error) {
	return nil, errors.New("agents can be confined on Linux only (namespaces, Landlock); run foreman up's agents on Linux")
}

// WorkspacesKey names, in Config.Deny, the directory of the agents'
// workspaces.
const WorkspacesKey = "agents.workspaces"
