package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host/remote"
)

// As foreman up starts it (FOREMAN_PUSH_URL, FOREMAN_PUSH_TOKEN, its
// workspace a clone of host.repo), a scripted builder commits in its
// clone and pushes through the push gate, to branches under its id (what
// host.branch_namespaces and the gate take), even beside a config with
// host.repo, which its box would not let it write.
func TestAgentBuilderPushesThroughTheGate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	repo, err := gitrepo.Init(ctx, filepath.Join(dir, "shop.git"), "main", true)
	require.NoError(t, err)
	main, err := repo.RevParse(ctx, "refs/heads/main")
	require.NoError(t, err)
	gate, err := remote.ServeGit(repo.GitDir(), "127.0.0.1:0", "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = gate.Close() })
	key := filepath.Join(dir, "b1.json")
	id, err := agentIdentity(key, "b1", "builder", true)
	require.NoError(t, err)
	ns := strings.TrimPrefix(id.AgentID(), "@")
	token, err := gate.GrantPush(ns)
	require.NoError(t, err)
	ws := filepath.Join(dir, "ws")
	out, err := exec.Command("git", "clone", "-q", repo.GitDir(), ws).CombinedOutput()
	require.NoError(t, err, "%s", out)

	r := newAgentRoom(t)
	cfg := writeFile(t, dir, "foreman.yaml", "server:\n  url: "+r.url+"\n  rate_limit: 5ms\nhost:\n  repo: shop.git\n")
	t.Setenv(config.EnvPushURL, gate.URL())
	t.Setenv(config.EnvPushToken, token)
	_, stderr, done, stop := startAgent(t, strings.NewReader(""), "agent", cfg, "--role", "builder", "--identity", key, "--minute", "10ms", "--workspace", ws)
	r.joined("b1")
	r.say("TASKS db")
	b1 := r.expect("CLAIM db")
	require.Equal(t, id.AgentID(), b1)
	r.say("ACK db " + b1)
	r.expect("PROGRESS db 25 branch=" + ns + "/db")
	r.expect("READY db " + ns + "/db")
	tip, err := repo.RevParse(ctx, "refs/heads/"+ns+"/db")
	require.NoError(t, err)
	body, err := repo.Git(ctx, "show", tip+":db/db.txt")
	require.NoError(t, err)
	assert.Equal(t, "db, built by b1\n", body, "its work reached host.repo through the gate")
	first, err := repo.Git(ctx, "rev-list", "--max-parents=0", "--first-parent", tip)
	require.NoError(t, err)
	assert.Equal(t, main, strings.TrimSpace(first), "from main")
	mine, err := gitrepo.Open(ctx, ws)
	require.NoError(t, err)
	inClone, err := mine.RevParse(ctx, tip)
	require.NoError(t, err)
	assert.Equal(t, tip, inClone, "made in its clone")
	stop()
	assert.Equal(t, 0, <-done, stderr.String())

	code, _, errOut := foreman(t, "agent", "--url", "ws://127.0.0.1:1", "--repo", filepath.Join(dir, "shop.git"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "--repo "+filepath.Join(dir, "shop.git")+" and --push-url "+gate.URL()+": a builder pushes one way")
	t.Setenv(config.EnvPushToken, "")
	code, _, errOut = foreman(t, "agent", "--url", "ws://127.0.0.1:1", "--workspace", ws)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no token in FOREMAN_PUSH_TOKEN")
}
