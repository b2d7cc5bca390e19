package gitjob

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/host"
)

func TestCheckRunsOnTheMergeResult(t *testing.T) {
	f := newFixture(t, true, nil)
	f.commit("b1/api", "main", map[string]string{"api.txt": "api\n"}, "api")
	f.commit("main", "main", map[string]string{"db.txt": "db\n"}, "db landed meanwhile")
	main := f.tip("main")

	o := f.check("api", "b1/api")
	require.Equal(t, host.Passed, o.Result, "%+v", o)
	assert.Equal(t, f.tip("b1/api"), o.Tip)
	assert.Equal(t, main, o.Base)
	assert.Equal(t, main+" "+o.Tip+"\n", f.git("log", "-1", "--format=%P", o.Commit), "a merge of the branch into main")
	assert.Equal(t, "api.txt\ndb.txt\n", f.git("ls-tree", "--name-only", o.Commit), "what would land, not the branch alone")
	assert.Equal(t, o.Tree+"\n", f.git("rev-parse", o.Commit+"^{tree}"))
	assert.Equal(t, main, f.tip("main"), "checking lands nothing")
	assert.Equal(t, filepath.Join(f.dir, "logs", "api-1.log"), o.Log)
	assert.Equal(t, "http://127.0.0.1:9090/ci/logs/api-1.log", o.URL)
	log, err := os.ReadFile(o.Log)
	require.NoError(t, err)
	assert.Contains(t, string(log), "ok\n")
	f.noWorktreesLeft()

	// Already on top of main: still a merge, with the branch's tree, so
	// that main's first-parent line holds only what was checked.
	f.commit("b2/web", "main", map[string]string{"web.txt": "web\n"}, "web")
	o = f.check("web", "b2/web")
	require.Equal(t, host.Passed, o.Result)
	assert.Equal(t, f.tip("main")+" "+f.tip("b2/web")+"\n", f.git("log", "-1", "--format=%P", o.Commit), "no fast-forward")
	assert.Equal(t, f.git("rev-parse", "b2/web^{tree}"), o.Tree+"\n", "the branch's tree")
}

func TestCheckFails(t *testing.T) {
	f := newFixture(t, true, nil)
	f.commit("b1/cart", "main", map[string]string{"cart.txt": "total = BUG\n"}, "cart")
	o := f.check("cart", "refs/heads/b1/cart")
	require.Equal(t, host.Failed, o.Result)
	assert.Equal(t, "gitjob.test: FAIL: cart.txt holds BUG", o.Line, "the check, named short, and its first failing line")
	assert.NotEmpty(t, o.Commit)
	log, err := os.ReadFile(o.Log)
	require.NoError(t, err)
	assert.Contains(t, string(log), "FAIL: cart.txt holds BUG")
	f.noWorktreesLeft()
}

func TestShortCommand(t *testing.T) {
	for in, want := range map[string]string{
		"make test":                          "make test",
		"/usr/bin/go vet ./...":              "go vet",
		"git diff --check 4b825dc HEAD":      "git diff",
		"sh -c make lint && make test":       "sh",
		"./scripts/check.sh --fast":          "check.sh",
		"npm run test:unit":                  "npm run",
		"pytest tests/":                      "pytest",
		"env GOFLAGS=-count=1 go test ./...": "env",
	} {
		assert.Equal(t, want, shortCommand(in), in)
	}
}

func TestCheckAHangingCheck(t *testing.T) {
	f := newFixture(t, true, func(o *Options) { o.Env[0] = "HELPER=hang"; o.Timeout = time.Second })
	f.commit("b1/api", "main", map[string]string{"a": "a"}, "a")
	o := f.check("api", "b1/api")
	require.Equal(t, host.Failed, o.Result)
	assert.Contains(t, o.Line, "timed out after 1s (killed with its process group)")
	f.noWorktreesLeft()
}

