package otlp

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/coordinator"
)

// npmExporters installs testdata/npm (the JS SDK's exporters, pinned) once
// per machine, in the user's cache, and returns its directory. Without
// npm the test is skipped, except where FOREMANTEST_REQUIRE_NPM says npm
// must be there (CI installs it: .ci/run).
func npmExporters(t *testing.T) string {
	if _, err := exec.LookPath("npm"); err != nil {
		if os.Getenv("FOREMANTEST_REQUIRE_NPM") != "" {
			t.Fatalf("npm is required here: %v", err)
		}
		t.Skipf("npm is not installed here (CI installs it: .ci/run): %v", err)
	}
	pkg, err := os.ReadFile("testdata/npm/package.json")
	require.NoError(t, err)
	script, err := os.ReadFile("testdata/npm/export.js")
	require.NoError(t, err)
	cache, err := os.UserCacheDir()
	require.NoError(t, err)
	dir := filepath.Join(cache, "foreman", fmt.Sprintf("otlp-npm-%x", sha256.Sum256(pkg))[:len("otlp-npm-")+16])
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "package.json"), pkg, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "export.js"), script, 0o644))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil {
		cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--ignore-scripts")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "npm install: %s", out)
	}
	return dir
}

// Claude Code's metric names through the JS SDK's own OTLP exporters, as
// Claude Code exports them: JSON and protobuf, cumulative and delta. The
// spend lands on the component its agent holds.
func TestNPMExporters(t *testing.T) {
	dir := npmExporters(t)
	for _, kind := range []string{"json", "proto"} {
		for _, temp := range []string{"cumulative", "delta"} {
			t.Run(kind+"/"+temp, func(t *testing.T) {
				sink := newSink(t)
				r, srv := serve(t, sink, Options{})
				sink.hear(t, "@b1", "CLAIM api")
				cmd := exec.Command("node", "export.js", srv.URL, tokB1, "@b1", kind, temp)
				cmd.Dir = dir
				out, err := cmd.CombinedOutput()
				require.NoError(t, err, "%s", out)
				assert.Equal(t, coordinator.Cost{USD: 750_000, Tokens: 1200}, sink.view().Components[0].Spent, "%s", out)
				assert.GreaterOrEqual(t, r.Counts().Exports, int64(2), "two flushes at least (a cumulative reader sends again at shutdown)")

				cmd = exec.Command("node", "export.js", srv.URL, "not-a-token", "@b1", kind, temp)
				cmd.Dir = dir
				_, err = cmd.CombinedOutput()
				require.NoError(t, err)
				assert.GreaterOrEqual(t, r.Counts().Refused[RefusedToken], int64(2), "refused, and counted")
				assert.Equal(t, coordinator.Cost{USD: 750_000, Tokens: 1200}, sink.view().Components[0].Spent)
			})
		}
	}
}
