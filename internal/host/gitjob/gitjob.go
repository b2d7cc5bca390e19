// Package gitjob does the git work of foreman host's jobs on one
// repository: a check (the builder's ref validated, merged with the target
// without a working tree, rebased in a private worktree if that conflicts
// and auto_rebase is on, the checks run in a worktree holding exactly the
// merge result: see slots.go) and a landing (a compare-and-swap of the target to what
// passed, or, when the target moved, a new merge checked again first).
package gitjob

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/host/checks"
	"github.com/agentforeman/foreman/internal/host/sandbox"
)

// Options configure a Runner.
type Options struct {
	Repo       *gitrepo.Repo
	Target     string     // the target branch, short name (main)
	Checks     [][]string // each a program and its arguments
	AutoRebase bool
	Timeout    time.Duration // for all the checks of one run (rules.ci_timeout)
	Env        []string      // host.env: NAME or NAME=value, passed to the checks
	Logs       string        // directory of the logs
	LogLimit   int64         // bytes kept of one log
	LogURL     string        // where the board serves Logs ("" if it does not), e.g. http://127.0.0.1:9090/ci/logs
	Work       string        // the host's private directory for worktrees
	// Sandbox confines the checks; nil runs them unconfined (host.sandbox
	// off).
	Sandbox *sandbox.Sandbox
	// Secrets never reach a log or a verdict.
	Secrets []checks.Secret
	// Checker runs the checks on a commit; nil runs them here, in slots
	// of Work (host.max_parallel at once).
	Checker Checker
	// MayLand, if set, is asked right before the target moves: an error
	// (the host no longer holds the merger role, say) holds the landing
	// back, to be tried again later, with the error as the reason.
	MayLand func() error

	// trustSlots skips the check of a slot's .git before the host's own
	// git runs there: for the test that shows the attack it stops.
	trustSlots bool
	// secretsAsIs redacts each secret as it is only, not encoded: for
	// the test that shows what the encoded forms stop.
	secretsAsIs bool
	// trustLandings skips the land job's check that each commit is
	// exactly its approved landing: for the test that shows what it stops.
	trustLandings bool
}

// Runner runs jobs. Its methods may be called from several goroutines.
type Runner struct {
	o     Options
	mu    sync.Mutex
	free  []*slot // slot worktrees not in use
	slots int     // slots made so far

	worktrees sync.Mutex // held while a slot's worktree is made or removed

	changes map[string][]string // scans: files a commit changed since it left a base
	merged  map[string][]string // scans: files two commits conflict in

	checkFiles map[string]bool // the repository's files that define the checks (checkFiles)
}

// New makes a runner; it makes the log and work directories.
func New(o Options) (*Runner, error) {
	// git runs in the repository and the checks in a worktree: a relative
	// path would mean something else to each.
	for _, d := range []*string{&o.Logs, &o.Work} {
		abs, err := filepath.Abs(*d)
		if err != nil {
			return nil, err
		}
		*d = abs
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return nil, err
		}
	}
	// The slots hold what checks wrote: no other user of the machine
	// may reach them (a file a check left is run by nobody else).
	if err := os.Chmod(o.Work, 0o700); err != nil {
		return nil, fmt.Errorf("host.work: %w", err)
	}
	return &Runner{o: o, changes: map[string][]string{}, merged: map[string][]string{}, checkFiles: checkFiles(o.Checks)}, nil
}

// Prune ends and removes what a crash left in the work directory: the
// process groups of checks still running (a host killed outright does not
// take them along) and the worktrees of runs that never ended.
func (r *Runner) Prune(ctx context.Context) error {
	files, _ := filepath.Glob(filepath.Join(r.o.Work, "*.pgid"))
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil {
			if pgid, ok := ownGroup(string(data)); ok {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
		}
		_ = os.Remove(f)
	}
	return r.o.Repo.PruneWorktrees(ctx, r.o.Work, isSlot)
}

// A .pgid file says a check's process group and the boot it ran in (this
// machine's boot id): a host that takes over on another machine sharing
// the work directory (a standby, docs/HOST.md), or after a reboot, must
// not kill whatever has that number there.
func pgidRecord(pgid int) string { return strconv.Itoa(pgid) + " " + bootID() }

// ownGroup reads a .pgid file: the group, if it ran in this boot of this
// machine (a file with no boot id is an older host's, on this machine).
func ownGroup(rec string) (int, bool) {
	fs := strings.Fields(rec)
	if len(fs) == 0 {
		return 0, false
	}
	pgid, err := strconv.Atoi(fs[0])
	if err != nil || pgid <= 1 {
		return 0, false
	}
	if len(fs) > 1 && fs[1] != bootID() {
		return 0, false
	}
	return pgid, true
}

// bootID names this boot of this machine ("" where the system does not
// say: then every record is taken as this machine's).
var bootID = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
})

