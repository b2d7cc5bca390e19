package gitrepo

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var ctx = context.Background()

func newRepo(t *testing.T, bare bool) *Repo {
	t.Helper()
	r, err := Init(ctx, filepath.Join(t.TempDir(), "repo"), "main", bare)
	require.NoError(t, err)
	return r
}

// commit adds a commit with files on top of parent and points branch (a
// short name, "" for none) at it.
func commit(t *testing.T, r *Repo, branch, parent string, files map[string]string) string {
	t.Helper()
	oid, err := r.CommitFiles(ctx, parent, files, "change "+strings.Join(keys(files), " "), Author{"Bob", "bob@example.com"})
	require.NoError(t, err)
	if branch != "" {
		_, err := r.git(ctx, "update-ref", "refs/heads/"+branch, oid)
		require.NoError(t, err)
	}
	return oid
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func tip(t *testing.T, r *Repo, branch string) string {
	t.Helper()
	oid, err := r.RevParse(ctx, "refs/heads/"+branch)
	require.NoError(t, err)
	return oid
}

func TestParseRefRefusesWhatIsNotAPlainName(t *testing.T) {
	for ref, why := range map[string]string{
		"":                       "no branch named",
		"-x":                     "starts with -, which git would read as an option",
		"--upload-pack=evil":     "starts with -",
		"main..feature":          "holds .., a range",
		"a b":                    "holds a space",
		"a\tb":                   "holds a control character",
		"a\x1bb":                 "holds a control character",
		"a rm -rf":               "holds a space",
		"a;b":                    `holds ';'`,
		"$(id)":                  `holds '$'`,
		"`id`":                   "holds '`'",
		"a|b":                    `holds '|'`,
		"a&b":                    `holds '&'`,
		"a>b":                    `holds '>'`,
		"HEAD~1":                 `holds '~'`,
		"main^":                  `holds '^'`,
		"main@{1}":               `holds '@'`,
		"x:y":                    `holds ':'`,
		"a*":                     `holds '*'`,
		"caf\u00e9":              "outside ASCII",
		"refs/tags/v1":           "is not a branch (refs/heads/...) or a full commit id",
		"refs/heads/":            "no branch named",
		strings.Repeat("a", 201): "more than 200",
	} {
		_, err := ParseRef(ref)
		var bad *BadRef
		require.ErrorAs(t, err, &bad, "%q", ref)
		assert.Contains(t, bad.Why, why, "%q", ref)
		assert.NotContains(t, bad.Why, "\n")
	}
	for ref, want := range map[string]Target{
		"feature/login":          {Branch: "refs/heads/feature/login"},
		"refs/heads/b1/a":        {Branch: "refs/heads/b1/a"},
		"v1.2+fix_3":             {Branch: "refs/heads/v1.2+fix_3"},
		strings.Repeat("ab", 20): {Commit: strings.Repeat("ab", 20)},
		strings.Repeat("AB", 20): {Branch: "refs/heads/" + strings.Repeat("AB", 20)},
	} {
		got, err := ParseRef(ref)
		require.NoError(t, err, ref)
		assert.Equal(t, want, got, ref)
	}
}

func TestCheckRefAsksGit(t *testing.T) {
	r := newRepo(t, true)
	for _, name := range []string{"a/.b", "x.lock", "a//b", "a/", "a.", ".a"} {
		target, err := ParseRef(name)
		require.NoError(t, err, name)
		err = r.CheckRef(ctx, target)
		var bad *BadRef
		require.ErrorAs(t, err, &bad, name)
		assert.Contains(t, bad.Why, "not a valid branch name (git check-ref-format)")
	}
	target, _ := ParseRef("b1/api")
	assert.NoError(t, r.CheckRef(ctx, target))
}

func TestResolve(t *testing.T) {
	r := newRepo(t, true)
	main := tip(t, r, "main")
	c := commit(t, r, "b1/api", main, map[string]string{"api.go": "package api\n"})
	got, err := r.Resolve(ctx, Target{Branch: "refs/heads/b1/api"})
	require.NoError(t, err)
	assert.Equal(t, c, got)
	got, err = r.Resolve(ctx, Target{Commit: c})
	require.NoError(t, err)
	assert.Equal(t, c, got)
	got, err = r.Resolve(ctx, Target{Branch: "refs/heads/nope"})
	require.NoError(t, err)
	assert.Empty(t, got)
	got, err = r.Resolve(ctx, Target{Commit: strings.Repeat("0", 40)})
	require.NoError(t, err)
	assert.Empty(t, got)
	tree, err := r.TreeOf(ctx, c)
	require.NoError(t, err)
	got, err = r.Resolve(ctx, Target{Commit: tree})
	require.NoError(t, err)
	assert.Empty(t, got, "a tree is not a commit")
}

func TestOpenRefusesWhatIsNotARepository(t *testing.T) {
	_, err := Open(ctx, filepath.Join(t.TempDir(), "nope"))
	assert.ErrorContains(t, err, "no such directory")
	_, err = Open(ctx, t.TempDir())
	assert.ErrorContains(t, err, "not a git repository")
}

func TestMergeTreeTouchesNoWorkingTree(t *testing.T) {
	r := newRepo(t, false)
	main := tip(t, r, "main")
	base := commit(t, r, "main", main, map[string]string{"shared.txt": "one\n"})
	_, err := r.git(ctx, "reset", "--quiet", "--hard", base)
	require.NoError(t, err)
	a := commit(t, r, "a", base, map[string]string{"a.txt": "a\n"})
	b := commit(t, r, "b", base, map[string]string{"b.txt": "b\n"})
	c := commit(t, r, "c", base, map[string]string{"shared.txt": "three\n"})
	d := commit(t, r, "d", base, map[string]string{"shared.txt": "four\n", "x.txt": "x"})
	// The checkout is dirty: merging must neither need nor change it.
	require.NoError(t, os.WriteFile(filepath.Join(r.Dir(), "shared.txt"), []byte("local edit\n"), 0o644))

	m, err := r.MergeTree(ctx, a, b)
	require.NoError(t, err)
	assert.True(t, m.Clean())
	merged, err := r.CommitMerge(ctx, m.Tree, "merge b into a", a, b)
	require.NoError(t, err)
	out, err := r.git(ctx, "ls-tree", "--name-only", merged)
	require.NoError(t, err)
	assert.Equal(t, "a.txt\nb.txt\nshared.txt\n", out)

	m, err = r.MergeTree(ctx, c, d)
	require.NoError(t, err)
	assert.Equal(t, []string{"shared.txt"}, m.Conflicts)

	data, err := os.ReadFile(filepath.Join(r.Dir(), "shared.txt"))
	require.NoError(t, err)
	assert.Equal(t, "local edit\n", string(data))
	dirty, _, err := r.Dirty(ctx, r.Dir())
	require.NoError(t, err)
	assert.True(t, dirty)
	ok, err := r.IsAncestor(ctx, base, merged)
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = r.IsAncestor(ctx, c, merged)
	require.NoError(t, err)
	assert.False(t, ok)
}

func TestUpdateRefIsACompareAndSwap(t *testing.T) {
	r := newRepo(t, true)
	main := tip(t, r, "main")
	next := commit(t, r, "", main, map[string]string{"a": "a"})
	other := commit(t, r, "", main, map[string]string{"b": "b"})

	require.NoError(t, r.UpdateRef(ctx, "refs/heads/main", next, main, "land a"))
	assert.Equal(t, next, tip(t, r, "main"))
	assert.ErrorIs(t, r.UpdateRef(ctx, "refs/heads/main", other, main, "land b"), ErrMoved, "main is no longer where b was checked")
	assert.Equal(t, next, tip(t, r, "main"))
	assert.ErrorIs(t, r.UpdateRef(ctx, "refs/heads/gone", other, main, "x"), ErrMoved)

	lock := filepath.Join(r.GitDir(), "refs", "heads", "main.lock")
	require.NoError(t, os.WriteFile(lock, nil, 0o644))
	err := r.UpdateRef(ctx, "refs/heads/main", other, next, "land b")
	assert.True(t, IsLocked(err), "%v", err)
	assert.NotErrorIs(t, err, ErrMoved)
	assert.NotContains(t, err.Error(), "\n")
	require.NoError(t, os.Remove(lock))
	require.NoError(t, r.UpdateRef(ctx, "refs/heads/main", other, next, "land b"))
}

// The branch repeats a change main already has (cherry-picked), and main
// changed the same line again: merging conflicts, rebasing drops the
// repeated commit and is clean.
func TestRebaseDropsWhatTheTargetHas(t *testing.T) {
	r := newRepo(t, true)
	root := tip(t, r, "main")
	base := commit(t, r, "main", root, map[string]string{"Makefile": "test:\n\tgo tset\n"})
	fix := map[string]string{"Makefile": "test:\n\tgo test\n"}
	onMain := commit(t, r, "main", base, fix)
	mainTip := commit(t, r, "main", onMain, map[string]string{"Makefile": "test:\n\tgo test -race\n"})
	picked, err := r.CommitFiles(ctx, base, fix, "the same fix, picked by another builder", Author{"Bob", "bob@example.com"})
	require.NoError(t, err)
	branch := commit(t, r, "", picked, map[string]string{"cart.go": "package cart\n"})

	m, err := r.MergeTree(ctx, mainTip, branch)
	require.NoError(t, err)
	assert.Equal(t, []string{"Makefile"}, m.Conflicts)

	wt := filepath.Join(t.TempDir(), "wt")
	require.NoError(t, r.AddWorktree(ctx, wt, branch))
	head, conflict, err := r.Rebase(ctx, wt, mainTip)
	require.NoError(t, err)
	require.False(t, conflict)
	ok, err := r.IsAncestor(ctx, mainTip, head)
	require.NoError(t, err)
	assert.True(t, ok)
	out, err := r.git(ctx, "log", "--format=%an %cn %s", mainTip+".."+head)
	require.NoError(t, err)
	assert.Equal(t, "Bob foreman host change cart.go\n", out, "one commit left; the author kept")
	require.NoError(t, r.RemoveWorktree(ctx, wt))
	assert.NoDirExists(t, wt)

	// A real conflict stops the rebase, which is aborted.
	clash := commit(t, r, "", base, map[string]string{"Makefile": "test:\n\tmake check\n"})
	wt2 := filepath.Join(t.TempDir(), "wt2")
	require.NoError(t, r.AddWorktree(ctx, wt2, clash))
	_, conflict, err = r.Rebase(ctx, wt2, mainTip)
	require.NoError(t, err)
	assert.True(t, conflict)
	require.NoError(t, r.RemoveWorktree(ctx, wt2))
}

func TestCheckoutsAndSync(t *testing.T) {
	r := newRepo(t, false)
	main := tip(t, r, "main")
	dirs, err := r.Checkouts(ctx, "refs/heads/main")
	require.NoError(t, err)
	assert.Equal(t, []string{r.Dir()}, dirs)
	next := commit(t, r, "", main, map[string]string{"a.txt": "a\n"})
	require.NoError(t, r.UpdateRef(ctx, "refs/heads/main", next, main, "land"))
	require.NoError(t, r.SyncCheckout(ctx, r.Dir(), main, next))
	data, err := os.ReadFile(filepath.Join(r.Dir(), "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "a\n", string(data))
	dirty, _, err := r.Dirty(ctx, r.Dir())
	require.NoError(t, err)
	assert.False(t, dirty)

	bare := newRepo(t, true)
	dirs, err = bare.Checkouts(ctx, "refs/heads/main")
	require.NoError(t, err)
	assert.Empty(t, dirs, "a bare repository has nothing checked out")
}

func TestPruneWorktreesAfterACrash(t *testing.T) {
	r := newRepo(t, true)
	root := filepath.Join(t.TempDir(), "work")
	require.NoError(t, r.AddWorktree(ctx, filepath.Join(root, "run-1"), tip(t, r, "main")))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "run-2", "half"), 0o755)) // a worktree add cut short
	require.NoError(t, r.PruneWorktrees(ctx, root, nil))
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	assert.Empty(t, entries)
	out, err := r.git(ctx, "worktree", "list", "--porcelain")
	require.NoError(t, err)
	assert.NotContains(t, out, "run-1")
}

