package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Committer is who the host's own commits (merges, rebased commits) are
// by. A rebase keeps each commit's author.
const (
	CommitterName  = "foreman host"
	CommitterEmail = "host@foreman.invalid"
)

// Repo is one git repository, bare or not.
type Repo struct {
	dir    string // where git runs: the work tree, or the bare repository
	gitDir string // absolute path of the git directory
	bare   bool
	env    []string
}

// Open checks that dir is a git repository and opens it.
func Open(ctx context.Context, dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s: no such directory; make a repository there (git init --initial-branch=main %s) or name the one you have", abs, abs)
	}
	r := &Repo{dir: abs, env: cleanEnv(os.Environ())}
	out, err := r.git(ctx, "rev-parse", "--absolute-git-dir", "--is-bare-repository")
	if err != nil {
		return nil, fmt.Errorf("%s: not a git repository; make it one (git init --initial-branch=main %s) or name the repository's top directory", abs, abs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		return nil, fmt.Errorf("%s: git rev-parse said %q", abs, out)
	}
	r.gitDir, r.bare = lines[0], lines[1] == "true"
	// git looks upwards for a repository: a directory inside one is not
	// one, and the host must not work on its parent by mistake.
	top := r.gitDir
	if !r.bare {
		out, err := r.git(ctx, "rev-parse", "--show-toplevel")
		if err != nil {
			return nil, fmt.Errorf("%s: not a git repository (%v)", abs, err)
		}
		top = strings.TrimSpace(out)
	}
	if !sameDir(top, abs) {
		return nil, fmt.Errorf("%s: not a git repository (it is inside %s); name %s itself", abs, top, top)
	}
	return r, nil
}

func sameDir(a, b string) bool {
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}

// Dir is where the repository is.
func (r *Repo) Dir() string { return r.dir }

// GitDir is its git directory.
func (r *Repo) GitDir() string { return r.gitDir }

// Bare reports whether it has no work tree of its own.
func (r *Repo) Bare() bool { return r.bare }

// cleanEnv is the environment git runs in: the host's, without the GIT_*
// variables that would point it at another repository or index, in the C
// locale (so that its messages read as this package expects), never asking
// for a password.
func cleanEnv(env []string) []string {
	out := make([]string, 0, len(env)+4)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "GIT_") || name == "LC_ALL" || name == "LANG" || name == "LANGUAGE" {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "LC_ALL=C", "LANG=C", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
}

// fixed are the settings every command runs with: no hooks, no signing,
// no pager, a known committer, and a reflog for every ref the host moves
// (even in a bare repository): what the target held, and when, stays on
// record.
var fixed = []string{
	"-c", "core.logAllRefUpdates=always",
	"-c", "core.hooksPath=" + os.DevNull,
	"-c", "commit.gpgSign=false",
	"-c", "core.pager=cat",
	"-c", "user.name=" + CommitterName,
	"-c", "user.email=" + CommitterEmail,
	"-c", "advice.detachedHead=false",
}

// Error is a git command that failed.
type Error struct {
	Args   []string // the command's arguments after git
	Code   int      // its exit status; -1 when it did not run or was killed
	Stderr string   // what it said, trimmed
	Err    error
}

func (e *Error) Error() string {
	msg := firstLine(e.Stderr)
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", e.verb(), msg)
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) verb() string {
	if len(e.Args) == 0 {
		return ""
	}
	return e.Args[0]
}

// Locked reports whether git failed because another process holds one of
// the repository's lock files: worth trying again later.
func (e *Error) Locked() bool {
	s := e.Stderr
	return strings.Contains(s, "Unable to create") && strings.Contains(s, ".lock': File exists")
}

// IsLocked reports whether err is a git failure on a held lock.
func IsLocked(err error) bool {
	var ge *Error
	return errors.As(err, &ge) && ge.Locked()
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(s, "fatal: "), "error: "))
}

// git runs one git command in the repository and returns its output.
func (r *Repo) git(ctx context.Context, args ...string) (string, error) {
	return r.gitIn(ctx, r.dir, args...)
}

// gitIn runs one git command in dir (a worktree of the repository).
func (r *Repo) gitIn(ctx context.Context, dir string, args ...string) (string, error) {
	out, _, err := r.run(ctx, dir, nil, args...)
	return out, err
}

func (r *Repo) run(ctx context.Context, dir string, stdin []byte, args ...string) (string, int, error) {
	return r.runEnv(ctx, dir, stdin, nil, args...)
}

func (r *Repo) runEnv(ctx context.Context, dir string, stdin []byte, env []string, args ...string) (string, int, error) {
	cmd := exec.CommandContext(ctx, "git", append(append([]string{}, fixed...), args...)...)
	cmd.Dir = dir
	cmd.Env = append(r.env[:len(r.env):len(r.env)], env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err == nil {
		return stdout.String(), 0, nil
	}
	code := -1
	var ee *exec.ExitError
	if errors.As(err, &ee) && ctx.Err() == nil {
		code = ee.ExitCode()
	}
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return stdout.String(), code, &Error{Args: args, Code: code, Stderr: strings.TrimSpace(stderr.String()), Err: err}
}

// exitCode is the status of a failed command; -1 if it did not run to an
// exit (killed, cancelled, not found).
func exitCode(err error) int {
	var ge *Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return -1
}

// Git runs any git command in the repository, for tests and tools: the
// arguments are the caller's to make safe.
func (r *Repo) Git(ctx context.Context, args ...string) (string, error) { return r.git(ctx, args...) }
