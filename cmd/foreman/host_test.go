package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/gitrepo"
)

// foreman host refuses, in one line naming the key, every configuration
// it cannot work with, before it joins any room.
func TestHostRefusesBadConfigurations(t *testing.T) {
	dir := t.TempDir()
	_, err := gitrepo.Init(context.Background(), filepath.Join(dir, "repo.git"), "main", true)
	require.NoError(t, err)
	require.NoError(t, exec.Command("git", "init", "--quiet", "--bare", "--initial-branch=main", filepath.Join(dir, "empty.git")).Run())
	fid, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	require.NoError(t, fid.Save(filepath.Join(dir, "foreman.json")))
	hid, err := agentchat.NewIdentity("host")
	require.NoError(t, err)
	require.NoError(t, hid.Save(filepath.Join(dir, "host.json")))
	other := "@0123456789abcdef"

	base := func(host, rules, roles string) string {
		return fmt.Sprintf(`server:
  url: ws://127.0.0.1:1
  identity: foreman.json
build:
  components:
    - name: db
roles:
%srules:
%shost:
  identity: host.json
%s`, roles, rules, host)
	}
	gated, external := "  ci_gating: on\n", "  ci_gating: on\n  merge: external\n"
	mine := fmt.Sprintf("  ci: [%q]\n  merger: [%q]\n", hid.AgentID(), hid.AgentID())
	for name, tc := range map[string]struct{ yaml, want string }{
		"no repo":               {base("", gated, mine), "host.repo: not set: the path of the git repository foreman host checks and lands in; set it, or run foreman init in the repository, which offers it"},
		"nothing to do":         {base("  repo: repo.git\n", "  ci_gating: off\n", mine), "rules.ci_gating: off, and rules.merge is accept"},
		"not a repo":            {base("  repo: .\n", gated, mine), "host.repo: " + dir + ": not a git repository; make it one (git init --initial-branch=main " + dir + ") or name the repository's top directory"},
		"no directory":          {base("  repo: gone.git\n", gated, mine), "host.repo: " + filepath.Join(dir, "gone.git") + ": no such directory; make a repository there (git init --initial-branch=main " + filepath.Join(dir, "gone.git") + ") or name the one you have"},
		"inside one":            {base("  repo: repo.git/refs\n", gated, mine), "host.repo: " + filepath.Join(dir, "repo.git/refs") + ": not a git repository (it is inside " + filepath.Join(dir, "repo.git") + "); name " + filepath.Join(dir, "repo.git") + " itself"},
		"no commit yet":         {base("  repo: empty.git\n", gated, mine), "host.target: no branch main in " + filepath.Join(dir, "empty.git") + ": the repository has no commit yet; make a first one on main (git commit --allow-empty -m start, then push it there if this is a bare repository) and start again"},
		"no target":             {base("  repo: repo.git\n  target: trunk\n", gated, mine), "host.target: no branch trunk in " + filepath.Join(dir, "repo.git") + "; set host.target to one of its branches (main), or make trunk there (git branch trunk COMMIT)"},
		"not ci":                {base("  repo: repo.git\n", gated, fmt.Sprintf("  ci: [%q]\n", other)), "roles.ci: does not list the host's id " + hid.AgentID()},
		"not merger":            {base("  repo: repo.git\n", external, fmt.Sprintf("  ci: [%q]\n", hid.AgentID())), "roles.merger: does not list the host's id " + hid.AgentID()},
		"bad check":             {base("  repo: repo.git\n  checks: [\"make 'test\"]\n", gated, mine), `host.checks[0]: "make 'test" has an unclosed ' quote`},
		"check not in the tree": {base("  repo: repo.git\n  checks: [\"./check.sh\"]\n", gated, mine), "host.checks[0]: ./check.sh is not in main's tree, where checks find it (they run in a worktree of what would land): commit it to main, or change host.checks"},
		"check not on the PATH": {base("  repo: repo.git\n  checks: [\"no-such-tool-48 run\"]\n", gated, mine), "host.checks[0]: no-such-tool-48 is not on the checks' PATH ("},
		"no foreman":            {strings.Replace(base("  repo: repo.git\n", gated, mine), "identity: foreman.json", "identity: gone.json", 1), "host.coordinator: not set, and foreman's key (server.identity"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
			require.NoError(t, os.WriteFile(path, []byte(tc.yaml), 0o644))
			code, _, errOut := foreman(t, "host", path)
			assert.Equal(t, 1, code)
			assert.Contains(t, errOut, "foreman: "+tc.want)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
		})
	}
}

// foreman host --check-sandbox says what this machine enforces on checks
// and exits 0, or says why it cannot and exits 1.
func TestHostCheckSandbox(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "foreman.yaml")
	require.NoError(t, os.WriteFile(path, []byte("host:\n  sandbox_paths:\n    rw: [cache]\n"), 0o644))
	code, out, errOut := foreman(t, "host", "--check-sandbox", path)
	if code != 0 && os.Getenv("FOREMANTEST_REQUIRE_SANDBOX") == "" {
		t.Skipf("no sandbox on this machine: %s", errOut)
	}
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "host.sandbox: on: each check command runs confined:")
	assert.Contains(t, out, "landlock: ABI ")
	assert.Contains(t, out, "namespaces: pid, mount, ipc, network")
	assert.Contains(t, out, "limits: memory 4GiB (host.sandbox_limits.memory)")
	assert.Contains(t, out, filepath.Join(dir, "cache"))
	assert.Contains(t, out, "filesystem: the check's own root (pivot_root into a tmpfs), holding only: /usr ")
	assert.Contains(t, out, "descriptors: all but 0, 1 and 2 closed")
	assert.Contains(t, out, "memory: counted by the kernel (host.sandbox_memory: cgroup)")
	assert.Contains(t, out, "setuid and setgid bits: refused")
	assert.Regexp(t, `(?m)^  digest: sha256:[0-9a-f]{64} \(each landing's receipt records it\)$`, out)

	// The watcher, asked for by name, is said to be in force.
	require.NoError(t, os.WriteFile(path, []byte("host:\n  sandbox_memory: watcher\n"), 0o644))
	code, out, errOut = foreman(t, "host", "--check-sandbox", path)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "memory: polled by the host every 100 ms (host.sandbox_memory: watcher, weaker than a cgroup)")

	// A cache that would hand checks the configuration is refused.
	require.NoError(t, os.WriteFile(path, []byte("host:\n  sandbox_paths:\n    ro: [.]\n"), 0o644))
	code, _, errOut = foreman(t, "host", "--check-sandbox", path)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "host.sandbox: host.sandbox_paths.ro[0]: "+dir+" holds ")
}