func TestBadRefsAnswerAtOnce(t *testing.T) {
	f := newFixture(t, true, nil)
	for ref, why := range map[string]string{
		"-x":                     "starts with -",
		"--upload-pack=touch":    "starts with -",
		"main..b1":               "holds .., a range",
		"a;touch${IFS}pwned":     `holds ';'`,
		"$(touch pwned)":         `holds '$'`,
		"b1/api.lock":            "not a valid branch name (git check-ref-format)",
		"nope":                   "no branch nope in the host's repository; push it, then say READY again",
		strings.Repeat("a", 40):  "no commit aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa in the host's repository",
		"https://example.com/pr": `holds ':'`,
	} {
		o := f.check("api", ref)
		assert.Equal(t, host.Invalid, o.Result, ref)
		assert.Contains(t, o.Line, why, ref)
	}
	_, err := os.Stat(filepath.Join(f.repo.Dir(), "pwned"))
	assert.True(t, os.IsNotExist(err))
	f.noWorktreesLeft()

	// A full commit id names a commit.
	c := f.commit("", "main", map[string]string{"x": "x"}, "x")
	o := f.check("api", c)
	assert.Equal(t, host.Passed, o.Result)
	assert.Equal(t, c, o.Tip)
}

// The branch repeats a fix main has (picked by another builder), and main
// then changed that line again: the merge conflicts, a rebase drops the
// repeated commit and is clean, and the branch moves to it.
func TestConflictRebasedAutomatically(t *testing.T) {
	f := newFixture(t, true, nil)
	base := f.commit("main", "main", map[string]string{"Makefile": "test:\n\tgo tset\n"}, "makefile")
	fix := map[string]string{"Makefile": "test:\n\tgo test\n"}
	f.commit("main", "main", fix, "fix the test target")
	f.commit("main", "main", map[string]string{"Makefile": "test:\n\tgo test -race\n"}, "race")
	f.commit("b1/cart", base, fix, "the same fix, on the branch")
	old := f.commit("b1/cart", "b1/cart", map[string]string{"cart.txt": "cart\n"}, "cart")

	o := f.check("cart", "b1/cart")
	require.Equal(t, host.Passed, o.Result, "%+v", o)
	require.NotNil(t, o.Rebased)
	assert.Equal(t, host.Rebase{Branch: "b1/cart", From: old, To: f.tip("b1/cart")}, *o.Rebased)
	assert.Equal(t, o.Tip, f.tip("b1/cart"), "the branch was updated")
	assert.Equal(t, f.tip("main")+" "+o.Tip+"\n", f.git("log", "-1", "--format=%P", o.Commit), "rebased onto main, and merged")
	assert.Equal(t, "cart\n", f.git("log", "--format=%s", f.tip("main")+".."+o.Tip))
	f.noWorktreesLeft()

	// Without auto_rebase, or when the rebase conflicts too: CONFLICT,
	// and the branch is left as it was.
	clash := f.commit("b2/mail", base, map[string]string{"Makefile": "test:\n\tmake check\n"}, "clash")
	o = f.check("mail", "b2/mail")
	assert.Equal(t, host.Conflicted, o.Result)
	assert.Equal(t, []string{"Makefile"}, o.Files)
	assert.Equal(t, clash, f.tip("b2/mail"))
	f.noWorktreesLeft()

	g := newFixture(t, true, func(o *Options) { o.AutoRebase = false })
	base = g.commit("main", "main", map[string]string{"a": "1\n"}, "a")
	g.commit("main", "main", map[string]string{"a": "2\n"}, "a2")
	g.commit("b1/x", base, map[string]string{"a": "3\n"}, "a3")
	o = g.check("x", "b1/x")
	assert.Equal(t, host.Conflicted, o.Result)
	assert.Equal(t, []string{"a"}, o.Files)
}

// gated runs a check with the gate helper, does what is asked while it
// waits, then lets it finish.
func gated(t *testing.T, f *fixture, j host.Job, while func()) host.Outcome {
	done := make(chan host.Outcome, 1)
	go func() { done <- f.runner.Run(ctx, j) }()
	waitFor(t, f.gate+".started")
	while()
	require.NoError(t, os.WriteFile(f.gate+".open", nil, 0o644))
	select {
	case o := <-done:
		require.NoError(t, os.Remove(f.gate+".started"))
		require.NoError(t, os.Remove(f.gate+".open"))
		return o
	case <-time.After(2 * time.Minute):
		t.Fatal("the job did not end")
	}
	return host.Outcome{}
}

