package remote

import (
	"context"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/workq"
)

var bg = context.Background()

// A worker fetches a pinned commit with its job's token; without it, with
// another, or once the job ended, nothing is served; the token shows its
// job's ref alone (not another job's, not main, no object by its id);
// only fetches are served: no push, no file of the repository's by its
// path.
func TestGitServerServesFetchesWithTheTokenOnly(t *testing.T) {
	dir := t.TempDir()
	repo, err := gitrepo.Init(bg, filepath.Join(dir, "repo.git"), "main", true)
	require.NoError(t, err)
	main, err := repo.RevParse(bg, "refs/heads/main")
	require.NoError(t, err)
	work, err := repo.CommitFiles(bg, main, map[string]string{"a.txt": "a\n"}, "work", gitrepo.Author{Name: "b", Email: "b@x"})
	require.NoError(t, err)
	require.NoError(t, repo.SetRef(bg, "refs/foreman/jobs/7", work, "pin"))
	secret, err := repo.CommitFiles(bg, main, map[string]string{"b.txt": "another job's\n"}, "other", gitrepo.Author{Name: "b", Email: "b@x"})
	require.NoError(t, err)
	require.NoError(t, repo.SetRef(bg, "refs/foreman/jobs/8", secret, "pin"))

	s, err := ServeGit(repo.GitDir(), "127.0.0.1:0", "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	assert.True(t, strings.HasPrefix(s.URL(), "http://127.0.0.1:"), s.URL())
	token := s.Grant("refs/foreman/jobs/7", "", "")

	mirror, err := gitrepo.InitBare(bg, filepath.Join(dir, "mirror.git"))
	require.NoError(t, err)
	got, err := mirror.Fetch(bg, s.URL(), "refs/foreman/jobs/7", "refs/foreman/fetched/a", Header(token))
	require.NoError(t, err)
	assert.Equal(t, work, got)
	// Again, with the mirror holding it: nothing new to bring.
	got, err = mirror.Fetch(bg, s.URL(), "refs/foreman/jobs/7", "refs/foreman/fetched/b", Header(token))
	require.NoError(t, err)
	assert.Equal(t, work, got)

	// The token shows its job's ref alone.
	ls := exec.Command("git", "-c", "http.extraHeader="+Header(token), "ls-remote", s.URL())
	out, err := ls.CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Equal(t, work+"\trefs/foreman/jobs/7", strings.TrimSpace(string(out)))
	for _, want := range []string{"refs/foreman/jobs/8", "refs/heads/main", secret} {
		_, err = mirror.Fetch(bg, s.URL(), want, "refs/foreman/fetched/x", Header(token))
		assert.Error(t, err, "%s with job 7's token", want)
	}
	// Without the hidden refs the same token would show every ref.
	open := exec.Command("git", "-c", "uploadpack.hideRefs=", "ls-remote", repo.GitDir())
	out, err = open.CombinedOutput()
	require.NoError(t, err)
	assert.Contains(t, string(out), "refs/foreman/jobs/8")
	s.Revoke(token)
	_, err = mirror.Fetch(bg, s.URL(), "refs/foreman/jobs/7", "refs/foreman/fetched/y", Header(token))
	assert.Error(t, err, "the job ended: its token fetches nothing")
	token = s.Grant("refs/foreman/jobs/7", "", "")

	for name, header := range map[string][]string{"no token": nil, "another token": {"Authorization: Bearer " + strings.Repeat("0", 64)}} {
		_, err = mirror.Fetch(bg, s.URL(), "refs/foreman/jobs/7", "refs/foreman/fetched/c", header...)
		assert.Error(t, err, name)
	}

	get := func(method, path string, auth bool) int {
		req, err := http.NewRequest(method, strings.TrimSuffix(s.URL(), "/git")+path, strings.NewReader(""))
		require.NoError(t, err)
		if auth {
			req.Header.Set("Authorization", "Bearer "+token)
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
	cmd := exec.Command("git", "-c", "http.extraHeader="+Header(token), "push", s.URL(), "refs/foreman/fetched/a:refs/heads/pushed")
	cmd.Dir = mirror.Dir() // holds the commit
	out, err = cmd.CombinedOutput()
	assert.Error(t, err)
	assert.Contains(t, string(out), "403", "refused by the server, not for want of something to push")
	pushed, _ := repo.RevParse(bg, "refs/heads/pushed")
	assert.Empty(t, pushed)
}

// A token granted for a worker's key fetches only with that worker's
// signature of it: another worker's credentials (its key) sign it in
// vain, and the token alone, read anywhere, fetches nothing. Without the
// key in the grant, the token alone fetches (the control).
func TestAFetchTokenWorksOnlyForItsWorker(t *testing.T) {
	dir := t.TempDir()
	repo, err := gitrepo.Init(bg, filepath.Join(dir, "repo.git"), "main", true)
	require.NoError(t, err)
	main, err := repo.RevParse(bg, "refs/heads/main")
	require.NoError(t, err)
	require.NoError(t, repo.SetRef(bg, "refs/foreman/jobs/7", main, "pin"))
	s, err := ServeGit(repo.GitDir(), "127.0.0.1:0", "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	w1, _ := nkeys.CreateUser()
	w2, _ := nkeys.CreateUser()
	pub1, _ := w1.PublicKey()
	token := s.Grant("refs/foreman/jobs/7", "7-0-aa", pub1)
	mirror, err := gitrepo.InitBare(bg, filepath.Join(dir, "mirror.git"))
	require.NoError(t, err)
	signed := func(kp nkeys.KeyPair, job string) string {
		_, sig := workq.Sign(kp, workq.FetchSigned(job, token))
		return workq.FetchHeader + ": " + sig
	}
	for name, headers := range map[string][]string{
		"the token alone":                  {Header(token)},
		"signed by another worker":         {Header(token), signed(w2, "7-0-aa")},
		"signed by the worker for another": {Header(token), signed(w1, "8-0-aa")},
	} {
		_, err := mirror.Fetch(bg, s.URL(), "refs/foreman/jobs/7", "refs/foreman/fetched/x", headers...)
		assert.Error(t, err, name)
	}
	got, err := mirror.Fetch(bg, s.URL(), "refs/foreman/jobs/7", "refs/foreman/fetched/a", Header(token), signed(w1, "7-0-aa"))
	require.NoError(t, err, "the worker the job was given to")
	assert.Equal(t, main, got)
	open := s.Grant("refs/foreman/jobs/7", "7-0-aa", "")
	_, err = mirror.Fetch(bg, s.URL(), "refs/foreman/jobs/7", "refs/foreman/fetched/b", Header(open))
	require.NoError(t, err, "without the worker's key in the grant, the token alone fetches")
}
