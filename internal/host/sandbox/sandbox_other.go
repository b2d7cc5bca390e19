//go:build !linux

package sandbox

import (
	"errors"
	"os/exec"
	"runtime"
)

// Sandbox is not available off Linux: New refuses.
type Sandbox struct{}

// New refuses: checks are sandboxed with Linux's namespaces and Landlock.
func New(Config) (*Sandbox, error) {
	return nil, errors.New("checks can be sandboxed on Linux only (this is " + runtime.GOOS + "): run foreman host on Linux, or set host.sandbox: off to run checks unconfined")
}

// Describe says nothing: there is no sandbox here.
func (s *Sandbox) Describe() []string { return nil }

// Process is never made here.
type Process struct{}

// Command cannot confine anything here.
func (s *Sandbox) Command(*exec.Cmd, Run) (*Process, error) {
	return nil, errors.New("no sandbox on " + runtime.GOOS)
}

// StageError is never returned here.
type StageError struct{ Msg string }

func (e *StageError) Error() string { return e.Msg }

// Started is never called here.
func (p *Process) Started() error { return nil }

// Done is never called here.
func (p *Process) Done() string { return "" }

// MakeHome is never called here.
func (s *Sandbox) MakeHome(string) (string, error) {
	return "", errors.New("no sandbox on " + runtime.GOOS)
}

// Fresh is never called here.
func (s *Sandbox) Fresh(Run) error { return errors.New("no sandbox on " + runtime.GOOS) }

// Close has nothing to let go of here.
func (s *Sandbox) Close() {}

// DiskRoom has nothing to say here.
func (s *Sandbox) DiskRoom(string, int) string { return "" }
