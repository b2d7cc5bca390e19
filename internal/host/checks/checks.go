// Package checks runs foreman host's check commands in a worktree: each in
// a process group of its own, with a clean environment, under one time
// limit for all of them, output captured to a log file of bounded size. It
// says whether they passed and, if not, the first line of output that
// says why.
package checks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Spec is one run of the checks.
type Spec struct {
	Dir      string     // where they run: a worktree of what would land
	Commands [][]string // each a program and its arguments; no shell
	Env      []string   // their whole environment (see Env)
	Timeout  time.Duration
	Log      string // the log file, created or truncated
	LogLimit int64  // bytes of output kept in the log (default 8 MiB)
	// Started, if set, is told each command's process group as it starts,
	// so that a host killed outright can find and end it on its restart.
	Started func(pgid int)
}

// DefaultLogLimit bounds a log when the Spec does not.
const DefaultLogLimit = 8 << 20

// Result is how a run ended.
type Result struct {
	Passed   bool
	Command  string // the command that failed, as written
	Line     string // its first line of output that reads as a failure, else its last, else how it ended
	TimedOut bool   // killed at the time limit
	Duration time.Duration
	Logged   int64 // bytes written to the log
	Cut      int64 // bytes of output not kept
}

// Run runs the commands in order until one fails. A cancelled ctx (the
// run went stale) kills the running command's group and returns ctx's
// error: there is no verdict to give.
func Run(ctx context.Context, s Spec) (Result, error) {
	if s.LogLimit <= 0 {
		s.LogLimit = DefaultLogLimit
	}
	f, err := os.OpenFile(s.Log, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return Result{}, err
	}
	defer f.Close()
	log := &capped{f: f, limit: s.LogLimit}
	start := time.Now()
	limit := ctx
	var cancel context.CancelFunc = func() {}
	if s.Timeout > 0 {
		limit, cancel = context.WithTimeout(ctx, s.Timeout)
	}
	defer cancel()
	res := Result{Passed: true}
commands:
	for _, argv := range s.Commands {
		if len(argv) == 0 {
			continue
		}
		name := strings.Join(argv, " ")
		log.note("$ " + name)
		log.mark()
		code, runErr := runOne(limit, s, argv, log)
		switch {
		case ctx.Err() != nil:
			return Result{}, ctx.Err()
		case limit.Err() != nil:
			log.note(fmt.Sprintf("[killed with its process group: the checks took longer than %s]", short(s.Timeout)))
			res = Result{Command: name, TimedOut: true, Line: fmt.Sprintf("timed out after %s (killed with its process group)", short(s.Timeout))}
		case runErr != nil:
			log.note("[did not run: " + runErr.Error() + "]")
			res = Result{Command: name, Line: "did not run: " + runErr.Error()}
		case code != 0:
			line := log.failure()
			if line == "" {
				line = fmt.Sprintf("exited with status %d", code)
			}
			log.note(fmt.Sprintf("[exited with status %d]", code))
			res = Result{Command: name, Line: line}
		default:
			continue
		}
		break commands
	}
	if log.cut > 0 {
		log.force(fmt.Sprintf("[log cut at %d bytes: %d bytes more were not kept]", s.LogLimit, log.cut))
	}
	res.Duration = time.Since(start)
	res.Logged, res.Cut = log.written, log.cut
	return res, log.err
}

// runOne runs one command in its own process group and waits for it. When
// limit ends, the whole group is killed, grandchildren included; the group
// is killed after a normal exit too, so nothing a check left running in
// the background outlives it.
func runOne(limit context.Context, s Spec, argv []string, log *capped) (int, error) {
	path, err := lookPath(argv[0], s.Env)
	if err != nil {
		return -1, err
	}
	cmd := exec.CommandContext(limit, path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Dir = s.Dir
	cmd.Env = s.Env
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd) }
	// A grandchild may keep the output pipe open after the group is
	// killed (one that left the group): stop reading after a moment.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return -1, err
	}
	if s.Started != nil {
		s.Started(cmd.Process.Pid)
	}
	err = cmd.Wait()
	_ = killGroup(cmd)
	if err == nil {
		return 0, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if code := ee.ExitCode(); code >= 0 {
			return code, nil
		}
		return 128 + int(signalOf(ee)), nil
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		return 0, nil
	}
	return -1, err
}

func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

func signalOf(ee *exec.ExitError) syscall.Signal {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal()
	}
	return 0
}

// lookPath finds a program on the PATH of the checks' own environment,
// not the host's.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range strings.Split(path, ":") {
		if dir == "" {
			dir = "."
		}
		p := dir + "/" + name
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found on the checks' PATH", name)
}

// short writes a duration as people do: 10m, 1h30m, 2s.
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