func TestBranchDeletedOrForcePushedWhileChecked(t *testing.T) {
	f := newFixture(t, true, func(o *Options) { o.Env[0] = "HELPER=gate" })
	tip := f.commit("b1/api", "main", map[string]string{"a": "a"}, "a")
	o := gated(t, f, f.job(host.Check, "api", "b1/api", nil), func() {
		f.git("update-ref", "-d", "refs/heads/b1/api")
	})
	assert.Equal(t, host.Invalid, o.Result)
	assert.Equal(t, "branch b1/api was deleted while its checks ran; push it, then say READY again", o.Line)

	f.commit("b1/api", tip, map[string]string{"b": "b"}, "b")
	o = gated(t, f, f.job(host.Check, "api", "b1/api", nil), func() {
		f.commit("", "main", map[string]string{"c": "c"}, "force") // then force-pushed over the branch
		f.git("update-ref", "refs/heads/b1/api", f.commit("", "main", map[string]string{"d": "d"}, "forced"))
	})
	assert.Equal(t, host.Moved, o.Result)
	f.noWorktreesLeft()
}

func TestCancelledCheckSaysNothingAndCleansUp(t *testing.T) {
	f := newFixture(t, true, func(o *Options) { o.Env[0] = "HELPER=hang" })
	f.commit("b1/api", "main", map[string]string{"a": "a"}, "a")
	c, cancel := context.WithCancel(ctx)
	done := make(chan host.Outcome, 1)
	go func() { done <- f.runner.Run(c, f.job(host.Check, "api", "b1/api", nil)) }()
	require.Eventually(t, func() bool {
		entries, _ := os.ReadDir(filepath.Join(f.dir, "work"))
		return len(entries) > 0
	}, time.Minute, 5*time.Millisecond)
	time.Sleep(50 * time.Millisecond) // let it reach the check; the outcome is the same before it
	cancel()
	select {
	case o := <-done:
		assert.Equal(t, host.Cancelled, o.Result)
	case <-time.After(time.Minute):
		t.Fatal("a cancelled check did not end")
	}
	f.noWorktreesLeft()
}

// A train of two: the first lands what its check before review passed
// (nothing checked again), the second was checked on the chain main+api+db
// and lands the very commit it checked, on top of api's.
func TestTrainLandsTheCommitsItChecked(t *testing.T) {
	f := newFixture(t, true, nil)
	f.commit("b1/api", "main", map[string]string{"api": "api"}, "api")
	f.commit("b2/db", "main", map[string]string{"db": "db"}, "db")
	f.commit("main", "main", map[string]string{"x": "x"}, "x")
	main := f.tip("main")
	api := f.check("api", "b1/api")
	require.Equal(t, host.Passed, api.Result)
	checked := f.checked()

	db := f.car("db", "b2/db", main, f.tip("b2/db"), host.Link{Component: "api", Tip: api.Tip, Ref: "b1/api", Owner: "@b1"})
	require.Equal(t, host.Passed, db.Result, "%+v", db)
	assert.Equal(t, checked+1, f.checked(), "one check: main+api+db")
	assert.Equal(t, api.Commit+" "+f.tip("b2/db")+"\n", f.git("log", "-1", "--format=%P", db.Commit), "made on api's merge, the same commit")

	l := f.land("api", "b1/api", main, api.Commit)
	require.Equal(t, host.Landed, l.Result, "%+v", l)
	assert.Equal(t, api.Commit, f.tip("main"))
	l = f.land("db", "b2/db", api.Commit, db.Commit)
	require.Equal(t, host.Landed, l.Result, "%+v", l)
	assert.Equal(t, db.Commit, f.tip("main"))
	assert.Equal(t, checked+1, f.checked(), "landing checks nothing")

	// Landing again (a restart after the landing, before MERGED was said)
	// lands nothing twice; the car finds its commit on the target.
	l = f.land("db", "b2/db", api.Commit, db.Commit)
	assert.Equal(t, host.Landed, l.Result)
	assert.True(t, l.Already)
	again := f.car("db", "b2/db", "", f.tip("b2/db"))
	assert.Equal(t, host.Landed, again.Result)
	assert.True(t, again.Already)
	f.noWorktreesLeft()
}