// Run does j and says how it went. A cancelled ctx gives Cancelled.
func (r *Runner) Run(ctx context.Context, j host.Job) host.Outcome {
	var o host.Outcome
	switch j.Kind {
	case host.Check:
		o = r.check(ctx, j)
	case host.Car:
		o = r.car(ctx, j)
	case host.Scan:
		o = r.scan(ctx, j)
	case host.Pin:
		o = r.pin(ctx, j)
	case host.Land:
		o = r.land(ctx, j)
	case host.Note:
		o = r.note(ctx, j)
	case host.Head:
		o = r.head(ctx, j)
	default:
		o = host.Outcome{Result: host.Invalid, Line: "unknown job"}
	}
	if ctx.Err() != nil && j.Kind != host.Land && j.Kind != host.Note && j.Kind != host.Head {
		// A landing says what its compare-and-swap did, cancelled or not.
		o = host.Outcome{Result: host.Cancelled}
	}
	o.Run = j.Run
	return o
}

func (r *Runner) targetRef() string { return "refs/heads/" + r.o.Target }

// retry is an outcome for a repository that cannot do it now.
func retry(err error) host.Outcome {
	why := err.Error()
	if gitrepo.IsLocked(err) {
		why = "the repository is locked by another git process (" + why + ")"
	}
	return host.Outcome{Result: host.Retry, Line: why}
}

func invalid(why string) host.Outcome { return host.Outcome{Result: host.Invalid, Line: why} }

// resolve checks a builder's ref and finds its commit.
func (r *Runner) resolve(ctx context.Context, ref string) (gitrepo.Target, string, *host.Outcome) {
	t, err := gitrepo.ParseRef(ref)
	if err != nil {
		o := invalid(err.Error())
		return t, "", &o
	}
	if err := r.o.Repo.CheckRef(ctx, t); err != nil {
		var bad *gitrepo.BadRef
		o := retry(err)
		if errors.As(err, &bad) {
			o = invalid(bad.Why)
		}
		return t, "", &o
	}
	tip, err := r.o.Repo.Resolve(ctx, t)
	if err != nil {
		o := retry(err)
		return t, "", &o
	}
	if tip == "" {
		o := invalid(gitrepo.Missing(t))
		return t, "", &o
	}
	return t, tip, nil
}

// Target is the target branch's commit now.
func (r *Runner) Target(ctx context.Context) (string, error) {
	base, bad := r.base(ctx)
	if bad != nil {
		return "", errors.New(bad.Line)
	}
	return base, nil
}

// base is the target's commit now.
func (r *Runner) base(ctx context.Context) (string, *host.Outcome) {
	base, err := r.o.Repo.RevParse(ctx, r.targetRef())
	if err != nil {
		o := retry(err)
		return "", &o
	}
	if base == "" {
		o := host.Outcome{Result: host.Retry, Line: fmt.Sprintf("the target branch %s does not exist in %s", r.o.Target, r.o.Repo.Dir())}
		return "", &o
	}
	return base, nil
}

// mergeResult is what would land if tip were merged into base now: a
// merge commit made from merge-tree's tree, the same commit whichever job
// makes it (see gitrepo.CommitMerge), even where a fast-forward would do:
// the target's first-parent line holds one commit per landing, the one
// that was checked and has a receipt, never a builder's unchecked work in
// progress. Conflicts, if any, are returned instead.
func (r *Runner) mergeResult(ctx context.Context, j host.Link, base, tip string, squash bool) (commit, tree string, conflicts []string, err error) {
	m, err := r.o.Repo.MergeTree(ctx, base, tip)
	if err != nil {
		return "", "", nil, err
	}
	if !m.Clean() {
		return "", "", m.Conflicts, nil
	}
	if squash {
		commit, err = r.o.Repo.CommitSquash(ctx, m.Tree, LandingMessage(j, r.o.Target, tip, true), base, tip)
	} else {
		commit, err = r.o.Repo.CommitMerge(ctx, m.Tree, LandingMessage(j, r.o.Target, tip, false), base, tip)
	}
	return commit, m.Tree, nil, err
}

// LandingMessage is the message of the commit that lands j's component on
// target: one entry per component on the target's first-parent line,
// naming it, its builder and who approved it ("not reviewed yet" for a
// check before review, whose commit does not land). Deterministic: every
// job that makes a chain makes the same commits.
func LandingMessage(j host.Link, target, tip string, squash bool) string {
	by := "not reviewed yet"
	if len(j.Auditors) > 0 {
		by = strings.Join(j.Auditors, ", ")
	}
	if squash {
		return fmt.Sprintf("Squash %s (%s) into %s\n\nComponent %s, built by %s, approved by %s: its approved commit %s,\nsquashed into one commit, checked and landed by foreman host.\n",
			j.Ref, j.Component, target, j.Component, j.Owner, by, tip)
	}
	return fmt.Sprintf("Merge %s (%s) into %s\n\nComponent %s, built by %s, approved by %s;\nchecked and landed by foreman host.\n",
		j.Ref, j.Component, target, j.Component, j.Owner, by)
}

