package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/checkspec"
)

func TestHostDefaultsAndPaths(t *testing.T) {
	path := writeConfig(t, minimal+"host:\n  repo: repo.git\n  checks: [\"make test\", \"sh -c 'go vet ./... && echo ok'\"]\n  env: [GOFLAGS=-count=1, HTTP_PROXY]\n")
	c, err := Load(path, nil, nil)
	require.NoError(t, err)
	dir := filepath.Dir(path)
	h := c.Host
	assert.Equal(t, filepath.Join(dir, "repo.git"), h.Repo, "relative to the file")
	assert.Equal(t, "main", h.Target)
	assert.Equal(t, [][]string{{"make", "test"}, {"sh", "-c", "go vet ./... && echo ok"}}, h.Checks)
	assert.True(t, h.AutoRebase)
	assert.Equal(t, LandMerge, h.LandAs)
	assert.Equal(t, 1, h.MaxParallel)
	assert.Equal(t, []int{1, 1, 0}, []int{h.Batch, h.BatchMin, h.FailureDepth}, "no batches, no failure waits")
	assert.Equal(t, time.Minute, h.BatchWait)
	assert.Equal(t, filepath.Join(dir, ".foreman/host/logs"), h.Logs)
	assert.Equal(t, filepath.Join(dir, ".foreman/host/ledger.jsonl"), h.Ledger)
	assert.Equal(t, filepath.Join(dir, ".foreman/host.json"), h.Identity)
	assert.Equal(t, []string{"GOFLAGS=-count=1", "HTTP_PROXY"}, h.Env)
	assert.Equal(t, int64(8<<20), h.LogLimit)
	assert.False(t, h.Unconfined, "the sandbox is on by default")
	assert.Equal(t, "none", h.SandboxNet)
	assert.Equal(t, "cgroup", h.SandboxMemory)
	assert.Empty(t, h.SandboxRO)
	assert.Equal(t, checkspec.Limits{Memory: checkspec.DefaultMemory, Tasks: checkspec.DefaultTasks, FileSize: checkspec.DefaultFileSize,
		Disk: checkspec.DefaultDisk, Caches: checkspec.DefaultCaches}, h.SandboxLimits)
	assert.ErrorContains(t, c.RequireHost(), "rules.ci_gating: off, and rules.merge is accept: foreman host would have nothing to do")
	c.Rules.CIGating = true
	assert.NoError(t, c.RequireHost())
	c.Host.Repo = ""
	assert.ErrorContains(t, c.RequireHost(), "host.repo: not set")
}

