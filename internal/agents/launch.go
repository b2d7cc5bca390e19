package agents

import (
	"io"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
)

// LaunchSpec is one start of an agent's process.
type LaunchSpec struct {
	Name, Dir      string
	Argv, Env      []string
	Stdout, Stderr io.Writer
	// Writable are the paths it may write besides Dir: its HOME, TMPDIR,
	// its CLI's config and caches (a confining Launcher's business).
	Writable []string
	// Written are what foreman wrote for it in Dir and Writable (its
	// CLI's MCP config, and the directories above it there): the agent's
	// to read as the rest (a confining Launcher that runs it as a uid of
	// its own makes them that uid's).
	Written []string
}

// Process is a started agent.
type Process interface {
	Pid() int
	Signal(os.Signal) error // to all its processes
	Wait() error
}

// Launcher starts an agent's process.
type Launcher func(LaunchSpec) (Process, error)

// Exec is the plain Launcher: the agent's program in a process group of
// its own, so that a signal reaches every process it started.
func Exec(s LaunchSpec) (Process, error) {
	cmd := exec.Command(s.Argv[0], s.Argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = s.Dir, s.Env, s.Stdout, s.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &group{cmd: cmd}, nil
}

type group struct {
	cmd  *exec.Cmd
	done atomic.Bool // waited for: its pid may be another's now
}

func (g *group) Pid() int { return g.cmd.Process.Pid }

func (g *group) Signal(sig os.Signal) error {
	if g.done.Load() {
		return os.ErrProcessDone
	}
	s, ok := sig.(syscall.Signal)
	if !ok {
		return g.cmd.Process.Signal(sig)
	}
	return syscall.Kill(-g.cmd.Process.Pid, s)
}

// Wait waits for the agent, then kills what it left in its group: a
// child it started must not outlive it and write to its workspace while
// the next start works there.
func (g *group) Wait() error {
	err := g.cmd.Wait()
	_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
	g.done.Store(true)
	return err
}