// A landing never lands a commit that was not made on the target as it is
// now, or whose tree did not pass: the target moved by hand is reported,
// and the train is made again on it.
func TestLandOnlyWhatPassedOnTheTargetAsItIs(t *testing.T) {
	f := newFixture(t, true, nil)
	f.commit("b1/api", "main", map[string]string{"api": "api"}, "api")
	main := f.tip("main")
	api := f.check("api", "b1/api")
	require.Equal(t, host.Passed, api.Result)
	moved := f.commit("main", "main", map[string]string{"web": "web"}, "pushed by hand")
	l := f.land("api", "b1/api", main, api.Commit)
	assert.Equal(t, host.Outcome{Run: l.Run, Result: host.Moved, Target: moved}, l)
	assert.Equal(t, moved, f.tip("main"))

	// A commit whose tree is not the one that passed.
	unchecked := f.commit("", moved, map[string]string{"BUG": "BUG"}, "never checked")
	j := f.job(host.Land, "api", "b1/api", nil)
	j.Base, j.Commit, j.Tree, j.Tip = moved, unchecked, api.Tree, api.Tip
	l = f.runner.Run(ctx, j)
	assert.Equal(t, host.Refused, l.Result)
	assert.Equal(t, moved, f.tip("main"))
}

// A car's chain that does not merge says whose merge conflicted; a branch
// that moved after approval is not landed, old or new.
func TestCarConflictsAndMovedBranches(t *testing.T) {
	f := newFixture(t, true, nil)
	f.commit("b1/api", "main", map[string]string{"shared": "1"}, "api")
	f.commit("b2/db", "main", map[string]string{"shared": "2"}, "db")
	f.commit("b3/web", "main", map[string]string{"web": "w"}, "web")
	main := f.tip("main")
	api := host.Link{Component: "api", Tip: f.tip("b1/api"), Ref: "b1/api", Owner: "@b1"}
	db := host.Link{Component: "db", Tip: f.tip("b2/db"), Ref: "b2/db", Owner: "@b1"}
	o := f.car("db", "b2/db", main, db.Tip, api)
	assert.Equal(t, host.Conflicted, o.Result)
	assert.Equal(t, []string{"shared"}, o.Files)
	assert.Empty(t, o.Culprit, "db's own merge")
	o = f.car("web", "b3/web", main, f.tip("b3/web"), api, db)
	assert.Equal(t, host.Conflicted, o.Result)
	assert.Equal(t, "db", o.Culprit, "not web's fault")

	approved := f.tip("b3/web")
	f.commit("b3/web", "b3/web", map[string]string{"web": "more"}, "pushed after approval")
	o = f.car("web", "b3/web", main, approved)
	assert.Equal(t, host.Stale, o.Result, "the job says what the branch holds; the core what that means")
	assert.Equal(t, f.tip("b3/web"), o.Found)
}

// A check that fails, then passes on the same tree, is flaky: the tree
// passed, and the outcome says which check.
func TestFlakyCheckIsRetriedOnTheSameTree(t *testing.T) {
	f := newFixture(t, true, func(o *Options) { o.Env[0] = "HELPER=flaky" })
	f.tries = 2
	f.commit("b1/api", "main", map[string]string{"api": "api"}, "api")
	o := f.check("api", "b1/api")
	require.Equal(t, host.Passed, o.Result, "%+v", o)
	assert.Equal(t, []string{"gitjob.test"}, o.Flaky)
	assert.Equal(t, 2, f.checked())
	assert.FileExists(t, filepath.Join(f.dir, "logs", "api-1.log"), "the failure's log is kept")

	// Without retries the same flake fails.
	g := newFixture(t, true, func(o *Options) { o.Env[0] = "HELPER=flaky" })
	g.commit("b1/api", "main", map[string]string{"api": "api"}, "api")
	assert.Equal(t, host.Failed, g.check("api", "b1/api").Result)

	// A real failure fails every try.
	h := newFixture(t, true, nil)
	h.tries = 3
	h.commit("b1/api", "main", map[string]string{"api": "BUG"}, "api")
	assert.Equal(t, host.Failed, h.check("api", "b1/api").Result)
	assert.Equal(t, 3, h.checked())
}

