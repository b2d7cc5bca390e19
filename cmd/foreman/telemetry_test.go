package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/otlp"
	"github.com/agentforeman/foreman/internal/web"
)

type nopSink struct{}

func (nopSink) Spend(context.Context, []coordinator.Spend) error { return nil }

// telemetry.secret serves the receiver on the board's listener, its secret
// made on first use; without it nothing takes exports.
func TestWithReceiver(t *testing.T) {
	var o web.Options
	none, err := web.TelemetrySecret(&config.Config{})
	require.NoError(t, err)
	web.WithReceiver(&o, none, nopSink{})
	assert.Nil(t, o.OTLP)

	path := filepath.Join(t.TempDir(), "otlp.secret")
	made, err := web.TelemetrySecret(&config.Config{Telemetry: config.Telemetry{Secret: path}})
	require.NoError(t, err)
	web.WithReceiver(&o, made, nopSink{})
	require.NotNil(t, o.OTLP)
	assert.Len(t, o.Collectors, 1)
	secret, err := os.ReadFile(path)
	require.NoError(t, err)
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	srv := httptest.NewServer(web.New(o).Handler())
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+otlp.MetricsPath, strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+otlp.Token(secret, "@b1"))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "an empty export with a token made from the secret")
}

// With telemetry.secret, --print-config also prints, on stderr, the
// exporter environment of the agent's own process: its token verifies
// under the secret and names the agent by its key's sender id.
func TestMCPPrintsTheExporterEnvironment(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	writeFile(t, dir, "foreman.yaml", "server:\n  channel: \"#build\"\ntelemetry:\n  secret: .foreman/otlp.secret\nhttp:\n  listen: 127.0.0.1:9191\n")
	code, out, errOut := foreman(t, "mcp", "--print-config", "--identity", ".foreman/ada.json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"mcpServers"`, "stdout stays the client's JSON")
	id, err := agentchatLoad(filepath.Join(dir, ".foreman", "ada.json"))
	require.NoError(t, err)
	secret, err := os.ReadFile(filepath.Join(dir, ".foreman", "otlp.secret"))
	require.NoError(t, err)
	assert.Contains(t, errOut, "export OTEL_EXPORTER_OTLP_ENDPOINT='http://127.0.0.1:9191'")
	assert.Contains(t, errOut, "export OTEL_RESOURCE_ATTRIBUTES='foreman.agent="+id+"'")
	assert.Contains(t, errOut, "export OTEL_EXPORTER_OTLP_HEADERS='Authorization=Bearer "+otlp.Token(secret, id)+"'")
}

func agentchatLoad(path string) (string, error) {
	id, err := agentchat.LoadIdentity(path)
	if err != nil {
		return "", err
	}
	return id.AgentID(), nil
}

// foreman status says what the build and each agent spent, against their
// budgets, and each component's spend in its notes (issue 47).
func TestStatusShowsSpend(t *testing.T) {
	v := midBuild()
	v.Spent, v.Budget = coordinator.Cost{USD: 1_500_000, Tokens: 3000}, &coordinator.Limit{USD: 10_000_000, HasUSD: true}
	v.Agents = []coordinator.AgentView{{ID: "@b2", Spent: coordinator.Cost{USD: 1_500_000, Tokens: 3000}, Holds: "api"}}
	v.Components[1].Spent = coordinator.Cost{USD: 1_250_000, Tokens: 2000}
	v.Components[1].Budget = &coordinator.Limit{USD: 2_000_000, HasUSD: true}
	ts := statusServer(t, v)
	code, out, errOut := foreman(t, "status", "--board", ts.URL)
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(out, "\n")
	assert.Equal(t, "spent $1.50 and 3000 tokens of $10.00; bob @b2 $1.50 and 3000 tokens (on api)", lines[1])
	assert.Contains(t, out, "overlaps web; failed audits 1/3; spent $1.25 and 2000 tokens of $2.00")
}
