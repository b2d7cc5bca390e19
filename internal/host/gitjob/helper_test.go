package gitjob

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/host/sandbox"
	"github.com/agentforeman/foreman/internal/host/sandbox/sandboxtest"
)

// The test binary is also the check: with HELPER set it checks the
// worktree it runs in instead of testing.
func TestMain(m *testing.M) {
	if mode := os.Getenv("HELPER"); mode != "" {
		os.Exit(helper(mode))
	}
	if mode := os.Getenv("HOG"); mode != "" {
		os.Exit(hog(mode))
	}
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// helper is a check. Every mode records the commit it was run on (for the
// tests that count runs), and, when it passes, in RECORD.passed (for the
// landing invariant: every landed tree passed), then:
//
//	content  fails when a file holds BUG, or when files BUG1 and BUG2
//	         are both there (each passes alone)
//	gate     says it started, then waits until the test releases it
//	hang     never ends
//	flaky    fails the first time it runs in a test, then passes
func helper(mode string) int {
	if rec := os.Getenv("RECORD"); rec != "" {
		f, err := os.OpenFile(rec, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, os.Getenv("FOREMAN_COMMIT"))
			f.Close()
		}
	}
	switch mode {
	case "gate":
		_ = os.WriteFile(os.Getenv("GATE")+".started", nil, 0o644)
		for {
			if _, err := os.Stat(os.Getenv("GATE") + ".open"); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	case "hang":
		time.Sleep(time.Hour)
	case "flaky":
		mark := os.Getenv("RECORD") + ".flaked"
		if _, err := os.Stat(mark); err != nil {
			_ = os.WriteFile(mark, nil, 0o644)
			fmt.Println("FAIL: a flake")
			return 1
		}
	}
	entries, _ := os.ReadDir(".")
	_, one := os.Stat("BUG1")
	_, two := os.Stat("BUG2")
	if one == nil && two == nil {
		fmt.Println("FAIL: BUG1 and BUG2 do not work together")
		return 1
	}
	for _, e := range entries {
		data, err := os.ReadFile(e.Name())
		if err == nil && strings.Contains(string(data), "BUG") {
			fmt.Println("checking", len(entries), "files")
			fmt.Printf("FAIL: %s holds BUG\n", e.Name())
			return 1
		}
	}
	if rec := os.Getenv("RECORD"); rec != "" {
		f, err := os.OpenFile(rec+".passed", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, os.Getenv("FOREMAN_COMMIT"))
			f.Close()
		}
	}
	fmt.Println("ok")
	return 0
}

var ctx = context.Background()

type fixture struct {
	t      *testing.T
	repo   *gitrepo.Repo
	runner *Runner
	dir    string
	gate   string
	record string
	run    int
	tries  int      // how many times a job's checks run while they fail (Job.Tries, the core's)
	passed []string // the trees that passed, as the core keeps them
}

func newFixture(t *testing.T, bare bool, mutate func(*Options)) *fixture {
	t.Helper()
	return newFixtureWith(t, bare, func(_ *fixture, o *Options) {
		if mutate != nil {
			mutate(o)
		}
	})
}

// newFixtureWith is newFixture with a mutate that may use the fixture (its
// directory, its sandbox).
func newFixtureWith(t *testing.T, bare bool, mutate func(*fixture, *Options)) *fixture {
	t.Helper()
	return newFixtureIn(t, t.TempDir(), bare, mutate)
}

// newFixtureIn is newFixtureWith in dir (the repository, the logs, the
// work directory all there).
func newFixtureIn(t *testing.T, dir string, bare bool, mutate func(*fixture, *Options)) *fixture {
	t.Helper()
	repo, err := gitrepo.Init(ctx, filepath.Join(dir, "repo"), "main", bare)
	require.NoError(t, err)
	// The check (this binary) tells the test through files in signals/,
	// the one directory of the test's it may write: it runs sandboxed.
	signals := filepath.Join(dir, "signals")
	require.NoError(t, os.Mkdir(signals, 0o755))
	require.NoError(t, os.Chmod(signals, 0o777)) // a check of a host running as root runs as nobody
	f := &fixture{t: t, repo: repo, dir: dir, gate: filepath.Join(signals, "gate"), record: filepath.Join(signals, "checked")}
	o := Options{
		Repo: repo, Target: "main", AutoRebase: true, Timeout: time.Minute,
		Checks: [][]string{{os.Args[0], "-test.run=^$"}},
		Env:    []string{"HELPER=content", "GATE=" + f.gate, "RECORD=" + f.record},
		Logs:   filepath.Join(dir, "logs"), Work: filepath.Join(dir, "work"), LogURL: "http://127.0.0.1:9090/ci/logs",
	}
	// The signals directory is shared by every check on purpose (it is
	// how they talk to the test), not a cache: each builder's copy of it
	// would hide them.
	o.Sandbox = f.sandbox(sandbox.Config{RO: []string{filepath.Dir(os.Args[0])}, RW: []string{signals}, Without: sandbox.Without{CacheLayers: true}})
	if mutate != nil {
		mutate(f, &o)
	}
	f.runner, err = New(o)
	require.NoError(t, err)
	return f
}

