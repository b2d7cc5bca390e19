package remote

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/gitrepo"
)

// gate is the host's repository served with a push token per agent, and
// each agent's clone of it: the git of an agent foreman up starts.
type gate struct {
	t      *testing.T
	repo   *gitrepo.Repo
	s      *GitServer
	tokens map[string]string
	dir    string
}

func newGate(t *testing.T, agents ...string) *gate {
	dir := t.TempDir()
	repo, err := gitrepo.Init(bg, filepath.Join(dir, "repo.git"), "main", true)
	require.NoError(t, err)
	s, err := ServeGit(repo.GitDir(), "127.0.0.1:0", "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	g := &gate{t: t, repo: repo, s: s, tokens: map[string]string{}, dir: dir}
	for _, a := range agents {
		g.tokens[a], err = s.GrantPush(a)
		require.NoError(t, err)
		g.git("", "clone", "-q", repo.GitDir(), filepath.Join(dir, a))
	}
	return g
}

// git runs git in agent's clone ("": the test's directory).
func (g *gate) git(agent string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = filepath.Join(g.dir, agent)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@x",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// commit makes a commit in agent's clone and returns it.
func (g *gate) commit(agent, file string) string {
	require.NoError(g.t, os.WriteFile(filepath.Join(g.dir, agent, file), []byte(agent+"\n"), 0o644))
	out, err := g.git(agent, "add", file)
	require.NoError(g.t, err, out)
	out, err = g.git(agent, "commit", "-qm", file)
	require.NoError(g.t, err, out)
	out, err = g.git(agent, "rev-parse", "HEAD")
	require.NoError(g.t, err, out)
	return strings.TrimSpace(out)
}

// push is agent's git push through the gate with token.
func (g *gate) push(agent, token string, refspecs ...string) (string, error) {
	return g.git(agent, append([]string{"-c", "http.extraHeader=" + Header(token), "push", "--force", g.s.URL()}, refspecs...)...)
}

func (g *gate) ref(name string) string {
	oid, _ := g.repo.RevParse(bg, name)
	return oid
}

// An agent pushes its own branches through the gate, and nothing else:
// not another agent's (new or existing, updated or deleted), not the
// target, not a tag; a push naming one ref outside is refused whole, and
// git shows the agent why. The same pushes succeed with the gate's
// namespaces off: the check is what refuses them.
func TestThePushGateTakesAnAgentsOwnBranchesOnly(t *testing.T) {
	for _, off := range []bool{false, true} {
		g := newGate(t, "b1", "b2")
		main := g.ref("refs/heads/main")
		b2 := g.commit("b2", "b2.txt")
		out, err := g.push("b2", g.tokens["b2"], "HEAD:refs/heads/b2/api")
		require.NoError(t, err, out)
		require.Equal(t, b2, g.ref("refs/heads/b2/api"))
		b1 := g.commit("b1", "b1.txt")
		out, err = g.push("b1", g.tokens["b1"], "HEAD:refs/heads/b1/api")
		require.NoError(t, err, out)
		assert.Equal(t, b1, g.ref("refs/heads/b1/api"), "its own branch")
		g.s.SetPushWithout(PushWithout{Namespaces: off})

		attacks := map[string][]string{
			"update another agent's branch": {"HEAD:refs/heads/b2/api"},
			"make a branch in another's":    {"HEAD:refs/heads/b2/new"},
			"move the target":               {"HEAD:refs/heads/main"},
			"a tag":                         {"HEAD:refs/tags/v1"},
			"foreman's refs":                {"HEAD:refs/foreman/handoff/api/1"},
			"a name its own begins":         {"HEAD:refs/heads/b1x/api"},
			"a prefix of its name":          {"HEAD:refs/heads/b/api"},
		}
		if off {
			// All of them at once: one push, each ref taken.
			var all []string
			for _, refspecs := range attacks {
				all = append(all, refspecs...)
			}
			out, err := g.push("b1", g.tokens["b1"], all...)
			require.NoError(t, err, "without namespaces: %s", out)
			for _, ref := range all {
				assert.Equal(t, b1, g.ref(strings.TrimPrefix(ref, "HEAD:")), "without namespaces b1 pushed %s", ref)
			}
			continue
		}
		for name, refspecs := range attacks {
			out, err := g.push("b1", g.tokens["b1"], refspecs...)
			assert.Error(t, err, name)
			assert.Contains(t, out, "[remote rejected]", name)
			assert.Contains(t, out, "b1 may update only its own branches, b1/*: push to b1/<component>", name)
		}
		// A delete of another's branch, and a push that mixes its own
		// branch with another's: refused whole.
		out, err = g.push("b1", g.tokens["b1"], ":refs/heads/b2/api")
		assert.Error(t, err)
		assert.Contains(t, out, "b1 may delete only its own branches", out)
		out, err = g.push("b1", g.tokens["b1"], "HEAD:refs/heads/b1/web", "HEAD:refs/heads/b2/api")
		assert.Error(t, err)
		assert.Contains(t, out, "[remote rejected]", out)
		for ref, want := range map[string]string{"refs/heads/b2/api": b2, "refs/heads/b2/new": "", "refs/heads/main": main,
			"refs/tags/v1": "", "refs/heads/b1/web": "", "refs/heads/b1x/api": "", "refs/heads/b/api": "", "refs/foreman/handoff/api/1": ""} {
			assert.Equal(t, want, g.ref(ref), "%s unchanged", ref)
		}
		// Its own branch it may delete.
		out, err = g.push("b1", g.tokens["b1"], ":refs/heads/b1/api")
		require.NoError(t, err, out)
		assert.Empty(t, g.ref("refs/heads/b1/api"))
	}
}

// A push needs a live agent's token: none, an unknown one, or one revoked
// (an agent stopped for good: RevokePush) pushes nothing, and another
// agent's goes on. An agent's token fetches branches and handoff pins,
// never the host's other refs.
func TestThePushGateNeedsALiveAgentsToken(t *testing.T) {
	g := newGate(t, "b1")
	c := g.commit("b1", "a.txt")
	out, err := g.push("b1", g.tokens["b1"], "HEAD:refs/heads/b1/api")
	require.NoError(t, err, out, "the control: its token pushes")
	require.Equal(t, c, g.ref("refs/heads/b1/api"))
	c2 := g.commit("b1", "b.txt")
	other, err := g.s.GrantPush("b2")
	require.NoError(t, err)
	g.s.RevokePush("b1")
	for name, token := range map[string]string{"revoked": g.tokens["b1"], "unknown": strings.Repeat("0", 64), "none": ""} {
		out, err := g.push("b1", token, "HEAD:refs/heads/b1/api")
		assert.Error(t, err, name)
		assert.Contains(t, out, "could not read Username", "%s: git asks for credentials when the gate answers 401", name)
		req, err := http.NewRequest(http.MethodGet, g.s.URL()+"/info/refs?service=git-receive-pack", nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, name)
	}
	assert.Equal(t, c, g.ref("refs/heads/b1/api"), "no push landed")
	assert.NotEqual(t, c2, c)
	out, err = g.push("b1", other, "HEAD:refs/heads/b2/api")
	require.NoError(t, err, "another agent's token lives on: %s", out)

	// A live token fetches what an agent starts from and takes over:
	// branches and the host's handoff pins; never the jobs' pins.
	token, err := g.s.GrantPush("b1")
	require.NoError(t, err)
	main := g.ref("refs/heads/main")
	require.NoError(t, g.repo.SetRef(bg, "refs/foreman/handoff/api/1", c, "pin"))
	require.NoError(t, g.repo.SetRef(bg, "refs/foreman/jobs/7", c2pinned(t, g), "pin"))
	for ref, want := range map[string]string{"refs/heads/main": main, "refs/heads/b1/api": c, "refs/foreman/handoff/api/1": c} {
		out, err = g.git("b1", "-c", "http.extraHeader="+Header(token), "fetch", g.s.URL(), "+"+ref+":refs/fetched/x") // forced: the refs fetched are no line of one another
		require.NoError(t, err, "%s: %s", ref, out)
		got, err := g.git("b1", "rev-parse", "refs/fetched/x")
		require.NoError(t, err)
		assert.Equal(t, want, strings.TrimSpace(got), ref)
	}
	out, err = g.git("b1", "-c", "http.extraHeader="+Header(token), "ls-remote", g.s.URL())
	require.NoError(t, err, out)
	assert.NotContains(t, out, "refs/foreman/jobs/7", "a job's pin is not an agent's to see")
	_, err = g.git("b1", "-c", "http.extraHeader="+Header(token), "fetch", g.s.URL(), "refs/foreman/jobs/7")
	assert.Error(t, err, "nor to fetch")
	for _, bad := range []string{"", "b1/x", "@b1", "-b1", "a b"} {
		_, err := g.s.GrantPush(bad)
		assert.Error(t, err, "%q is no branch prefix", bad)
	}
}

// c2pinned is a commit of the host's own, on no branch: what a job's pin
// holds.
func c2pinned(t *testing.T, g *gate) string {
	main, err := g.repo.RevParse(bg, "refs/heads/main")
	require.NoError(t, err)
	c, err := g.repo.CommitFiles(bg, main, map[string]string{"job.txt": "the host's\n"}, "job", gitrepo.Author{Name: "h", Email: "h@x"})
	require.NoError(t, err)
	return c
}
