//go:build linux

package realagents

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/agentbox"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/host/remote"
	"github.com/agentforeman/foreman/internal/host/sandbox"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// Issue 46, with the real binaries: a scripted builder (foreman agent
// --role builder) confined as foreman up confines an agent (agentbox: its
// own uid and PID namespace, Landlock: its workspace, HOME and TMPDIR,
// never host.repo), its workspace a clone of the target, pushes through
// the push gate with its token from the environment (FOREMAN_PUSH_URL,
// FOREMAN_PUSH_TOKEN), to a branch in its namespace; the host, with
// host.branch_namespaces on, checks it and lands it (MERGED), and foreman
// verify holds at the end.
func TestAConfinedBuilderLandsThroughTheGate(t *testing.T) {
	if _, _, err := sandbox.Landlock(); err != nil {
		t.Skipf("no Landlock here: %v", err)
	}
	b := startHostBuildWith(t, "  branch_namespaces: on\n", "", "", []string{"api"})
	gate, err := remote.ServeGit(b.repo.GitDir(), "127.0.0.1:0", "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = gate.Close() })

	// What foreman up makes for an agent: a directory of its own among
	// the agents', its key there, its workspace a clone of the target.
	// Its uid must reach them, and the program it runs.
	for d := b.dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		require.NoError(t, os.Chmod(d, 0o711))
	}
	agents := filepath.Join(b.dir, "agents")
	own := filepath.Join(agents, "b1")
	ws, home, tmp := filepath.Join(own, "ws"), filepath.Join(own, "home"), filepath.Join(own, "tmp")
	require.NoError(t, os.MkdirAll(own, 0o711))
	require.NoError(t, os.Chmod(agents, 0o711))
	key := filepath.Join(own, "identity.json")
	id := identity(t, "--identity", key, "--name", "b1")
	ns := strings.TrimPrefix(id, "@")
	out, err := exec.Command("git", "clone", "-q", "--branch", "main", b.repo.GitDir(), ws).CombinedOutput()
	require.NoError(t, err, "%s", out)
	prog := filepath.Join(b.dir, "bin", "foreman")
	require.NoError(t, os.MkdirAll(filepath.Dir(prog), 0o711))
	data, err := os.ReadFile(bin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(prog, data, 0o755))
	token, err := gate.GrantPush(ns)
	require.NoError(t, err)

	cfg := agentbox.Config{Deny: []sandbox.Denied{
		{Key: "host.identity", Path: filepath.Join(b.dir, "host.json")},
		{Key: "host.repo", Path: b.repo.GitDir()},
		{Key: "journal.path", Path: filepath.Join(b.dir, "journal")},
		{Key: "server.identity", Path: filepath.Join(b.dir, ".foreman")},
		{Key: agentbox.WorkspacesKey, Path: agents},
	}}
	log := &roomtest.SyncBuffer{}
	p, err := agentbox.Launch(cfg, agentbox.Spec{
		Name: "b1", Dir: ws,
		Argv: []string{prog, "agent", "--role", "builder", "--identity", key, "--url", b.url, "--rate-limit", b.rate.String(),
			"--coordinator", b.foreman, "--minute", "20ms", "--workspace", ws},
		Env: []string{"PATH=/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + tmp,
			config.EnvPushURL + "=" + gate.URL(), config.EnvPushToken + "=" + token},
		Stdout: log, Stderr: log, Writable: []string{home, tmp},
	})
	require.NoError(t, err)
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = p.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = p.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(patience):
			t.Error("the confined builder did not stop")
		}
		if t.Failed() {
			t.Logf("the confined builder said:\n%s", log)
		}
	})

	b.await(b.foreman, "ACK api "+id)
	assert.Equal(t, "READY api "+ns+"/api", b.await(id, "READY api"), "a branch in its namespace")
	b.await(b.foreman, "REVIEW api ")
	b.say("aud", "AUDIT api PASS")
	b.await(b.foreman, "OK MERGED api")
	assert.Empty(t, b.said(b.host, "CI api FAIL"), b.dump())
	main := b.tip("refs/heads/main")
	body, err := b.repo.Git(context.Background(), "show", main+":api/api.txt")
	require.NoError(t, err)
	assert.Equal(t, "api, built by b1\n", body, "its work landed, pushed through the gate from its box")
	pushed := b.tip("refs/heads/" + ns + "/api")
	author, err := b.repo.Git(context.Background(), "log", "-1", "--format=%an", pushed)
	require.NoError(t, err)
	assert.Equal(t, "b1\n", author, "its branch, made in its clone")
	select {
	case <-exited:
		assert.NoError(t, waitErr, "the build complete, it leaves: %s", log)
	case <-time.After(patience):
		t.Errorf("the confined builder did not leave at COMPLETE")
	}
	// The host signs its head after landing: foreman verify (the
	// cleanup) finds the landing anchored once it has.
	require.Eventually(t, func() bool { return b.headNow() != "" }, patience, 20*time.Millisecond, "the host never signed its head")
}