func TestOpenRefusesADirectoryInsideARepository(t *testing.T) {
	r := newRepo(t, false)
	sub := filepath.Join(r.Dir(), "sub")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	_, err := Open(ctx, sub)
	assert.ErrorContains(t, err, "not a git repository (it is inside "+r.Dir()+")")
	_, err = Open(ctx, r.Dir())
	assert.NoError(t, err)
}

func TestTheHostsRefUpdatesAreLogged(t *testing.T) {
	r := newRepo(t, true)
	main := tip(t, r, "main")
	next := commit(t, r, "", main, map[string]string{"a": "a"})
	require.NoError(t, r.UpdateRef(ctx, "refs/heads/main", next, main, "foreman host: land a"))
	ups, err := r.Reflog(ctx, "refs/heads/main")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(ups), 2, "a bare repository keeps a reflog of what the host moved")
	assert.Equal(t, RefUpdate{Commit: next, Reason: "foreman host: land a"}, ups[0])
}

func TestResetWorktreeIsAsGoodAsFresh(t *testing.T) {
	r := newRepo(t, true)
	main := tip(t, r, "main")
	a := commit(t, r, "", main, map[string]string{"a.txt": "a\n", "keep.txt": "from a\n"})
	b := commit(t, r, "", main, map[string]string{"b.txt": "b\n", "keep.txt": "from b\n"})
	dir := filepath.Join(t.TempDir(), "slot")
	require.NoError(t, r.AddWorktree(ctx, dir, a))
	// What a run may leave behind: a rebase stopped on a conflict, a
	// changed file, build output.
	_, err := r.gitIn(ctx, dir, "rebase", b)
	require.Error(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("changed\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "out"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "out", "bin"), []byte("x"), 0o644))

	require.NoError(t, r.ResetWorktree(ctx, dir, b))
	out, err := r.gitIn(ctx, dir, "status", "--porcelain", "--ignored")
	require.NoError(t, err)
	assert.Empty(t, out)
	head, err := r.gitIn(ctx, dir, "rev-parse", "HEAD")
	require.NoError(t, err)
	assert.Equal(t, b+"\n", head)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{".git", "b.txt", "keep.txt"}, names)
	data, _ := os.ReadFile(filepath.Join(dir, "keep.txt"))
	assert.Equal(t, "from b\n", string(data))
	_, err = os.Stat(filepath.Join(r.worktreeGitDir(ctx, dir), "rebase-merge"))
	assert.True(t, os.IsNotExist(err), "the stopped rebase was aborted")
}

// The same merge made twice, a second apart, by two calls, is one commit:
// a chain of merges checked by several jobs lands the commits checked.
func TestCommitMergeIsTheSameEveryTime(t *testing.T) {
	r := newRepo(t, true)
	main := tip(t, r, "main")
	a := commit(t, r, "a", main, map[string]string{"a.txt": "a\n"})
	b := commit(t, r, "b", main, map[string]string{"b.txt": "b\n"})
	m, err := r.MergeTree(ctx, a, b)
	require.NoError(t, err)
	first, err := r.CommitMerge(ctx, m.Tree, "merge b into a", a, b)
	require.NoError(t, err)
	time.Sleep(1100 * time.Millisecond) // a commit's date has a resolution of a second
	again, err := r.CommitMerge(ctx, m.Tree, "merge b into a", a, b)
	require.NoError(t, err)
	assert.Equal(t, first, again)
	other, err := r.CommitMerge(ctx, m.Tree, "merge a into b", b, a)
	require.NoError(t, err)
	assert.NotEqual(t, first, other, "parents and message still count")
}

// What a check may leave in place of its worktree's .git would steer the
// host's own git there: CheckWorktree knows the worktree git made.
func TestCheckWorktreeKnowsItsOwn(t *testing.T) {
	r := newRepo(t, false)
	main := tip(t, r, "main")
	other := newRepo(t, false)
	dir := filepath.Join(t.TempDir(), "slot-1")
	require.NoError(t, r.AddWorktree(ctx, dir, main))
	require.NoError(t, r.CheckWorktree(dir))
	dir2 := filepath.Join(t.TempDir(), "slot-2")
	require.NoError(t, r.AddWorktree(ctx, dir2, main))
	gitFile := filepath.Join(dir, ".git")
	orig, err := os.ReadFile(gitFile)
	require.NoError(t, err)
	second, err := os.ReadFile(filepath.Join(dir2, ".git"))
	require.NoError(t, err)
	for name, damage := range map[string]func(){
		"another repository": func() { require.NoError(t, os.WriteFile(gitFile, []byte("gitdir: "+other.GitDir()+"\n"), 0o644)) },
		"the main git dir":   func() { require.NoError(t, os.WriteFile(gitFile, []byte("gitdir: "+r.GitDir()+"\n"), 0o644)) },
		"another slot":       func() { require.NoError(t, os.WriteFile(gitFile, second, 0o644)) },
		"not a gitdir line":  func() { require.NoError(t, os.WriteFile(gitFile, []byte("[core]\n"), 0o644)) },
		"a directory": func() {
			require.NoError(t, os.Remove(gitFile))
			require.NoError(t, os.MkdirAll(filepath.Join(gitFile, "hooks"), 0o755))
		},
		"a symbolic link": func() {
			require.NoError(t, os.Remove(gitFile))
			require.NoError(t, os.Symlink(filepath.Join(r.GitDir(), "worktrees", "slot-1"), gitFile))
		},
		"gone": func() { require.NoError(t, os.Remove(gitFile)) },
		// Read, these would never end or never start.
		"a link to /dev/zero": func() {
			require.NoError(t, os.Remove(gitFile))
			require.NoError(t, os.Symlink("/dev/zero", gitFile))
		},
		"a fifo": func() {
			require.NoError(t, os.Remove(gitFile))
			require.NoError(t, syscall.Mkfifo(gitFile, 0o644))
		},
	} {
		damage()
		assert.Error(t, r.CheckWorktree(dir), name)
		require.NoError(t, os.RemoveAll(gitFile))
		require.NoError(t, os.WriteFile(gitFile, orig, 0o644))
		require.NoError(t, r.CheckWorktree(dir), "restored after %s", name)
	}
}

// A git worktree add stopped midway (its context cancelled) leaves the
// worktree locked as "initializing", which git worktree prune keeps:
// RemoveWorktree unlocks it, so no half-made worktree stays registered
// (a check cancelled while its slot was made left one).
func TestRemoveWorktreeOfAnAddStoppedMidway(t *testing.T) {
	r := newRepo(t, true)
	dir := filepath.Join(t.TempDir(), "slot-1")
	require.NoError(t, r.AddWorktree(ctx, dir, tip(t, r, "main")))
	_, err := r.git(ctx, "worktree", "lock", "--reason", "initializing", "--", dir)
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(filepath.Join(dir, ".git"))) // cut short before its .git was written
	require.NoError(t, r.RemoveWorktree(ctx, dir))
	out, err := r.git(ctx, "worktree", "list", "--porcelain")
	require.NoError(t, err)
	assert.NotContains(t, out, "slot-1")
}
