package agents

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/testkit/gittest"
)

// gitRepo is a repository with a first commit on main.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := gittest.Init(t, filepath.Join(t.TempDir(), "shop"))
	gittest.Commit(t, dir, "README", []byte("shop\n"))
	return dir
}

// A workspace is made once: a clone of the target, a key, a HOME and a
// TMPDIR, marked as foreman's. Made again, it is found as it was,
// uncommitted work and all, with the same key.
func TestWorkspaceIsMadeOnceAndKept(t *testing.T) {
	ctx := context.Background()
	repo, root := gitRepo(t), t.TempDir()
	w, err := MakeWorkspace(ctx, root, "b1", repo, "main")
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(w.Dir, Marker))
	assert.FileExists(t, filepath.Join(w.Work, "README"), "a clone of main")
	assert.DirExists(t, w.Home)
	assert.DirExists(t, w.Tmp)
	assert.NotEmpty(t, w.ID)

	require.NoError(t, os.WriteFile(filepath.Join(w.Work, "half.go"), []byte("package half\n"), 0o644))
	again, err := MakeWorkspace(ctx, root, "b1", repo, "main")
	require.NoError(t, err)
	assert.Equal(t, w, again, "the same key")
	assert.FileExists(t, filepath.Join(w.Work, "half.go"), "uncommitted work kept")
}

// A directory where a workspace would go that foreman did not make is
// refused with one line, and left as it was.
func TestForeignWorkspaceIsRefused(t *testing.T) {
	repo, root := gitRepo(t), t.TempDir()
	mine := filepath.Join(root, "b1")
	require.NoError(t, os.MkdirAll(mine, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(mine, "notes.txt"), []byte("mine"), 0o644))
	_, err := MakeWorkspace(context.Background(), root, "b1", repo, "main")
	require.Error(t, err)
	assert.Equal(t, "agent b1: "+mine+" is there, and foreman did not make it (no .foreman-workspace in it); move it away, or give the agent another name", err.Error())
	entries, _ := os.ReadDir(mine)
	assert.Len(t, entries, 1, "untouched")
}

// A clone that fails says git's reason in one line and leaves no clone
// behind, so the next start clones again rather than take half a one.
func TestFailedCloneLeavesNothing(t *testing.T) {
	root := t.TempDir()
	_, err := MakeWorkspace(context.Background(), root, "b1", filepath.Join(root, "nowhere"), "main")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "agent b1: cannot clone host.repo")
	assert.NotContains(t, strings.TrimSpace(err.Error()), "\n")
	assert.NoDirExists(t, filepath.Join(root, "b1", "work"))
	assert.NoDirExists(t, filepath.Join(root, "b1", "work.part"))
}

// An agent inherits foreman's environment (PATH, its CLI's API key) but
// none of foreman's own settings: how foreman signs in to NATS above all.
func TestAnAgentGetsNoneOfForemansSettings(t *testing.T) {
	w := Workspace{Home: "/ws/home", Tmp: "/ws/tmp", Key: "/ws/identity.json"}
	env := agentEnv([]string{"PATH=/usr/bin", "ANTHROPIC_API_KEY=sk-x", "FOREMAN_NATS_PASSWORD=s3cret", "FOREMAN_NATS_TOKEN=t0ken",
		"FOREMAN_HOST_IDENTITY=/root/host.json", "HOME=/root"}, w, "ws://127.0.0.1:1", "/p/foreman.yaml", []string{"FOREMAN_PUSH_TOKEN=mine"}, map[string]string{"OWN": "1"})
	for _, kv := range []string{"PATH=/usr/bin", "ANTHROPIC_API_KEY=sk-x", "HOME=/ws/home", "TMPDIR=/ws/tmp", "FOREMAN_IDENTITY=/ws/identity.json",
		"FOREMAN_SERVER_URL=ws://127.0.0.1:1", "FOREMAN_CONFIG=/p/foreman.yaml", "FOREMAN_PUSH_TOKEN=mine", "OWN=1"} {
		assert.Contains(t, env, kv)
	}
	for _, kv := range env {
		assert.NotContains(t, kv, "s3cret")
		assert.NotContains(t, kv, "t0ken")
		assert.NotContains(t, kv, "/root")
	}
}