// host.prune deletes a landed builder's branch, unless it moved on.
func TestPrune(t *testing.T) {
	f := newFixture(t, true, nil)
	f.commit("b1/api", "main", map[string]string{"api": "api"}, "api")
	main := f.tip("main")
	api := f.check("api", "b1/api")
	j := f.job(host.Land, "api", "b1/api", nil)
	j.Base, j.Commit, j.Tip, j.Tree, j.Prune = main, api.Commit, api.Tip, api.Tree, true
	l := f.runner.Run(ctx, j)
	require.Equal(t, host.Landed, l.Result)
	assert.True(t, l.Pruned)
	assert.Empty(t, f.tipOrEmpty("b1/api"))

	// Without prune the branch stays.
	f.commit("b2/db", "main", map[string]string{"db": "db"}, "db")
	main = f.tip("main")
	db := f.check("db", "b2/db")
	j = f.job(host.Land, "db", "b2/db", nil)
	j.Base, j.Commit, j.Tip, j.Tree = main, db.Commit, db.Tip, db.Tree
	l = f.runner.Run(ctx, j)
	require.Equal(t, host.Landed, l.Result)
	assert.False(t, l.Pruned)
	assert.NotEmpty(t, f.tipOrEmpty("b2/db"))
}

// A branch pushed to after approval does not land: neither what was
// approved (stale) nor what it holds now (never checked nor reviewed).
func TestLandRefusesABranchMovedAfterApproval(t *testing.T) {
	f := newFixture(t, true, nil)
	f.commit("b1/api", "main", map[string]string{"api": "api"}, "api")
	main := f.tip("main")
	api := f.check("api", "b1/api")
	f.commit("b1/api", "b1/api", map[string]string{"api2": "more"}, "more work")
	j := f.job(host.Land, "api", "b1/api", nil)
	j.Base, j.Commit, j.Tip, j.Tree = main, api.Commit, api.Tip, api.Tree
	l := f.runner.Run(ctx, j)
	assert.Equal(t, host.Stale, l.Result, "%+v", l)
	assert.Equal(t, f.tip("b1/api"), l.Found, "what the branch holds now: the core says what it means")
	assert.Equal(t, main, f.tip("main"))
}

func TestLandWaitsForALockedOrDirtyRepository(t *testing.T) {
	f := newFixture(t, false, nil)
	f.commit("b1/api", "main", map[string]string{"api.txt": "api\n"}, "api")
	o := f.check("api", "b1/api")
	require.Equal(t, host.Passed, o.Result)
	main := f.tip("main")

	lock := filepath.Join(f.repo.GitDir(), "refs", "heads", "main.lock")
	require.NoError(t, os.WriteFile(lock, nil, 0o644))
	l := f.land("api", "b1/api", main, o.Commit)
	assert.Equal(t, host.Retry, l.Result)
	assert.Contains(t, l.Line, "the repository is locked by another git process")
	assert.NotContains(t, l.Line, "\n")
	require.NoError(t, os.Remove(lock))

	// main is checked out in the repository itself, with a change.
	require.NoError(t, os.WriteFile(filepath.Join(f.repo.Dir(), "README"), []byte("local\n"), 0o644))
	f.git("add", "README")
	l = f.land("api", "b1/api", main, o.Commit)
	assert.Equal(t, host.Retry, l.Result)
	assert.Contains(t, l.Line, "main is checked out at "+f.repo.Dir()+" with uncommitted changes (A  README); commit or stash them")
	assert.Equal(t, main, f.tip("main"))
	f.git("reset", "--quiet", "--hard")

	// Clean: it lands, and the checkout follows.
	l = f.land("api", "b1/api", main, o.Commit)
	require.Equal(t, host.Landed, l.Result, "%+v", l)
	data, err := os.ReadFile(filepath.Join(f.repo.Dir(), "api.txt"))
	require.NoError(t, err)
	assert.Equal(t, "api\n", string(data))
	assert.Empty(t, f.git("status", "--porcelain"))
}

// host.logs and host.work are relative to the configuration file, and so
// often relative to where the host runs: they must mean the same to git
// (which runs in the repository) and to the checks (in a worktree).
func TestRelativeDirectories(t *testing.T) {
	f := newFixture(t, true, nil)
	wd, err := os.Getwd()
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.Chdir(wd) })
	require.NoError(t, os.Chdir(f.dir))
	r, err := New(Options{Repo: f.repo, Target: "main", Timeout: time.Minute, Checks: [][]string{{"true"}},
		Logs: "rel/logs", Work: "rel/work"})
	require.NoError(t, err)
	f.commit("b1/api", "main", map[string]string{"a": "a"}, "a")
	o := r.Run(ctx, host.Job{Run: 1, Kind: host.Check, Component: "api", Ref: "b1/api"})
	require.Equal(t, host.Passed, o.Result, "%+v", o)
	assert.Equal(t, filepath.Join(f.dir, "rel", "logs", "api-1.log"), o.Log)
	assert.DirExists(t, filepath.Join(f.dir, "rel", "work", "slot-1"))
}

