//go:build linux

package up

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentforeman/foreman/internal/agentbox"
	"github.com/agentforeman/foreman/internal/agents"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/host/sandbox"
)

// confinement is how up starts its agents: the launcher (nil: the plain
// one), the foreman they run (for the scripted agents' commands and the
// MCP configs), and what up says about it at start.
type confinement struct {
	launch  agents.Launcher
	program string
	said    string
}

// confine confines the agents (internal/agentbox) when host.sandbox is on,
// as it confines the checks: each agent reads and writes its own
// directory under the agents' root, reads the system, the configuration
// file (foreman agent and foreman mcp read it), build.spec and a copy of
// foreman made for them beside the root, and nothing of foreman's own
// (the keys, host.work, host.repo's git directory, the journal, the
// ledger, the logs, telemetry.secret, the other agents' directories).
// Where this kernel cannot confine them, they run unconfined, and up says
// so. Where foreman runs as root, each agent runs as a uid of its own,
// which must enter the agents' root: a parent of it that lets no other
// user in is refused, naming the directory and its remedy, never
// chmodded. gitDir is host.repo's git directory ("" without one).
func confine(c *config.Config, root, program, gitDir string) (confinement, error) {
	if c.Host.Unconfined {
		return confinement{program: program, said: "host.sandbox is off: the agents run unconfined, as this user, with everything it may reach (the host's key, the journal, each other's workspaces, host.repo); set host.sandbox: on"}, nil
	}
	if _, _, err := sandbox.Landlock(); err != nil {
		return confinement{program: program, said: "the agents run unconfined: " + err.Error()}, nil
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return confinement{}, err
	}
	ownUID := os.Geteuid() == 0 && sandbox.HasCap(unix.CAP_SYS_ADMIN)
	if ownUID {
		if err := enterable(filepath.Dir(root)); err != nil {
			return confinement{}, err
		}
	}
	// The agents' root and its bin are foreman's: each agent enters its
	// own directory there, and lists none.
	if err := os.MkdirAll(root, 0o711); err != nil {
		return confinement{}, fmt.Errorf("the agents' workspaces: %w", err)
	}
	if err := os.Chmod(root, 0o711); err != nil {
		return confinement{}, fmt.Errorf("the agents' workspaces: %w", err)
	}
	prog, err := copyProgram(program, root+"-bin")
	if err != nil {
		return confinement{}, err
	}
	// Each absolute, as the box compares them: Own's are, root is, and
	// git says the git directory so.
	deny := append(sandbox.Own(c), sandbox.Denied{Key: agentbox.WorkspacesKey, Path: root})
	if gitDir != "" {
		// Its git directory: the agents push only through the gate. (Its
		// work tree, when it has one, holds the agents' root.)
		deny = append(deny, sandbox.Denied{Key: "host.repo", Path: gitDir})
	}
	readable := []string{prog}
	if c.File != "" {
		file, _ := filepath.Abs(c.File)
		readable = append(readable, file)
	}
	if c.Build.Spec != "" {
		spec, _ := filepath.Abs(c.Build.Spec)
		readable = append(readable, spec)
	}
	cfg := agentbox.Config{Deny: deny, Readable: readable}.Prepare()
	launch := func(s agents.LaunchSpec) (agents.Process, error) {
		// foreman on its PATH is the copy: a CLI's sh -c runs foreman
		// prompt, wherever foreman itself is installed.
		s.Env = withPath(s.Env, filepath.Dir(prog))
		p, err := agentbox.Launch(cfg, agentbox.Spec(s))
		if err != nil {
			return nil, err // never a nil *Process in a non-nil interface
		}
		return p, nil
	}
	how := "a user namespace of its own"
	if ownUID {
		how = "a uid of its own"
	}
	return confinement{launch: launch, program: prog,
		said: "confined (host.sandbox): " + how + ", PID namespace and Landlock: its own directory, nothing of foreman's"}, nil
}

// enterable refuses the directories from dir up to / that let no other
// user enter them: the agents' uids could not reach their workspaces.
func enterable(dir string) error {
	closed, err := agentbox.Closed(dir, -1)
	if err != nil {
		return fmt.Errorf("the agents' workspaces: %w", err)
	}
	if len(closed) == 0 {
		return nil
	}
	lets, it := "lets", "it"
	if len(closed) > 1 {
		lets, it = "let", "them"
	}
	return fmt.Errorf("host.sandbox: %s %s no other user enter, and foreman runs as root, so each agent as a uid of its own that must pass %s to reach its workspace under %s; chmod o+x %s (that lists nothing to others), or set host.sandbox: off to run the agents unconfined",
		strings.Join(closed, " and "), lets, it, dir, strings.Join(closed, " "))
}

// copyProgram copies foreman (program, found on PATH when not absolute)
// into dir, readable and runnable by everyone, as the agents' uids run it
// wherever foreman itself is installed; it returns the copy's path.
func copyProgram(program, dir string) (string, error) {
	src, err := exec.LookPath(program)
	if err != nil {
		if src, err = os.Executable(); err != nil {
			return "", fmt.Errorf("foreman's own program, for its agents: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("foreman's program for its agents: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", fmt.Errorf("foreman's program for its agents: %w", err)
	}
	in, err := os.Open(src)
	if err != nil {
		return "", fmt.Errorf("foreman's program for its agents: %w", err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(dir, ".foreman-*")
	if err != nil {
		return "", fmt.Errorf("foreman's program for its agents: %w", err)
	}
	_, err = io.Copy(tmp, in)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o755)
	}
	dst := filepath.Join(dir, "foreman")
	if err == nil {
		// A rename: an agent of an earlier up may run the old copy still.
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		if errors.Is(err, syscall.ENOSPC) {
			return "", fmt.Errorf("foreman's program for its agents: the disk is full (%v); free space on the disk of %s, then start foreman up again", err, dir)
		}
		return "", fmt.Errorf("foreman's program for its agents: %w", err)
	}
	return dst, nil
}

// withPath is env with dir first on its PATH.
func withPath(env []string, dir string) []string {
	out := make([]string, 0, len(env)+1)
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v // the last one is what a program reads
			continue
		}
		out = append(out, kv)
	}
	if path == "" {
		return append(out, "PATH="+dir)
	}
	return append(out, "PATH="+dir+string(filepath.ListSeparator)+path)
}