// LogName is the run's log file: the component (made a safe file name),
// the run number, and which try of the checks it is (0: the first).
func LogName(j host.Job, try int) string {
	name := SafeName(j.Component) + "-" + strconv.Itoa(j.Run)
	if try > 0 {
		name += ".again" + strconv.Itoa(try)
	}
	return name + ".log"
}

// SafeName is a name made a safe part of a file name: letters, digits and
// . _ - stay, anything else is _.
func SafeName(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// LogURL is where the board serves the log file name ("" when it serves
// none).
func (r *Runner) LogURL(name string) string {
	if r.o.LogURL == "" {
		return ""
	}
	return strings.TrimSuffix(r.o.LogURL, "/") + "/" + url.PathEscape(name)
}

// runChecks runs the checks of s once, in a worktree that holds exactly
// s.Commit (a slot, reset and cleaned: see slots.go); the try's log goes
// to out.Logs.
func (r *Runner) runChecks(ctx context.Context, s CheckSpec, out *Checked, try int) (checks.Result, error) {
	log := filepath.Join(r.o.Logs, s.LogName(s.Job, try))
	out.Logs = append(out.Logs, log)
	run := filepath.Join(r.o.Work, "run-"+strconv.Itoa(s.Job.Run))
	tmp, pgids := run+".tmp", run+".pgid"
	defer os.RemoveAll(tmp)
	defer os.Remove(pgids)
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return checks.Result{}, err
	}
	sl := r.takeSlot()
	defer r.giveSlot(sl)
	if err := r.ready(ctx, sl, s.Commit); err != nil {
		return checks.Result{}, err
	}
	set := map[string]string{
		"FOREMAN_COMPONENT": s.Job.Component, "FOREMAN_REF": s.Job.Ref, "FOREMAN_COMMIT": s.Commit,
		"FOREMAN_BASE": s.Base, "FOREMAN_TARGET": s.Target,
	}
	if s.Sandbox != nil {
		// A HOME of its own: the host user's holds what checks must not
		// read (keys, ~/.gitconfig), and git dies on a config file it
		// may not read.
		home, err := s.Sandbox.MakeHome(tmp)
		if err != nil {
			return checks.Result{}, err
		}
		set["HOME"] = home
	}
	env := checks.Env(tmp, s.Env, set)
	started := func(pgid int) { _ = os.WriteFile(pgids, []byte(pgidRecord(pgid)), 0o644) }
	return checks.Run(ctx, checks.Spec{Dir: sl.dir, Commands: s.Checks, Env: env, Timeout: s.Timeout,
		Log: log, LogLimit: s.LogLimit, Started: started, Sandbox: s.Sandbox, Private: tmp, Layer: s.Job.Owner, Secrets: s.Secrets, SecretsAsIs: r.o.secretsAsIs})
}

// failed is the outcome of checks that did not pass: the check, named
// short, and its first failing line; a check that said nothing is named
// whole, with how it ended (sh -c 'test -f README': exited with status 1).
func (r *Runner) failed(ctx context.Context, res checks.Result, o host.Outcome) host.Outcome {
	o = failed(res, o)
	if res.NotRun == "" {
		return o
	}
	// The check never started: the core judges whose fault that is, from
	// where its program is and how the target holds it.
	o.NotRun, o.Program, o.Interpreter = res.NotRun, res.Program, res.Interpreter
	if prog := res.Program; checks.InTree(prog) && o.Base != "" {
		o.InTree = true
		target, err := r.o.Repo.Entry(ctx, o.Base, prog)
		if err != nil {
			return retry(err)
		}
		o.OnTarget, _, _ = strings.Cut(target, " ")
		checked := target
		if o.Commit != "" {
			if checked, err = r.o.Repo.Entry(ctx, o.Commit, prog); err != nil {
				return retry(err)
			}
		}
		o.Changed = checked != target
	}
	return o
}

func failed(res checks.Result, o host.Outcome) host.Outcome {
	o.Result = host.Failed
	name := shortCommand(res.Command)
	if res.Silent {
		name = res.Command
	}
	o.Line = name + ": " + res.Line
	o.Command = shortCommand(res.Command)
	o.Lasting = res.TimedOut || res.Stopped
	return o
}

// shortCommand names a check as people call it: the program, and its
// first argument when that is a word like a subcommand or a target (make
// test, go vet, git diff), not an option or a path.
func shortCommand(cmd string) string {
	words := strings.Fields(cmd)
	if len(words) == 0 {
		return cmd
	}
	name := filepath.Base(words[0])
	if len(words) > 1 && len(words[1]) <= 20 && !strings.HasPrefix(words[1], "-") && !strings.HasPrefix(words[1], ".") &&
		!strings.ContainsAny(words[1], "/=$'\"") {
		name += " " + words[1]
	}
	return name
}
