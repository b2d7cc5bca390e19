// Package checks runs foreman host's check commands in a worktree: each in
// a process group of its own (and, with a sandbox, confined: package
// sandbox), with a clean environment, under one time limit for all of
// them, output captured to a log file of bounded size with the host's
// secrets taken out. It says whether they passed and, if not, the first
// line of output that says why.
package checks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentforeman/foreman/internal/host/sandbox"
	"github.com/agentforeman/foreman/internal/nofollow"
	"golang.org/x/sys/unix"
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
	// Sandbox, if set, confines each command; nil runs them unconfined.
	Sandbox *sandbox.Sandbox
	// Private is the run's own directory (its TMPDIR and HOME): with Dir,
	// what a confined command may write.
	Private string
	// Layer is whose copies of host.sandbox_paths.rw the commands see: the
	// builder whose work is checked (sandbox.Run.Layer).
	Layer string
	// Secrets never reach the log or the failure line, in any of the
	// forms redaction knows (see forms).
	Secrets []Secret
	// SecretsAsIs looks for each secret as it is only, not hex, base64 or
	// URL-encoded: for the test that proves those forms, which the
	// configuration never sets.
	SecretsAsIs bool
}

// DefaultLogLimit bounds a log when the Spec does not.
const DefaultLogLimit = 8 << 20

// Result is how a run ended.
type Result struct {
	Passed   bool
	Command  string // the command that failed, quoted as a shell would read it
	Line     string // its first line of output that reads as a failure, else its last, else how it ended
	Silent   bool   // it failed without a line of output: Line says how it ended
	TimedOut bool   // killed at the time limit
	Stopped  bool   // stopped by a sandbox limit, or it did not run: no second try would differ
	// NotRun, when the failing command never started, says why: NotFound,
	// NotExecutable, or SandboxFailed. Whose fault that is (the host's,
	// or a builder's who broke a program of the worktree) is for the
	// caller to judge, from Program.
	NotRun  string
	Program string // NotRun: the program as it was to run (the path found, else the name)
	// Interpreter: NotFound, and Program a script of the worktree whose
	// first line names this program (#!/usr/bin/python3): what was not
	// found may be it. The script stays Program: a branch may write any
	// first line, so whose fault it is turns on the script.
	Interpreter string
	Duration    time.Duration
	Logged      int64 // bytes written to the log
	Cut         int64 // bytes of output not kept
}

// Why a command did not start (Result.NotRun).
const (
	NotFound      = "not found"      // no such program, or not on the checks' PATH
	NotExecutable = "not executable" // there, but not a program anyone may run
	SandboxFailed = "sandbox failed" // the sandbox could not confine or start it
)

// notRun is a command that never started, and why.
type notRun struct {
	why, program string
	err          error
}

