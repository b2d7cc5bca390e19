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
		assert.Equal(t, "/no/such/shell", o.Program, "the program is there; its interpreter is not")
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