// Slots are made on first use; eight checks starting at once on a new
// host make eight at once, which git cannot do concurrently ("failed to
// read worktrees/slot-5/commondir"): each waited out a retry.
func TestSlotsMadeAtOnce(t *testing.T) {
	f := newFixture(t, true, nil)
	const n = 8
	jobs := make([]host.Job, n)
	for i := range jobs {
		ref := fmt.Sprintf("b%d/c%d", i, i)
		f.commit(ref, "main", map[string]string{fmt.Sprintf("c%d", i): "x"}, "work")
		jobs[i] = f.job(host.Check, fmt.Sprintf("c%d", i), ref, nil)
	}
	out := make(chan host.Outcome, n)
	for _, j := range jobs {
		go func() { out <- f.runner.Run(ctx, j) }()
	}
	for range n {
		o := <-out
		assert.Equal(t, host.Passed, o.Result, "%+v", o)
	}
}

// A check that fails without a word is named whole in the verdict, with
// its exit status: "sh: exited with status 1" would say nothing.
func TestASilentFailureNamesItsCommand(t *testing.T) {
	f := newFixture(t, true, func(o *Options) { o.Checks = [][]string{{"sh", "-c", "test -f README"}} })
	f.commit("b1/api", "main", map[string]string{"api.txt": "api\n"}, "api")
	o := f.check("api", "b1/api")
	require.Equal(t, host.Failed, o.Result)
	assert.Equal(t, "sh -c 'test -f README': exited with status 1", o.Line)
}

// Right before the target moves, the host asks whether it may still land
// (foreman host: is its id still in roles.merger?). Without the question
// it lands; told no, it lands nothing and says why, to try again.
func TestALandingAsksFirst(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		f := newFixture(t, true, func(o *Options) {
			if refuse {
				o.MayLand = func() error { return errors.New("roles.merger: does not list the host's id @x") }
			}
		})
		f.commit("b1/api", "main", map[string]string{"api.txt": "api\n"}, "api")
		before := f.tip("main")
		o := f.check("api", "b1/api")
		require.Equal(t, host.Passed, o.Result)
		o = f.land("api", "b1/api", before, o.Commit)
		if !refuse {
			assert.Equal(t, host.Landed, o.Result)
			assert.NotEqual(t, before, f.tip("main"))
			continue
		}
		assert.Equal(t, host.Retry, o.Result)
		assert.Equal(t, "roles.merger: does not list the host's id @x", o.Line)
		assert.Equal(t, before, f.tip("main"), "nothing landed")
	}
}

// Two branches that edit the same line overlap, in that file only; one
// that edits another file does not; a file both edited without a conflict
// is no overlap; nothing is merged again for refs that did not move.
func TestScanFindsOverlapsBetweenWorkInProgress(t *testing.T) {
	f := newFixture(t, true, nil)
	f.commit("main", "main", map[string]string{"routes.go": "a\nb\nc\n", "shared.md": "x\n\n\n\n\ny\n"}, "base")
	f.commit("b1/api", "main", map[string]string{"routes.go": "a\nAPI\nc\n", "shared.md": "x api\n\n\n\n\ny\n", "api.go": "api"}, "api")
	f.commit("b2/web", "main", map[string]string{"routes.go": "a\nWEB\nc\n", "shared.md": "x\n\n\n\n\ny web\n", "web.go": "web"}, "web")
	f.commit("b3/db", "main", map[string]string{"db.go": "db"}, "db")
	j := f.job(host.Scan, "web", "b2/web", nil)
	j.Others = []host.Link{{Component: "api", Ref: "b1/api"}, {Component: "db", Ref: "b3/db"}, {Component: "gone", Ref: "b9/gone"}}
	o := f.runner.Run(ctx, j)
	require.Equal(t, host.Scanned, o.Result, "%+v", o)
	assert.Equal(t, []host.Overlap{{With: "api", Files: []string{"routes.go"}}}, o.Overlaps)

	merges := len(f.runner.merged)
	o = f.runner.Run(ctx, j)
	assert.Equal(t, []host.Overlap{{With: "api", Files: []string{"routes.go"}}}, o.Overlaps)
	assert.Equal(t, merges, len(f.runner.merged), "no ref moved: nothing merged again")

	// A change of main alone is no overlap: api and web both branched
	// before it.
	f.commit("main", "main", map[string]string{"db.go": "main's db"}, "main moves")
	j = f.job(host.Scan, "db", "b3/db", nil)
	j.Others = []host.Link{{Component: "web", Ref: "b2/web"}}
	assert.Empty(t, f.runner.Run(ctx, j).Overlaps)
}

