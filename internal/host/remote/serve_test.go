package remote

import (
	"context"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/gitrepo"
)

var bg = context.Background()

// A worker fetches a pinned commit with the token; without it, or with
// another, nothing is served; only fetches are: no push, no file of the
// repository's by its path.
func TestGitServerServesFetchesWithTheTokenOnly(t *testing.T) {
	dir := t.TempDir()
	repo, err := gitrepo.Init(bg, filepath.Join(dir, "repo.git"), "main", true)
	require.NoError(t, err)
	main, err := repo.RevParse(bg, "refs/heads/main")
	require.NoError(t, err)
	work, err := repo.CommitFiles(bg, main, map[string]string{"a.txt": "a\n"}, "work", gitrepo.Author{Name: "b", Email: "b@x"})
	require.NoError(t, err)
	require.NoError(t, repo.SetRef(bg, "refs/foreman/jobs/7", work, "pin"))

	s, err := ServeGit(repo.GitDir(), "127.0.0.1:0", "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	assert.True(t, strings.HasPrefix(s.URL(), "http://127.0.0.1:"), s.URL())

	mirror, err := gitrepo.InitBare(bg, filepath.Join(dir, "mirror.git"))
	require.NoError(t, err)
	got, err := mirror.Fetch(bg, s.URL(), "refs/foreman/jobs/7", "refs/foreman/fetched/a", s.Header())
	require.NoError(t, err)
	assert.Equal(t, work, got)
	// Again, with the mirror holding it: nothing new to bring.
	got, err = mirror.Fetch(bg, s.URL(), "refs/foreman/jobs/7", "refs/foreman/fetched/b", s.Header())
	require.NoError(t, err)
	assert.Equal(t, work, got)

	for name, header := range map[string][]string{"no token": nil, "another token": {"Authorization: Bearer " + strings.Repeat("0", 64)}} {
		_, err = mirror.Fetch(bg, s.URL(), "refs/foreman/jobs/7", "refs/foreman/fetched/c", header...)
		assert.Error(t, err, name)
	}

	get := func(method, path string, token bool) int {
		req, err := http.NewRequest(method, strings.TrimSuffix(s.URL(), "/git")+path, strings.NewReader(""))
		require.NoError(t, err)
		if token {
			req.Header.Set("Authorization", "Bearer "+s.Token())
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, get("GET", "/git/info/refs?service=git-upload-pack", true))
	assert.Equal(t, http.StatusUnauthorized, get("GET", "/git/info/refs?service=git-upload-pack", false))
	for _, p := range []string{"/git/info/refs?service=git-receive-pack", "/git/HEAD", "/git/config", "/git/objects/info/packs", "/git/info/refs"} {
		assert.Equal(t, http.StatusForbidden, get("GET", p, true), p)
	}
	assert.Equal(t, http.StatusForbidden, get("POST", "/git/git-receive-pack", true))

	// A push through the server is refused, and the repository unchanged.
	cmd := exec.Command("git", "-c", "http.extraHeader="+s.Header(), "push", s.URL(), "refs/foreman/fetched/a:refs/heads/pushed")
	cmd.Dir = mirror.Dir() // holds the commit
	out, err := cmd.CombinedOutput()
	assert.Error(t, err)
	assert.Contains(t, string(out), "403", "refused by the server, not for want of something to push")
	pushed, _ := repo.RevParse(bg, "refs/heads/pushed")
	assert.Empty(t, pushed)
}
