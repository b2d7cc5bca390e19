package checks

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// At start, each check's program is resolved as a check will run it; the
// first that would not start is one line naming the key, the program and
// what to do.
func TestProgramsAreCheckedAtStart(t *testing.T) {
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools") // in the sandbox's sight (host.sandbox_paths.ro)
	hidden := filepath.Join(dir, "home") // out of it
	require.NoError(t, os.MkdirAll(tools, 0o755))
	require.NoError(t, os.MkdirAll(hidden, 0o755))
	write := func(path, text string, mode os.FileMode) string {
		require.NoError(t, os.WriteFile(path, []byte(text), mode))
		return path
	}
	good := write(filepath.Join(tools, "lint"), "#!/bin/sh\nexit 0\n", 0o755)
	plain := write(filepath.Join(tools, "plain"), "#!/bin/sh\nexit 0\n", 0o644)
	away := write(filepath.Join(hidden, "gate"), "#!/bin/sh\nexit 0\n", 0o755)
	noShell := write(filepath.Join(tools, "odd"), "#!/no/such/shell\n", 0o755)
	linked := filepath.Join(tools, "linked")
	require.NoError(t, os.Symlink(away, linked))
	tree := map[string]string{"check.sh": "100755", "ci/plain.sh": "100644", "ci": "040000"}
	base := Programs{Env: []string{"PATH=" + tools + ":/usr/bin:/bin"}, Runnable: []string{"/usr", "/bin", tools},
		Target: "main", InTree: func(file string) (string, error) { return tree[file], nil }}
	for _, tc := range []struct {
		name  string
		argv  []string
		plain bool // unconfined: Runnable nil
		want  string
	}{
		{name: "in the tree", argv: []string{"./check.sh", "-v"}},
		{name: "on the PATH", argv: []string{"lint"}},
		{name: "a system program", argv: []string{"sh", "-c", "true"}},
		{name: "the host's, by path", argv: []string{good}},
		{name: "out of sight, unconfined", argv: []string{away}, plain: true},
		{name: "not executable in the tree", argv: []string{"./ci/plain.sh"},
			want: "host.checks[0]: ./ci/plain.sh is not executable in main's tree: git update-index --chmod=+x ci/plain.sh, commit it to main, then start again"},
		{name: "not in the tree", argv: []string{"scripts/check"},
			want: "host.checks[0]: scripts/check is not in main's tree, where checks find it (they run in a worktree of what would land): commit it to main, or change host.checks"},
		{name: "a directory in the tree", argv: []string{"./ci"},
			want: "host.checks[0]: ./ci is not a file in main's tree (mode 040000): change host.checks"},
		{name: "not on the PATH", argv: []string{"golangci-lint", "run"},
			want: "host.checks[0]: golangci-lint is not on the checks' PATH (PATH=" + tools + ":/usr/bin:/bin): install it, or name it by its absolute path"},
		{name: "not executable on the host", argv: []string{plain},
			want: "host.checks[0]: " + plain + " is not executable: chmod +x " + plain},
		{name: "missing on the host", argv: []string{filepath.Join(tools, "gone")},
			want: "host.checks[0]: " + filepath.Join(tools, "gone") + " is not on this machine: install it, or change host.checks"},
		{name: "out of the sandbox's sight", argv: []string{away},
			want: "host.checks[0]: " + away + " is out of the checks' sandbox, which holds the system directories, the worktree and host.sandbox_paths: add " + hidden + " to host.sandbox_paths.ro"},
		{name: "a link out of its sight", argv: []string{"linked"},
			want: "host.checks[0]: " + linked + " (" + away + ") is out of the checks' sandbox, which holds the system directories, the worktree and host.sandbox_paths: add " + hidden + " to host.sandbox_paths.ro"},
		{name: "its interpreter missing", argv: []string{"odd"},
			want: "host.checks[0]: /no/such/shell (the interpreter " + noShell + " names on its first line) is not on this machine: install it, or change host.checks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := base
			p.Commands = [][]string{tc.argv}
			if tc.plain {
				p.Runnable = nil
			}
			err := p.Check()
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
	// The key names which check: the first that would not start.
	p := base
	p.Commands = [][]string{{"./check.sh"}, {"lint"}, {plain}}
	require.EqualError(t, p.Check(), "host.checks[2]: "+plain+" is not executable: chmod +x "+plain)
	// Without a repository (a worker), the worktree's programs are not its
	// to look up.
	p = base
	p.Commands, p.InTree = [][]string{{"./nowhere.sh"}}, nil
	assert.NoError(t, p.Check())
}