func (e *notRun) Error() string { return e.err.Error() }
func (e *notRun) Unwrap() error { return e.err }

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
	red := newRedactor(log, s.Secrets, s.SecretsAsIs)
	if s.Sandbox != nil {
		// What the last run in this worktree wrote is gone: this run
		// gets all of its disk.
		if err := s.Sandbox.Fresh(sandbox.Run{Worktree: s.Dir, Private: s.Private, Layer: s.Layer}); err != nil {
			return Result{}, err
		}
	}
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
		name := red.redact(Quote(argv))
		log.note("$ " + name)
		log.mark()
		code, stopped, runErr := runOne(limit, s, argv, red)
		red.flush()
		switch {
		case ctx.Err() != nil:
			return Result{}, ctx.Err()
		case limit.Err() != nil:
			log.note(fmt.Sprintf("[killed with its process group: the checks took longer than %s]", short(s.Timeout)))
			res = Result{Command: name, TimedOut: true, Line: fmt.Sprintf("timed out after %s (killed with its process group)", short(s.Timeout))}
		case stopped != "":
			log.note("[stopped: " + stopped + "]")
			res = Result{Command: name, Line: "stopped: " + stopped, Stopped: true}
		case runErr != nil:
			log.note("[did not run: " + red.redact(runErr.Error()) + "]")
			res = Result{Command: name, Line: "did not run: " + red.redact(runErr.Error()), Stopped: true}
			var nr *notRun
			if errors.As(runErr, &nr) {
				res.NotRun, res.Program = nr.why, nr.program
				if nr.why == NotFound {
					// The program may be there, and what is not the
					// interpreter its first line names.
					res.Interpreter = interpreter(s.Dir, nr.program)
				}
			}
		case code != 0:
			how := fmt.Sprintf("exited with status %d", code)
			if code == 128+int(syscall.SIGXFSZ) && s.Sandbox != nil {
				how += " (128+SIGXFSZ: a file grew past host.sandbox_limits.file_size?)"
			}
			line := log.failure()
			log.note("[" + how + "]")
			res = Result{Command: name, Line: line}
			if line == "" {
				res.Line, res.Silent = how, true
			}
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
// the background outlives it (unless it left the group: with a sandbox,
// the command is the first process of a PID namespace, and all of it ends
// with that). stopped is the sandbox's limit that stopped it, if one did.
func runOne(limit context.Context, s Spec, argv []string, out *redactor) (code int, stopped string, err error) {
	path, err := lookPath(argv[0], s.Env)
	if err != nil {
		return -1, "", &notRun{NotFound, argv[0], err}
	}
	cmd := exec.CommandContext(limit, path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Dir = s.Dir
	cmd.Env = s.Env
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd) }
	// A grandchild may keep the output pipe open after the group is
	// killed (one that left the group): stop reading after a moment.
	cmd.WaitDelay = 2 * time.Second
	var box *sandbox.Process
	if s.Sandbox != nil {
		if box, err = s.Sandbox.Command(cmd, sandbox.Run{Worktree: s.Dir, Private: s.Private, Layer: s.Layer}); err != nil {
			return -1, "", &notRun{SandboxFailed, path, fmt.Errorf("sandbox: %w", err)}
		}
	}
	if err := cmd.Start(); err != nil {
		if box != nil {
			box.Done()
			return -1, "", &notRun{SandboxFailed, path, fmt.Errorf("sandbox: %w", err)}
		}
		return -1, "", &notRun{execFailure(err), path, err}
	}
	if s.Started != nil {
		s.Started(cmd.Process.Pid)
	}
	if box != nil {
		if err := box.Started(); err != nil {
			_ = cmd.Wait()
			box.Done()
			return -1, "", describeStage(err, path)
		}
	}
	err = cmd.Wait()
	if box != nil {
		stopped = box.Done()
	} else {
		_ = killGroup(cmd)
	}
	if err == nil {
		return 0, stopped, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if code := ee.ExitCode(); code >= 0 {
			return code, stopped, nil
		}
		return 128 + int(signalOf(ee)), stopped, nil
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		return 0, stopped, nil
	}
	return -1, stopped, err
}

// describeStage says why a confined command did not run, with what to do
// when the sandbox kept its program out.
func describeStage(err error, path string) error {
	var se *sandbox.StageError
	if !errors.As(err, &se) {
		return &notRun{SandboxFailed, path, err}
	}
	msg := se.Msg
	why := SandboxFailed
	if strings.HasPrefix(msg, "exec ") {
		switch {
		case strings.HasSuffix(msg, "permission denied"):
			why = NotExecutable
		case strings.HasSuffix(msg, "no such file or directory"):
			why = NotFound
		case strings.HasSuffix(msg, "exec format error"):
			why = NotExecutable
		}
		if why != SandboxFailed && !inTree(path) {
			msg += " (a check's filesystem holds the system directories, its worktree and the paths host.sandbox_paths names, nothing else: add the program's directory to host.sandbox_paths.ro)"
		}
	}
	return &notRun{why, path, errors.New("sandbox: " + msg)}
}

// interpreter is the program a script's first line names (#!/bin/sh),
// if program is a file of the worktree dir with such a line. A check may
// have left anything at that path: it is opened without following a link
// at any component and without blocking, and read only if it is a
// regular file, its first 256 bytes.
func interpreter(dir, program string) string {
	if !inTree(program) {
		return ""
	}
	f, err := nofollow.Open(dir, program, os.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return ""
	}
	defer f.Close()
	return firstLine(f)
}

// hostInterpreter is interpreter for a program of the host's own (an
// absolute path, resolved at start): no check has written it.
func hostInterpreter(program string) string {
	if !filepath.IsAbs(program) {
		return ""
	}
	f, err := os.Open(program)
	if err != nil {
		return ""
	}
	defer f.Close()
	return firstLine(f)
}

// firstLine is the program a regular file's #! line names, from its first
// 256 bytes.
func firstLine(f *os.File) string {
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	line, _, _ := strings.Cut(string(head[:n]), "\n")
	rest, ok := strings.CutPrefix(line, "#!")
	if !ok {
		return ""
	}
	words := strings.Fields(rest)
	if len(words) == 0 {
		return ""
	}
	return words[0]
}

// InTree reports whether a program is named as a path in the worktree
// (./check.sh, scripts/ci): the repository's file, not the host's.
func InTree(program string) bool { return inTree(program) }

func inTree(program string) bool {
	return strings.Contains(program, "/") && !filepath.IsAbs(program)
}

// execFailure says why an unconfined program did not start.
func execFailure(err error) string {
	switch {
	case errors.Is(err, syscall.ENOENT), errors.Is(err, exec.ErrNotFound):
		return NotFound
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.ENOEXEC), errors.Is(err, syscall.EPERM):
		return NotExecutable
	}
	return NotFound
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
