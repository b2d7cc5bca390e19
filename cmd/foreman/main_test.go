package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain runs cmd/foreman's tests; the test binary is also the
// spending agent of TestABudgetHoldStopsTheAgentsProcess (spender): with
// SPEND_ON set it is one.
func TestMain(m *testing.M) {
	if c := os.Getenv(spendOnEnv); c != "" {
		os.Exit(spender(c))
	}
	os.Exit(m.Run())
}

// foreman runs the CLI in-process and returns its exit code and output.
func foreman(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestVersion(t *testing.T) {
	code, out, _ := foreman(t, "version")
	assert.Equal(t, 0, code)
	assert.Regexp(t, `^foreman v\d+\.\d+\.\d+`, out, "a module version, stamped or not")
}

func TestValidateExample(t *testing.T) {
	code, out, errOut := foreman(t, "validate", "../../config.example.yaml")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "build bookshop: 7 components, no cycles")
	assert.Contains(t, out, "1. db")
	assert.Contains(t, out, "cart      after auth, catalog")
}

func TestValidateCycle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cycle.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`
build:
  name: loop
  components:
    - name: a
      depends_on: [b]
    - name: b
      depends_on: [c]
    - name: c
      depends_on: [a]
`), 0o644))
	code, out, _ := foreman(t, "validate", path)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "dependency cycle: a -> b -> c -> a")
}

func TestValidateWarnsOfRedactedNames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kiosk.yaml")
	require.NoError(t, os.WriteFile(path, []byte("build:\n  name: kiosk\n  components:\n    - name: kiosk-paymentterminaldriver\n"), 0o644))
	code, out, errOut := foreman(t, "validate", path)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `warning: component "kiosk-paymentterminaldriver" looks like a secret`)
}

func TestValidateBadKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(path, []byte("build:\n  components:\n    - name: a\nrules:\n  audit_atempts: 2\n"), 0o644))
	code, _, errOut := foreman(t, "validate", path)
	assert.Equal(t, 1, code)
	assert.Equal(t, "foreman: rules.audit_atempts: unknown key (did you mean rules.audit_attempts?)\n", errOut)
}

func TestValidateOwlSpec(t *testing.T) {
	path := filepath.Join(t.TempDir(), "owl.yaml")
	spec, err := filepath.Abs("../../examples/bookshop")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte("build:\n  name: bookshop\n  spec: "+spec+"\n"), 0o644))
	code, out, errOut := foreman(t, "validate", path)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "build.spec "+spec+": 11 dependency bullets: 9 name components (9 dependencies), 0 say none, 2 are notes (-v lists them)\n")
	assert.Contains(t, out, "mailer    after payments")
}

func TestModuleVersion(t *testing.T) {
	assert.Equal(t, "v9.9.9", moduleVersion("v9.9.9", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}), "set at build time")
	assert.Equal(t, "v1.2.3", moduleVersion("", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}), "go install ...@v1.2.3")
	assert.Equal(t, release+"-devel, without version control information (built with -buildvcs=false, or outside the repository)",
		moduleVersion("", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}), "-buildvcs=false: the source's release")
	assert.Equal(t, release+"-devel (no build information)", moduleVersion("", nil))
	assert.Equal(t, release+"-devel (0123456789ab 2026-05-01T12:00:00Z, modified)", moduleVersion("", &debug.BuildInfo{
		Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-05-01T12:00:00Z"}, {Key: "vcs.modified", Value: "true"},
		},
	}))
}
