//go:build linux

package agentbox

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host/remote"
	"github.com/agentforeman/foreman/internal/host/sandbox"
)

// pushes is what a confined agent tries with git: its own branch through
// the gate, another agent's through the gate, and another's straight into
// host.repo, past the gate.
const pushes = `
git commit --allow-empty -qm work || exit 1
git -c http.extraHeader="Authorization: Bearer $TOKEN" push -q "$GATE" HEAD:refs/heads/b1/api && echo "PUSHED own"
git -c http.extraHeader="Authorization: Bearer $TOKEN" push -q "$GATE" HEAD:refs/heads/b2/api 2>&1 && echo "PUSHED other"
git push -q "$REPO" HEAD:refs/heads/b2/direct 2>/dev/null && echo "PUSHED direct"
exit 0
`

// A confined agent reaches the push gate on 127.0.0.1 (its network is
// the machine's) and pushes its own branch, and no other: not through the
// gate, which refuses it with why, nor into host.repo straight, which its
// box keeps it from. With the box off, the straight push works: the gate
// is the only way in because the box closes the others.
func TestAConfinedAgentPushesThroughTheGateOnly(t *testing.T) {
	ctx := context.Background()
	for _, off := range []bool{false, true} {
		s := newSite(t)
		inbox := filepath.Join(s.base, "inbox.git")
		repo, err := gitrepo.Init(ctx, inbox, "main", true)
		require.NoError(t, err)
		cfg := s.cfg
		cfg.Deny = append(cfg.Deny, sandbox.Denied{Key: "host.repo", Path: inbox})
		if off {
			cfg.Without = Without{Landlock: true, OwnUID: true, PIDNamespace: true}
		}
		gate, err := remote.ServeGit(repo.GitDir(), "127.0.0.1:0", "")
		require.NoError(t, err)
		t.Cleanup(func() { _ = gate.Close() })
		token, err := gate.GrantPush("b1")
		require.NoError(t, err)

		sp, out := s.spec("b1", pushes, "TOKEN="+token, "GATE="+gate.URL(), "REPO="+inbox, "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_AUTHOR_NAME=b1", "GIT_AUTHOR_EMAIL=b1@x", "GIT_COMMITTER_NAME=b1", "GIT_COMMITTER_EMAIL=b1@x")
		clone := exec.Command("git", "clone", "-q", inbox, sp.Dir)
		msg, err := clone.CombinedOutput()
		require.NoError(t, err, "%s", msg)
		p, err := Launch(cfg, sp)
		require.NoError(t, err)
		require.NoError(t, p.Wait(), out.String())

		own, _ := repo.RevParse(ctx, "refs/heads/b1/api")
		other, _ := repo.RevParse(ctx, "refs/heads/b2/api")
		direct, _ := repo.RevParse(ctx, "refs/heads/b2/direct")
		assert.Contains(t, out.String(), "PUSHED own", "its own branch, through the gate, from its box")
		assert.NotEmpty(t, own)
		assert.NotContains(t, out.String(), "PUSHED other")
		assert.Contains(t, out.String(), "b1 may update only its own branches, b1/*", "git shows the agent why")
		assert.Empty(t, other)
		if off {
			assert.Contains(t, out.String(), "PUSHED direct", "without its box an agent writes host.repo itself")
			assert.NotEmpty(t, direct)
			continue
		}
		assert.NotContains(t, out.String(), "PUSHED direct")
		assert.Empty(t, direct, "its box keeps it out of host.repo")
	}
}
