package gitjob

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/host/checks"
)

// commitFile commits one file with its mode (gitrepo.ModeFile or
// ModeExecutable) on top of parent and points branch at it, with git's
// own index, as a person would with git update-index --chmod.
func (f *fixture) commitFile(branch, parent, name, content, mode string) string {
	f.t.Helper()
	if len(parent) != 40 {
		parent = f.tip(parent)
	}
	index := filepath.Join(f.t.TempDir(), "index")
	git := func(stdin string, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = f.repo.GitDir()
		cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+index, "GIT_AUTHOR_NAME=B", "GIT_AUTHOR_EMAIL=b@example.com",
			"GIT_COMMITTER_NAME=B", "GIT_COMMITTER_EMAIL=b@example.com")
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.Output()
		require.NoError(f.t, err, "git %v", args)
		return strings.TrimSpace(string(out))
	}
	git("", "read-tree", parent)
	blob := git(content, "hash-object", "-w", "--stdin")
	git("", "update-index", "--add", "--cacheinfo", mode+","+blob+","+name)
	tree := git("", "write-tree")
	oid := git("", "commit-tree", tree, "-p", parent, "-m", "set "+name)
	require.NoError(f.t, f.repo.UpdateRef(ctx, "refs/heads/"+branch, oid, f.tipOrEmpty(branch), "test"))
	return oid
}

// A check that never starts says why, with its program, whether that is
// a file of the worktree, and how the target holds it: the facts the core
// judges a host-fault by. Run with the real sandbox where there is one
// (as foreman host runs its checks), and git.
func TestACheckThatNeverStartsSaysWhy(t *testing.T) {
	script := "#!/bin/sh\necho checked\n"
	t.Run("not executable on the target", func(t *testing.T) {
		f := newFixture(t, false, func(o *Options) { o.Checks = [][]string{{"./check.sh"}} })
		f.commitFile("main", "main", "check.sh", script, gitrepo.ModeFile)
		f.commit("b1/api", "main", map[string]string{"api.txt": "api\n"}, "api")
		o := f.check("api", "b1/api")
		assert.Equal(t, host.Failed, o.Result, o.Line)
		assert.Equal(t, host.NotExecutable, o.NotRun, o.Line)
		assert.Equal(t, "./check.sh", o.Program)
		assert.True(t, o.InTree)
		assert.Equal(t, gitrepo.ModeFile, o.OnTarget, "the target holds it as it failed: not the builder's doing")
		assert.True(t, o.Lasting, "not run again: it would end the same")
	})
	t.Run("made not executable by the branch", func(t *testing.T) {
		f := newFixture(t, false, func(o *Options) { o.Checks = [][]string{{"./check.sh"}} })
		f.commitFile("main", "main", "check.sh", script, gitrepo.ModeExecutable)
		f.commitFile("b1/api", "main", "check.sh", script, gitrepo.ModeFile)
		o := f.check("api", "b1/api")
		assert.Equal(t, host.Failed, o.Result, o.Line)
		assert.Equal(t, host.NotExecutable, o.NotRun, o.Line)
		assert.Equal(t, gitrepo.ModeExecutable, o.OnTarget, "it runs on the target: the branch broke it")
		assert.True(t, o.Changed)
	})
	t.Run("deleted by nobody: missing from the target", func(t *testing.T) {
		f := newFixture(t, false, func(o *Options) { o.Checks = [][]string{{"scripts/check"}} })
		f.commit("b1/api", "main", map[string]string{"api.txt": "api\n"}, "api")
		o := f.check("api", "b1/api")
		assert.Equal(t, host.NotFound, o.NotRun, o.Line)
		assert.True(t, o.InTree)
		assert.Equal(t, "", o.OnTarget)
	})
	t.Run("the host's program", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "no-such-check")
		f := newFixture(t, false, func(o *Options) { o.Checks = [][]string{{missing}} })
		f.commit("b1/api", "main", map[string]string{"api.txt": "api\n"}, "api")
		o := f.check("api", "b1/api")
		assert.Equal(t, host.NotFound, o.NotRun, o.Line)
		assert.Equal(t, missing, o.Program)
		assert.False(t, o.InTree)
	})
	t.Run("its interpreter", func(t *testing.T) {
		f := newFixture(t, false, func(o *Options) { o.Checks = [][]string{{"./check.sh"}} })
		f.commitFile("main", "main", "check.sh", "#!/no/such/shell\necho checked\n", gitrepo.ModeExecutable)
		f.commit("b1/api", "main", map[string]string{"api.txt": "api\n"}, "api")
		o := f.check("api", "b1/api")
		assert.Equal(t, host.NotFound, o.NotRun, o.Line)
		assert.Equal(t, "./check.sh", o.Program, "the script stays the program")
		assert.Equal(t, "/no/such/shell", o.Interpreter, "the program is there; its interpreter is not")
		assert.True(t, o.InTree)
		assert.False(t, o.Changed, "the target holds it so: not the builder's doing")
	})
	t.Run("its interpreter, named by the branch", func(t *testing.T) {
		// A builder near ci-exhausted cannot make its failure the host's
		// by writing a first line nobody has: the script is the branch's.
		f := newFixture(t, false, func(o *Options) { o.Checks = [][]string{{"./check.sh"}} })
		f.commitFile("main", "main", "check.sh", script, gitrepo.ModeExecutable)
		f.commitFile("b1/api", "main", "check.sh", "#!/nonexistent/sh\necho checked\n", gitrepo.ModeExecutable)
		o := f.check("api", "b1/api")
		assert.Equal(t, host.NotFound, o.NotRun, o.Line)
		assert.Equal(t, "/nonexistent/sh", o.Interpreter)
		assert.True(t, o.Changed, "the branch changed the script")
	})
	t.Run("a check that ran and failed", func(t *testing.T) {
		f := newFixture(t, false, func(o *Options) { o.Checks = [][]string{{"./check.sh"}} })
		f.commitFile("main", "main", "check.sh", "#!/bin/sh\necho FAIL: no\nexit 1\n", gitrepo.ModeExecutable)
		f.commit("b1/api", "main", map[string]string{"api.txt": "api\n"}, "api")
		o := f.check("api", "b1/api")
		assert.Equal(t, host.Failed, o.Result)
		assert.Empty(t, o.NotRun, "it started: whatever it said is the tree's")
	})
}

