// Package gittest makes the repositories tests need, with git's CLI: a
// repository with a first commit, a commit of a file, a commit of a blob
// git cannot make smaller.
package gittest

import (
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Git runs git in dir, as an author of the test's, and fails the test if
// git fails; it returns what git said.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return string(out)
}

// Init makes dir a repository on main (dir made if need be), with no
// commit yet.
func Init(t testing.TB, dir string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	Git(t, dir, "init", "-q", "-b", "main")
	return dir
}

// Commit writes data to name in the repository at dir and commits it.
func Commit(t testing.TB, dir, name string, data []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	Git(t, dir, "add", "--", name)
	Git(t, dir, "commit", "-qm", name)
}

// CommitRandom commits size random bytes as name (random: git cannot
// make them smaller, so they take size on any disk the repository is
// cloned to), and returns them.
func CommitRandom(t testing.TB, dir, name string, size int) []byte {
	t.Helper()
	data := make([]byte, size)
	_, _ = rand.Read(data)
	Commit(t, dir, name, data)
	return data
}
