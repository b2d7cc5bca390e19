package sim

import (
	"context"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host/remote"
)

// pushPlace is host.repo and a builder's pushes to it, either straight
// (--repo) or from the builder's clone through the push gate with its
// token (--push-url): the same cases run on both and see the same
// repository.
type pushPlace struct {
	t    *testing.T
	host *gitrepo.Repo // host.repo: what the host checks and lands
	gate *remote.GitServer
	dir  string
}

var bgCtx = context.Background()

func newPushPlace(t *testing.T) *pushPlace {
	dir := t.TempDir()
	host, err := gitrepo.Init(bgCtx, filepath.Join(dir, "host.git"), "main", true)
	require.NoError(t, err)
	gate, err := remote.ServeGit(host.GitDir(), "127.0.0.1:0", "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = gate.Close() })
	return &pushPlace{t: t, host: host, gate: gate, dir: dir}
}

// pusher is builder name's pushes: through the gate, from a clone of the
// host's repository as foreman up makes it, or straight.
func (pp *pushPlace) pusher(name string, gated bool) *Pusher {
	if !gated {
		p, err := NewPusher(pp.host.GitDir(), "main", name, nil)
		require.NoError(pp.t, err)
		return p
	}
	ws := filepath.Join(pp.dir, name)
	out, err := exec.Command("git", "clone", "-q", pp.host.GitDir(), ws).CombinedOutput()
	require.NoError(pp.t, err, "%s", out)
	token, err := pp.gate.GrantPush(name)
	require.NoError(pp.t, err)
	p, err := NewGatePusher(ws, pp.gate.URL(), token, "main", name, nil)
	require.NoError(pp.t, err)
	return p
}

// commit is a commit of the host's (a landing, a rebase, a pin) on
// parent, at ref when ref is not "".
func (pp *pushPlace) commit(ref, parent, file string) string {
	c, err := pp.host.CommitFiles(bgCtx, parent, map[string]string{file: file + "\n"}, file, gitrepo.Author{Name: "h", Email: "h@x"})
	require.NoError(pp.t, err)
	if ref != "" {
		require.NoError(pp.t, pp.host.SetRef(bgCtx, ref, c, "test"))
	}
	return c
}

func (pp *pushPlace) tip(ref string) string {
	c, err := pp.host.RevParse(bgCtx, ref)
	require.NoError(pp.t, err)
	return c
}

func (pp *pushPlace) parent(c string) string { return pp.tip(c + "^") }

// files are the files of c's tree.
func (pp *pushPlace) files(c string) []string {
	out, err := pp.host.Git(bgCtx, "ls-tree", "-r", "--name-only", c)
	require.NoError(pp.t, err)
	f := strings.Fields(out)
	sort.Strings(f)
	return f
}

// A builder's pushes through the gate, from its clone, do what its
// pushes straight into host.repo do, case by case: its branch starts from
// the target as it was when it began (a landing after that is merged by
// the host, not taken in), each push goes on top of the branch as the
// host left it (rebased), a handover starts it from the branch or the
// pinned commit handed over, also once it was pushed. Where they differ,
// the gate is why: a branch moved under a push is fetched and pushed
// again on its new head (straight, the push says the ref moved), and a
// branch outside the builder's namespace is refused by the gate.
func TestPushesThroughTheGateDoWhatPushesStraightDo(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, pp *pushPlace, gated bool)
	}{
		{"work in progress, then the work, from the target as it was at the start", func(t *testing.T, pp *pushPlace, gated bool) {
			p := pp.pusher("b1", gated)
			start := pp.tip("refs/heads/main")
			p.begin("api", "b1/api")
			pp.commit("refs/heads/main", start, "landed.txt") // another's work lands meanwhile
			require.NoError(t, p.pushWIP("api", "b1/api", 1))
			wip := pp.tip("refs/heads/b1/api")
			assert.Equal(t, start, pp.parent(wip), "work in progress starts where the builder began")
			assert.Equal(t, []string{"api/wip.txt"}, pp.files(wip))
			require.NoError(t, p.push("api", "b1/api", 0))
			done := pp.tip("refs/heads/b1/api")
			assert.Equal(t, wip, pp.parent(done), "the work goes on top of its work in progress")
			assert.Equal(t, []string{"api/api.txt", "api/wip.txt"}, pp.files(done))
			require.NoError(t, p.push("api", "b1/api", 1))
			assert.Equal(t, []string{"api/api.txt", "api/fixes.txt", "api/wip.txt"}, pp.files(pp.tip("refs/heads/b1/api")), "a fix")
		}},
		{"on top of what the host rebased", func(t *testing.T, pp *pushPlace, gated bool) {
			p := pp.pusher("b1", gated)
			p.begin("api", "b1/api")
			require.NoError(t, p.pushWIP("api", "b1/api", 1))
			main := pp.commit("refs/heads/main", pp.tip("refs/heads/main"), "landed.txt")
			rebased := pp.commit("refs/heads/b1/api", main, "api/wip.txt")
			require.NoError(t, p.push("api", "b1/api", 0))
			tip := pp.tip("refs/heads/b1/api")
			assert.Equal(t, rebased, pp.parent(tip))
			assert.Equal(t, []string{"api/api.txt", "api/wip.txt", "landed.txt"}, pp.files(tip))
		}},
		{"handed another's branch before its own is pushed", func(t *testing.T, pp *pushPlace, gated bool) {
			left := pp.commit("refs/heads/b2/api", pp.tip("refs/heads/main"), "api/left.txt")
			p := pp.pusher("b1", gated)
			p.begin("api", "b1/api")
			p.handed("api", "b1/api", "b2/api")
			require.NoError(t, p.push("api", "b1/api", 0))
			assert.Equal(t, left, pp.parent(pp.tip("refs/heads/b1/api")), "it starts from what b2 left")
		}},
		{"handed the host's pin, once its own branch was pushed", func(t *testing.T, pp *pushPlace, gated bool) {
			p := pp.pusher("b1", gated)
			p.begin("api", "b1/api")
			require.NoError(t, p.pushWIP("api", "b1/api", 1))
			pin := pp.commit("refs/foreman/handoff/api/1", pp.tip("refs/heads/main"), "api/pinned.txt")
			p.handed("api", "b1/api", pin)
			require.NoError(t, p.push("api", "b1/api", 0))
			assert.Equal(t, pin, pp.parent(pp.tip("refs/heads/b1/api")), "the next push starts from the pin, not its own branch")
			require.NoError(t, p.push("api", "b1/api", 1))
			assert.Equal(t, []string{"api/api.txt", "api/fixes.txt", "api/pinned.txt"}, pp.files(pp.tip("refs/heads/b1/api")), "and the one after from there")
		}},
		{"handed nothing it can find: from the target", func(t *testing.T, pp *pushPlace, gated bool) {
			p := pp.pusher("b1", gated)
			p.begin("api", "b1/api")
			p.handed("api", "b1/api", "b9/none")
			p.handed("api", "b1/api", "..bad")
			require.NoError(t, p.push("api", "b1/api", 0))
			assert.Equal(t, pp.tip("refs/heads/main"), pp.parent(pp.tip("refs/heads/b1/api")))
		}},
		{"a branch moved under the push", func(t *testing.T, pp *pushPlace, gated bool) {
			p := pp.pusher("b1", gated)
			p.begin("api", "b1/api")
			require.NoError(t, p.pushWIP("api", "b1/api", 1))
			var moved string
			p.Edit = func(_ context.Context, _ string, _ bool, parent string, _ map[string]string) (string, error) {
				if moved == "" { // the host rebases the branch between the pusher's look and its push
					moved = pp.commit("refs/heads/b1/api", pp.tip("refs/heads/main"), "api/rebased.txt")
				}
				return parent, nil
			}
			err := p.push("api", "b1/api", 0)
			if !gated {
				assert.ErrorIs(t, err, gitrepo.ErrMoved, "straight: said, as before")
				assert.Equal(t, moved, pp.tip("refs/heads/b1/api"))
				return
			}
			require.NoError(t, err, "through the gate: fetched and pushed again")
			assert.Equal(t, moved, pp.parent(pp.tip("refs/heads/b1/api")), "on the new head")
		}},
		{"a branch outside its namespace", func(t *testing.T, pp *pushPlace, gated bool) {
			p := pp.pusher("b1", gated)
			p.begin("api", "b2/api")
			err := p.push("api", "b2/api", 0)
			if !gated {
				require.NoError(t, err, "straight, nothing stops it: the box keeps a confined builder from host.repo")
				assert.NotEmpty(t, pp.tip("refs/heads/b2/api"))
				return
			}
			var refused *gitrepo.RefusedPush
			require.ErrorAs(t, err, &refused)
			assert.Contains(t, err.Error(), "b1 may update only its own branches, b1/*")
			assert.Empty(t, pp.tip("refs/heads/b2/api"))
		}},
	}
	for _, c := range cases {
		for _, gated := range []bool{false, true} {
			how := "straight"
			if gated {
				how = "through the gate"
			}
			t.Run(c.name+"/"+how, func(t *testing.T) {
				t.Parallel() // each its own repository and gate; mostly waiting on git
				c.run(t, newPushPlace(t), gated)
			})
		}
	}
}

// A gate pusher needs its token, and a gate with the target.
func TestAGatePusherSaysWhatItLacks(t *testing.T) {
	pp := newPushPlace(t)
	ws := filepath.Join(pp.dir, "ws")
	out, err := exec.Command("git", "clone", "-q", pp.host.GitDir(), ws).CombinedOutput()
	require.NoError(t, err, "%s", out)
	_, err = NewGatePusher(ws, pp.gate.URL(), "", "main", "b1", nil)
	assert.EqualError(t, err, "--push-url "+pp.gate.URL()+": no token in FOREMAN_PUSH_TOKEN; foreman up sets it for each agent it starts (a token is never a flag, where ps would show it)")
	token, err := pp.gate.GrantPush("b1")
	require.NoError(t, err)
	_, err = NewGatePusher(ws, pp.gate.URL(), token, "trunk", "b1", nil)
	assert.ErrorContains(t, err, "no branch trunk to start work from (host.target) there")
	_, err = NewGatePusher(ws, pp.gate.URL(), strings.Repeat("0", 64), "main", "b1", nil)
	assert.ErrorContains(t, err, "--push-url "+pp.gate.URL()+": git fetch:")
}