func TestHostErrorsNameTheKey(t *testing.T) {
	for name, tc := range map[string]struct{ yaml, want string }{
		"target option":  {"host:\n  target: -main\n", `host.target: "-main" is not a branch name: ref -main starts with -`},
		"target commit":  {"host:\n  target: " + string(make40('a')) + "\n", "host.target:"},
		"target range":   {"host:\n  target: main..dev\n", "host.target:"},
		"check quote":    {"host:\n  checks: [\"make 'test\"]\n", "host.checks[0]: \"make 'test\" has an unclosed ' quote"},
		"check empty":    {"host:\n  checks: [\"make\", \"  \"]\n", "host.checks[1]:"},
		"parallel zero":  {"host:\n  max_parallel: 0\n", "host.max_parallel: 0 is below the least allowed, 1"},
		"parallel many":  {"host:\n  max_parallel: 1000\n", "host.max_parallel: 1000 is over the most allowed, 64"},
		"parallel word":  {"host:\n  max_parallel: four\n", `host.max_parallel: "four" is not a whole number`},
		"batch min":      {"host:\n  batch:\n    max: 4\n    min: 5\n", "host.batch.min: 5 is over the most allowed, 4"},
		"batch wait":     {"host:\n  batch:\n    wait: soon\n", `host.batch.wait: "soon" is not a duration like 1s or 500ms`},
		"depth many":     {"host:\n  failure_depth: 17\n", "host.failure_depth: 17 is over the most allowed, 16"},
		"rebase":         {"host:\n  auto_rebase: maybe\n", `host.auto_rebase: "maybe" is not on or off`},
		"env":            {"host:\n  env: [\"A B=1\"]\n", "host.env[0]:"},
		"name":           {"host:\n  name: the host\n", "host.name:"},
		"coordinator":    {"host:\n  coordinator: foreman\n", "host.coordinator:"},
		"log limit":      {"host:\n  log_limit: 10\n", "host.log_limit: 10 is below the least allowed, 1024"},
		"log url":        {"host:\n  log_url: ftp://x\n", "host.log_url:"},
		"unknown":        {"host:\n  checkz: []\n", "host.checkz: unknown key (did you mean host.checks?)"},
		"no shell":       {"host:\n  checks: [\"test -f README && echo ok\"]\n", `host.checks[0]: "test -f README && echo ok" has && outside quotes, and checks run with no shell to read it; write sh -c 'test -f README && echo ok'`},
		"no shell pipe":  {"host:\n  checks: [\"make test\", \"go test ./... | tee out\"]\n", "host.checks[1]: \"go test ./... | tee out\" has | outside quotes"},
		"sandbox":        {"host:\n  sandbox: maybe\n", `host.sandbox: "maybe" is not on or off`},
		"sandbox net":    {"host:\n  sandbox_net: loopback-deny\n", `host.sandbox_net: "loopback-deny" is not none`},
		"sandbox memory": {"host:\n  sandbox_memory: rss\n", `host.sandbox_memory: "rss" is not cgroup (the kernel counts`},
		"disk too small": {"host:\n  sandbox_limits:\n    disk: 1MiB\n", "host.sandbox_limits.disk: 1MiB is below the least allowed, 16MiB"},
		"land as":        {"host:\n  land_as: rebase\n", `host.land_as: "rebase" is not merge (a merge commit`},
		"sandbox paths":  {"host:\n  sandbox_paths: [/x]\n", "host.sandbox_paths: unknown key"},
		"tilde user":     {"host:\n  sandbox_paths:\n    ro: [\"~bob/x\"]\n", "host.sandbox_paths.ro[0]: ~bob/x: only ~ (the host user's HOME) is expanded"},
		"memory":         {"host:\n  sandbox_limits:\n    memory: lots\n", `host.sandbox_limits.memory: "lots" is not a size like 4GiB`},
		"memory small":   {"host:\n  sandbox_limits:\n    memory: 1000\n", "host.sandbox_limits.memory: 1000 is below the least allowed, 1MiB"},
		"processes":      {"host:\n  sandbox_limits:\n    processes: 3\n", "host.sandbox_limits.processes: 3 is below the least allowed, 16"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(writeConfig(t, minimal+tc.yaml), nil, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

func TestHostSandboxPaths(t *testing.T) {
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	path := writeConfig(t, minimal+"host:\n  sandbox: off\n  sandbox_net: all\n  sandbox_paths:\n    ro: [tools, /opt/sdk]\n    rw: [~/.cache/go-build, \"~\"]\n  sandbox_limits:\n    memory: 2GiB\n    processes: 100\n    file_size: 64MiB\n    disk: 512MiB\n")
	c, err := Load(path, nil, nil)
	require.NoError(t, err)
	h := c.Host
	assert.True(t, h.Unconfined)
	assert.Equal(t, "all", h.SandboxNet)
	assert.Equal(t, []string{filepath.Join(filepath.Dir(path), "tools"), "/opt/sdk"}, h.SandboxRO, "relative to the file")
	assert.Equal(t, []string{filepath.Join(home, ".cache/go-build"), home}, h.SandboxRW, "~ is the HOME (foreman host refuses all of it later)")
	assert.Equal(t, checkspec.Limits{Memory: 2 << 30, Tasks: 100, FileSize: 64 << 20, Disk: 512 << 20, Caches: checkspec.DefaultCaches}, h.SandboxLimits)
}

func make40(c byte) []byte {
	b := make([]byte, 40)
	for i := range b {
		b[i] = c
	}
	return b
}