// sandbox is the checks' sandbox as foreman host makes it for this
// fixture's repository, with c's paths and limits; nil (unconfined) where
// this machine has none, unless sandboxtest.Require says that fails.
func (f *fixture) sandbox(c sandbox.Config) *sandbox.Sandbox {
	f.t.Helper()
	c.GitDir = f.repo.GitDir()
	c.Deny = append(c.Deny, sandbox.Denied{Key: "host.logs", Path: filepath.Join(f.dir, "logs")}, sandbox.Denied{Key: "host.work", Path: filepath.Join(f.dir, "work")})
	if c.Home == "" {
		c.Home = f.t.TempDir()
	}
	s, err := sandbox.New(c)
	if err != nil {
		if os.Getenv(sandboxtest.Require) != "" {
			f.t.Fatalf("no sandbox on this machine: %v", err)
		}
		f.t.Logf("no sandbox on this machine (%v): checks run unconfined", err)
		return nil
	}
	f.t.Cleanup(s.Close)
	return s
}

func (f *fixture) tip(branch string) string {
	f.t.Helper()
	oid, err := f.repo.RevParse(ctx, "refs/heads/"+branch)
	require.NoError(f.t, err)
	return oid
}

// commit commits files on top of parent (a commit id, or a branch's tip by
// its name) and points branch at it.
func (f *fixture) commit(branch, parent string, files map[string]string, msg string) string {
	f.t.Helper()
	if len(parent) != 40 {
		parent = f.tip(parent)
	}
	oid, err := f.repo.CommitFiles(ctx, parent, files, msg, gitrepo.Author{Name: "Builder", Email: "b@example.com"})
	require.NoError(f.t, err)
	if branch != "" {
		require.NoError(f.t, f.repo.UpdateRef(ctx, "refs/heads/"+branch, oid, f.tipOrEmpty(branch), "test"))
	}
	return oid
}

// tipOf is what a full ref name holds.
func (f *fixture) tipOf(ref string) string {
	f.t.Helper()
	oid, err := f.repo.RevParse(ctx, ref)
	require.NoError(f.t, err)
	return oid
}

func (f *fixture) tipOrEmpty(branch string) string {
	oid, _ := f.repo.RevParse(ctx, "refs/heads/"+branch)
	return oid
}

func (f *fixture) job(kind host.Kind, c, ref string, pass *host.Pass) host.Job {
	f.run++
	return host.Job{Run: f.run, Kind: kind, Component: c, Ref: ref, Owner: "@b1", Pass: pass, Tries: f.tries}
}

// check checks ref; what passes is noted as the core would note it.
func (f *fixture) check(c, ref string) host.Outcome {
	return f.noted(f.runner.Run(ctx, f.job(host.Check, c, ref, nil)))
}

// noted keeps the tree of what passed, as the core does: a car that comes
// out as one of them is not checked again.
func (f *fixture) noted(o host.Outcome) host.Outcome {
	if o.Result == host.Passed && o.Tree != "" {
		f.passed = append(f.passed, o.Tree)
	}
	return o
}

// land moves main from base to commit, whose tree passed (the core's
// word), a merge of the approved commit (its second parent) on base.
func (f *fixture) land(c, ref, base, commit string) host.Outcome {
	f.t.Helper()
	j := f.job(host.Land, c, ref, nil)
	j.Base, j.Commit = base, commit
	made, err := f.repo.CommitOf(ctx, commit)
	require.NoError(f.t, err)
	j.Tree = made.Tree
	if len(made.Parents) == 2 {
		j.Tip = made.Parents[1]
	}
	return f.runner.Run(ctx, j)
}

// car checks c's approved tip on base merged with the cars ahead.
func (f *fixture) car(c, ref, base, tip string, ahead ...host.Link) host.Outcome {
	j := f.job(host.Car, c, ref, nil)
	j.Base, j.Tip, j.Ahead, j.Passed = base, tip, ahead, f.passed
	return f.noted(f.runner.Run(ctx, j))
}

// checked is how many times the checks ran so far.
func (f *fixture) checked() int {
	data, _ := os.ReadFile(f.record)
	return strings.Count(string(data), "\n")
}

func (f *fixture) git(args ...string) string {
	f.t.Helper()
	out, err := f.repo.Git(ctx, args...)
	require.NoError(f.t, err)
	return out
}

// waitFor waits for a file the helper writes.
func waitFor(t *testing.T, path string) {
	t.Helper()
	require.Eventually(t, func() bool { _, err := os.Stat(path); return err == nil }, time.Minute, 5*time.Millisecond)
}

// noWorktreesLeft: every run cleaned up after itself: the work directory
// holds only slot worktrees (kept for the next run), and git knows no
// other worktree.
func (f *fixture) noWorktreesLeft() {
	f.t.Helper()
	all, err := os.ReadDir(filepath.Join(f.dir, "work"))
	require.NoError(f.t, err)
	var slots []string
	for _, e := range all {
		require.True(f.t, strings.HasPrefix(e.Name(), "slot-"), "left behind: %s", e.Name())
		if !strings.HasSuffix(e.Name(), ".disk") { // its volume's image, kept with it
			slots = append(slots, e.Name())
		}
	}
	out := f.git("worktree", "list", "--porcelain")
	require.Equal(f.t, 1+len(slots), strings.Count(out, "worktree "), out)
}
