package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/testkit/gittest"
)

// specConfig writes a config that builds the owl spec at dir, with an
// operator, so that validate has nothing to warn of but the spec.
func specConfig(t *testing.T, dir string) string {
	t.Helper()
	abs, err := filepath.Abs(dir)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "foreman.yaml")
	require.NoError(t, os.WriteFile(path, []byte("build:\n  name: tidepool\n  spec: "+abs+"\nroles:\n  operators: [\"@0123456789abcdef\"]\n"), 0o644))
	return path
}

// A spec written as prose: one line per component, with the words that
// named each dependency, and one line of summary; -v lists every bullet.
func TestValidateSpecWrittenAsProse(t *testing.T) {
	spec, err := filepath.Abs("../../internal/config/testdata/tidepool")
	require.NoError(t, err)
	path := specConfig(t, spec)
	code, out, errOut := foreman(t, "validate", path)
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	assert.LessOrEqual(t, len(lines), 12+2, "at most a line per component, and a summary:\n%s", out)
	assert.Equal(t, "build.spec "+spec+": 31 dependency bullets: 16 name components (16 dependencies), 1 says none, 14 are notes (-v lists them)", lines[0])
	assert.Equal(t, "build tidepool: 12 components, no cycles; build order:", lines[1])
	assert.Contains(t, lines, `  5. api        after store, queue ("job queue"), auth ("auth middleware"), blobs`)
	assert.Contains(t, lines, `  8. worker     after queue ("job-queue leases"), sandbox, blobs`)
	assert.Contains(t, lines, ` 12. dashboard  after client ("tidepool-client")`)

	code, out, errOut = foreman(t, "validate", "-v", path)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "14 are notes\n", "nothing to point at when they are listed")
	assert.Contains(t, out, "\n  components.md:201: worker: \"git on the worker host\" -> note (names no component but worker itself)\n")
	assert.Contains(t, out, "\n  components.md:153: sandbox: \"nothing (wraps the host's container runtime through its socket)\" -> no dependency\n")
	assert.Contains(t, out, "\n  components.md:198: worker: \"job-queue leases (the queue component)\" -> queue\n")
	assert.Len(t, strings.Split(strings.TrimSuffix(out, "\n"), "\n"), 12+2+31, "and a line per bullet")
}

// A cycle made from prose is left out with a warning that names its
// bullets, and the build still has an order.
func TestValidateSpecProseCycle(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "components.md"), []byte(`## ledger

depends on:
- the archive of old entries

## archive

depends on:
- ledger snapshots (nightly)
- `+"`ledger`"+`
`), 0o644))
	code, out, errOut := foreman(t, "validate", specConfig(t, dir))
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "warning: components.md:4: read as prose, these bullets make a dependency cycle ledger -> archive -> ledger: left out so that the build can start")
	assert.Contains(t, out, "1 left out to break a cycle")
	assert.Contains(t, out, "  2. archive  after ledger\n", "the literal bullet stays")
}

// init --spec shows what it read, as validate does.
func TestInitSpecShowsTheReading(t *testing.T) {
	spec, err := filepath.Abs("../../internal/config/testdata/tidepool")
	require.NoError(t, err)
	t.Chdir(t.TempDir())
	copyDir(t, spec, "owl")
	code, out, errOut := foreman(t, "init", "--name", "olga", "--spec", "owl")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "wrote foreman.yaml: build tidepool (12 components)")
	assert.Contains(t, out, "\nbuild.spec owl: 31 dependency bullets: 16 name components (16 dependencies), 1 says none, 14 are notes (foreman validate -v lists them)\n")
	assert.Contains(t, out, ` 11. cli        after client ("@tidepool/client")`)
	assert.NotContains(t, out, "components.md:", "bullets are listed with -v only")

	code, out, errOut = foreman(t, "init", "--name", "olga", "--spec", "owl", "--force", "-v")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "\n  components.md:260: cli: \"@tidepool/client (all calls go through it)\" -> client\n")
}

// A path the checks may write that holds host.repo, host.logs or the
// journal, or lies in host.repo, is refused by validate, in one line
// naming the key, before anything runs (issue 37).
func TestValidateRefusesSandboxPathsOverTheHostsFiles(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "shop.git")
	require.NoError(t, os.MkdirAll(repo, 0o755))
	for rw, want := range map[string]string{
		repo:                              "host.sandbox_paths.rw[0]: " + repo + " holds or lies inside host.repo",
		filepath.Join(repo, "cache"):      "host.sandbox_paths.rw[0]: " + filepath.Join(repo, "cache") + " holds or lies inside host.repo",
		filepath.Join(dir, "logs"):        "holds host.logs",
		filepath.Join(dir, "journal"):     "holds journal.path",
		filepath.Join(dir, "journal/seg"): "is inside journal.path",
	} {
		config := writeFile(t, dir, "foreman.yaml", fmt.Sprintf(`build:
  name: shop
  components: [{name: db}]
journal:
  path: %s
rules:
  ci_gating: on
host:
  repo: %s
  logs: %s
  sandbox_paths:
    rw: [%q]
`, filepath.Join(dir, "journal"), repo, filepath.Join(dir, "logs"), rw))
		code, _, errOut := foreman(t, "validate", config)
		oneLine(t, code, errOut, want)
	}
}

// validate checks host.checks' programs as foreman host will run them: a
// program of the repository as host.target holds it, in one line that
// says what to do (issue 48: a check.sh committed without its executable
// bit was every builder's failure, five times each).
func TestValidateChecksTheChecksPrograms(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "shop")
	git := func(args ...string) { t.Helper(); gittest.Git(t, repo, args...) }
	gittest.Init(t, repo)
	require.NoError(t, os.WriteFile(filepath.Join(repo, "check.sh"), []byte("#!/bin/sh\nexit 0\n"), 0o644))
	git("add", "check.sh")
	git("commit", "-m", "start")
	config := writeFile(t, dir, "foreman.yaml", fmt.Sprintf(`build:
  name: shop
  components: [{name: db}]
roles:
  operators: ["@0123456789abcdef"]
rules:
  ci_gating: on
host:
  repo: %s
  checks: ["./check.sh"]
`, repo))
	code, _, errOut := foreman(t, "validate", config)
	oneLine(t, code, errOut, "host.checks[0]: ./check.sh is not executable in main's tree: git update-index --chmod=+x check.sh, commit it to main, then start again")

	git("update-index", "--chmod=+x", "check.sh")
	git("commit", "-m", "executable")
	code, out, errOut := foreman(t, "validate", config)
	require.Equal(t, 0, code, "%s%s", out, errOut)
}
