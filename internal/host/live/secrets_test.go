package live

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/host/sandbox"
	"github.com/agentforeman/foreman/internal/tooling/natstest"
)

// How the host signs in to NATS is as secret as its key: the sandbox
// grants no check the .creds file or the TLS key (not even through
// host.sandbox_paths), and the password, token and the creds' seed are
// redacted from logs and verdicts should host.env hand one to a check.
func TestNATSSecretsAreTheHosts(t *testing.T) {
	dir := t.TempDir()
	acct, err := nkeys.CreateAccount()
	require.NoError(t, err)
	user, err := nkeys.CreateUser()
	require.NoError(t, err)
	pub, _ := user.PublicKey()
	uj, err := jwt.NewUserClaims(pub).Encode(acct)
	require.NoError(t, err)
	seed, _ := user.Seed()
	creds, err := jwt.FormatUserConfig(uj, seed)
	require.NoError(t, err)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "nats"), 0o700))
	credsPath := filepath.Join(dir, "nats", "host.creds")
	require.NoError(t, os.WriteFile(credsPath, creds, 0o600))
	pki := natstest.NewPKI(t)
	cert, key := pki.Issue(t, "host", false)
	path := filepath.Join(dir, "foreman.yaml")
	require.NoError(t, os.WriteFile(path, []byte("cluster:\n  nats: nats://127.0.0.1:4222\n  creds: nats/host.creds\n  tls:\n    ca: "+pki.CA+"\n    cert: "+cert+"\n    key: "+key+"\n"), 0o600))
	c, err := config.Load(path, nil, nil)
	require.NoError(t, err)

	deny := map[string]string{}
	for _, d := range SandboxConfig(c, "").Deny {
		deny[d.Key] = d.Path
	}
	assert.Equal(t, credsPath, deny["cluster.creds"])
	assert.Equal(t, key, deny["cluster.tls.key"])
	if sandboxSetting(t) == "on" {
		_, err = sandbox.New(sandbox.Config{RO: []string{filepath.Join(dir, "nats")}, Deny: SandboxConfig(c, "").Deny, Home: t.TempDir()})
		require.Error(t, err, "a sandbox path holding the creds is refused")
		assert.Contains(t, err.Error(), "cluster.creds")
	}

	got := map[string]string{}
	for _, s := range secrets(c) {
		got[s.Name] = s.Value
	}
	assert.Equal(t, string(seed), got["cluster.creds"])

	t.Setenv(config.EnvNATSToken, "a-token-of-some-length")
	require.NoError(t, os.WriteFile(path, []byte("cluster:\n  nats: nats://127.0.0.1:4222\n"), 0o600))
	c, err = config.Load(path, nil, nil)
	require.NoError(t, err)
	got = map[string]string{}
	for _, s := range secrets(c) {
		got[s.Name] = s.Value
	}
	assert.Equal(t, "a-token-of-some-length", got[config.EnvNATSToken])
}
