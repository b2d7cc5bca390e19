package up

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/agents"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/otlp"
)

// upConfig is a build's config in a directory of its own, its board at
// listen, with telemetry.secret (holding secret, when not nil).
func upConfig(t *testing.T, listen string, secret []byte) *config.Config {
	t.Helper()
	dir := t.TempDir()
	fid, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	require.NoError(t, fid.Save(filepath.Join(dir, ".foreman", "identity.json")))
	op, err := agentchat.NewIdentity("olga")
	require.NoError(t, err)
	if secret != nil {
		require.NoError(t, os.WriteFile(filepath.Join(dir, ".foreman", "otlp.secret"), secret, 0o600))
	}
	file := filepath.Join(dir, "foreman.yaml")
	require.NoError(t, os.WriteFile(file, fmt.Appendf(nil, `server:
  url: ws://127.0.0.1:1
build:
  name: shop
  components:
    - name: db
roles:
  operators: [%q]
journal:
  path: .foreman/journal
http:
  listen: %q
telemetry:
  secret: .foreman/otlp.secret
`, op.AgentID(), listen), 0o644))
	c, err := config.Load(file, nil, nil)
	require.NoError(t, err)
	return c
}

// stillProcess is an agent's process that runs until it is signalled.
type stillProcess chan os.Signal

func (p stillProcess) Pid() int                 { return 7 }
func (p stillProcess) Signal(s os.Signal) error { p <- s; return nil }
func (p stillProcess) Wait() error              { return fmt.Errorf("signal: %v", <-p) }

// Each agent reports its spend to the receiver where up really serves it,
// whatever http.listen says: a free port is the one taken, every
// interface is this machine's address; and its token is accepted there.
func TestAgentsReachTheReceiverWhereverTheBoardListens(t *testing.T) {
	for _, listen := range []string{":0", "0.0.0.0:0", ":" + freePortNow(t), "0.0.0.0:" + freePortNow(t)} {
		t.Run(listen, func(t *testing.T) {
			c := upConfig(t, listen, nil)
			specs := make(chan agents.LaunchSpec, 1)
			u, err := Prepare(context.Background(), Options{Config: c, Logger: zerolog.Nop(), Stderr: io.Discard, Listen: "127.0.0.1:0",
				Agents: []config.Agent{{Name: "b1", Role: config.AgentBuilder, Command: []string{"true"}}},
				Launch: func(spec agents.LaunchSpec) (agents.Process, error) {
					specs <- spec
					return make(stillProcess, 2), nil
				}})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- u.Run(ctx, io.Discard) }()
			defer func() { cancel(); <-done }()
			spec := <-specs
			env := map[string]string{}
			for _, kv := range spec.Env {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
			endpoint := env["OTEL_EXPORTER_OTLP_ENDPOINT"]
			assert.Regexp(t, `^http://127\.0\.0\.1:[1-9][0-9]*$`, endpoint)
			req, err := http.NewRequest(http.MethodPost, endpoint+otlp.MetricsPath, strings.NewReader("{}"))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			auth, _ := strings.CutPrefix(env["OTEL_EXPORTER_OTLP_HEADERS"], "Authorization=")
			req.Header.Set("Authorization", auth)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err, "the agent's exporter cannot reach %s", endpoint)
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode, "its token is the receiver's")
		})
	}
}

// freePortNow is a port nothing listens on (a moment ago).
func freePortNow(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	require.NoError(t, err)
	return port
}

// A secret foreman cannot use stops up in one line before anything is
// made: no workspace, no clone, no journal.
func TestABadSecretIsRefusedBeforeAnythingIsMade(t *testing.T) {
	c := upConfig(t, "127.0.0.1:0", []byte("short"))
	_, err := Prepare(context.Background(), Options{Config: c, Logger: zerolog.Nop(), Stderr: io.Discard, Listen: "127.0.0.1:0",
		Agents: []config.Agent{{Name: "b1", Role: config.AgentBuilder, Command: []string{"true"}}},
		Launch: func(agents.LaunchSpec) (agents.Process, error) { return make(stillProcess, 2), nil }})
	require.Error(t, err)
	assert.Equal(t, "telemetry.secret in "+c.File+": "+c.Telemetry.Secret+" holds 5 bytes; a secret needs at least 16 (delete it and foreman makes one)", err.Error())
	assert.NoDirExists(t, agents.Root(c), "no agent's workspace")
	assert.NoDirExists(t, c.Journal, "no journal")
}