// The core's names for why a check never started are package checks'.
func TestNotRunNamesAgree(t *testing.T) {
	assert.Equal(t, []string{checks.NotFound, checks.NotExecutable, checks.SandboxFailed},
		[]string{host.NotFound, host.NotExecutable, host.SandboxFailed})
}

// The files that define the checks are the repository's that host.checks
// names: a program of the worktree, a file an argument names, a Makefile
// for make; never the host's own programs, options or patterns.
func TestCheckFiles(t *testing.T) {
	got := checkFiles([][]string{
		{"./check.sh", "--fast"},
		{"sh", "-c", "./ci/a.sh && test -f ci/b.sh; go test ./..."},
		{"make", "-f", "ci.mk", "test"},
		{"/usr/bin/env", "FOO=1", "scripts/run", "*.go"},
	})
	for _, f := range []string{"check.sh", "ci/a.sh", "ci/b.sh", "ci.mk", "Makefile", "scripts/run"} {
		assert.True(t, got[f], "%s defines the checks", f)
	}
	for _, f := range []string{"sh", "go", "make", "/usr/bin/env", "--fast", "-c", "./...", "FOO=1", "*.go"} {
		assert.False(t, got[f], "%s is not a file of the repository's checks", f)
	}
}

// A car whose merge changes a file that defines the checks says so, for
// its receipt; one that does not, says nothing.
func TestACarSaysWhenItChangesTheChecks(t *testing.T) {
	f := newFixture(t, false, func(o *Options) { o.Checks = [][]string{{"./check.sh"}} })
	f.commitFile("main", "main", "check.sh", "#!/bin/sh\nexit 0\n", gitrepo.ModeFile)
	base := f.tip("main")
	fix := f.commitFile("op/fix", "main", "check.sh", "#!/bin/sh\nexit 0\n", gitrepo.ModeExecutable)
	o := f.car("fix", "op/fix", base, fix)
	require.Equal(t, host.Passed, o.Result, o.Line)
	require.NotEmpty(t, o.Chain)
	assert.Equal(t, []string{"check.sh"}, o.Chain[len(o.Chain)-1].ChecksChanged, "chmod +x is a change of the checks")
	assert.Equal(t, o.Commit, o.Chain[len(o.Chain)-1].Commit)

	api := f.commit("b1/api", fix, map[string]string{"api.txt": "api\n"}, "api")
	o = f.car("api", "b1/api", base, api, host.Link{Component: "fix", Tip: fix, Ref: "op/fix", Owner: "@op"})
	require.Equal(t, host.Passed, o.Result, o.Line)
	require.Len(t, o.Chain, 2)
	assert.Equal(t, []string{"check.sh"}, o.Chain[0].ChecksChanged, "the car ahead's merge")
	assert.Empty(t, o.Chain[1].ChecksChanged, "api's own merge changes no check")
}