// A departed builder's work is kept as refs/foreman/handoff/<c>/<n>, n
// counting on from the last pin, even after the branch is pushed over.
func TestPinKeepsTheDepartedBuildersWork(t *testing.T) {
	f := newFixture(t, true, nil)
	work := f.commit("b1/api", "main", map[string]string{"api.go": "half"}, "half of api")
	o := f.runner.Run(ctx, f.job(host.Pin, "api", "b1/api", nil))
	require.Equal(t, host.Pinned, o.Result, "%+v", o)
	assert.Equal(t, host.Outcome{Run: o.Run, Result: host.Pinned, Commit: work, N: 1}, o)
	f.commit("b1/api", "main", map[string]string{}, "force-pushed empty")
	assert.Equal(t, work, f.tipOf("refs/foreman/handoff/api/1"), "the pin holds what the branch lost")

	again := f.commit("b2/api", "main", map[string]string{"api.go": "more"}, "more of api")
	o = f.runner.Run(ctx, f.job(host.Pin, "api", "b2/api", nil))
	assert.Equal(t, 2, o.N)
	assert.Equal(t, again, f.tipOf("refs/foreman/handoff/api/2"))
	assert.Equal(t, host.Invalid, f.runner.Run(ctx, f.job(host.Pin, "api", "b9/none", nil)).Result, "nothing pushed: nothing pinned")
}

// A check's process group is killed by a later host only if it ran in this
// boot of this machine: a standby on another machine sharing the work
// directory must not kill whatever has that number there.
func TestPruneKillsOnlyThisMachinesGroups(t *testing.T) {
	pgid, ok := ownGroup(pgidRecord(4242))
	assert.True(t, ok)
	assert.Equal(t, 4242, pgid)
	_, ok = ownGroup("4242 another-boot-of-another-machine")
	assert.Equal(t, bootID() == "", ok, "another machine's group is left alone")
	pgid, ok = ownGroup("4242")
	assert.True(t, ok, "an older host's record, written on this machine")
	assert.Equal(t, 4242, pgid)
	for _, bad := range []string{"", "1", "x", "-5"} {
		_, ok = ownGroup(bad)
		assert.False(t, ok, bad)
	}
}

// A READY whose merge with the target comes out as a tree that passed
// before is not checked again: the outcome says so (Reused); once the
// target moved, the merge is another tree, and it is checked.
func TestACheckOfATreeThatPassedIsNotRunAgain(t *testing.T) {
	f := newFixture(t, true, nil)
	f.commit("b1/api", "main", map[string]string{"api.txt": "api\n"}, "api")
	first := f.check("api", "b1/api")
	require.Equal(t, host.Passed, first.Result)
	require.Equal(t, 1, f.checked())

	j := f.job(host.Check, "api", "b1/api", nil)
	j.Passed = f.passed
	o := f.runner.Run(ctx, j)
	require.Equal(t, host.Passed, o.Result, "%+v", o)
	assert.True(t, o.Reused)
	assert.Equal(t, first.Tree, o.Tree)
	assert.Equal(t, first.Commit, o.Commit, "the same merge, made again")
	assert.Equal(t, 1, f.checked(), "no check ran")

	f.commit("main", "main", map[string]string{"db.txt": "db\n"}, "db landed")
	j = f.job(host.Check, "api", "b1/api", nil)
	j.Passed = f.passed
	o = f.runner.Run(ctx, j)
	require.Equal(t, host.Passed, o.Result)
	assert.False(t, o.Reused)
	assert.Equal(t, 2, f.checked(), "another tree: checked")
	f.noWorktreesLeft()
}
