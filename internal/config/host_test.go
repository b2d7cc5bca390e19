package config

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	assert.Equal(t, 1, h.MaxParallel)
	assert.Equal(t, filepath.Join(dir, ".foreman/host/logs"), h.Logs)
	assert.Equal(t, filepath.Join(dir, ".foreman/host/ledger.jsonl"), h.Ledger)
	assert.Equal(t, filepath.Join(dir, ".foreman/host.json"), h.Identity)
	assert.Equal(t, []string{"GOFLAGS=-count=1", "HTTP_PROXY"}, h.Env)
	assert.Equal(t, int64(8<<20), h.LogLimit)
	assert.ErrorContains(t, c.RequireHost(), "rules.ci_gating: off, and rules.merge is accept: foreman host would have nothing to do")
	c.Rules.CIGating = true
	assert.NoError(t, c.RequireHost())
	c.Host.Repo = ""
	assert.ErrorContains(t, c.RequireHost(), "host.repo: not set")
}

func TestHostErrorsNameTheKey(t *testing.T) {
	for name, tc := range map[string]struct{ yaml, want string }{
		"target option": {"host:\n  target: -main\n", `host.target: "-main" is not a branch name: ref -main starts with -`},
		"target commit": {"host:\n  target: " + string(make40('a')) + "\n", "host.target:"},
		"target range":  {"host:\n  target: main..dev\n", "host.target:"},
		"check quote":   {"host:\n  checks: [\"make 'test\"]\n", "host.checks[0]: \"make 'test\" has an unclosed ' quote"},
		"check empty":   {"host:\n  checks: [\"make\", \"  \"]\n", "host.checks[1]:"},
		"parallel zero": {"host:\n  max_parallel: 0\n", "host.max_parallel: 0 is below the least allowed, 1"},
		"parallel many": {"host:\n  max_parallel: 1000\n", "host.max_parallel: 1000 is over the most allowed, 64"},
		"parallel word": {"host:\n  max_parallel: four\n", `host.max_parallel: "four" is not a whole number`},
		"rebase":        {"host:\n  auto_rebase: maybe\n", `host.auto_rebase: "maybe" is not on or off`},
		"env":           {"host:\n  env: [\"A B=1\"]\n", "host.env[0]:"},
		"name":          {"host:\n  name: the host\n", "host.name:"},
		"coordinator":   {"host:\n  coordinator: foreman\n", "host.coordinator:"},
		"log limit":     {"host:\n  log_limit: 10\n", "host.log_limit: 10 is below the least allowed, 1024"},
		"log url":       {"host:\n  log_url: ftp://x\n", "host.log_url:"},
		"unknown":       {"host:\n  checkz: []\n", "host.checkz: unknown key (did you mean host.checks?)"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(writeConfig(t, minimal+tc.yaml), nil, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

func make40(c byte) []byte {
	b := make([]byte, 40)
	for i := range b {
		b[i] = c
	}
	return b
}
