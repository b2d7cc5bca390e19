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
	require.NoError(t, withReceiver(&o, &config.Config{}, nopSink{}))
	assert.Nil(t, o.OTLP)

	path := filepath.Join(t.TempDir(), "otlp.secret")
	require.NoError(t, withReceiver(&o, &config.Config{Telemetry: config.Telemetry{Secret: path}}, nopSink{}))
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
