package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/natsauth"
	"github.com/agentforeman/foreman/internal/tooling/natstest"
	"github.com/agentforeman/foreman/internal/workq"
)

// foreman nats init makes the accounts once; foreman nats creds makes a
// worker's .creds and adds its key to the host's trust file; mistakes are
// one line.
func TestNatsInitAndCreds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "foreman")
	code, out, errOut := foreman(t, "nats", "init", dir)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "made the accounts in "+dir)
	for _, f := range []string{"accounts.conf", "operator.jwt", "keys/worker.nk", "keys/account.nk"} {
		assert.FileExists(t, filepath.Join(dir, f))
	}
	st, err := os.Stat(filepath.Join(dir, "keys", "worker.nk"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "a seed is a secret")
	code, _, errOut = foreman(t, "nats", "init", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "the accounts are made already")

	trust := filepath.Join(t.TempDir(), "workers")
	creds := filepath.Join(t.TempDir(), "w1.creds")
	code, _, errOut = foreman(t, "nats", "creds", dir, "--role", "worker", "--name", "w1", "--labels", "gpu", "--trust", trust, "-o", creds)
	require.Equal(t, 0, code, errOut)
	data, err := os.ReadFile(creds)
	require.NoError(t, err)
	kp, name, err := natsauth.Seed(data)
	require.NoError(t, err)
	assert.Equal(t, "w1", name)
	pub, _ := kp.PublicKey()
	tr, err := workq.OpenTrust(trust)
	require.NoError(t, err)
	assert.Equal(t, pub, tr.Key("w1"), "the host trusts it by its key")

	for _, bad := range []struct {
		args []string
		line string
	}{
		{[]string{"--role", "boss", "--name", "x"}, `role "boss" is none of foreman, host, worker, reader`},
		{[]string{"--role", "worker", "--name", "w.1"}, `name "w.1"`},
		{[]string{"--role", "worker", "--name", "w2", "--labels", "GPU"}, `label "GPU": lower-case`},
		{[]string{"--role", "host", "--name", "h1", "--labels", "gpu"}, "--labels, --unconfined and --trust are for --role worker"},
		{[]string{"--role", "host", "--name", "h1"}, "a host's user is made for the builds it leads"},
		{[]string{"--role", "foreman", "--name", "f1"}, "a foreman's user is made for the builds it leads"},
		{[]string{"--role", "host", "--name", "h1", "--builds", "Shop"}, `build "Shop": a host's NATS user names its builds as tags`},
		{[]string{"--role", "worker", "--name", "w1", "--builds", "shop"}, "--builds is for --role host or foreman"},
	} {
		code, _, errOut := foreman(t, append([]string{"nats", "creds", dir}, bad.args...)...)
		assert.Equal(t, 1, code, bad.args)
		assert.Contains(t, errOut, bad.line)
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)
	}
}

// foreman nats revoke takes a worker out of a running server (the example
// configuration as shipped, TLS and all) with no restart: its connection
// closes and it cannot sign in again; a name never made, or a server not
// reached, is one line.
func TestNatsRevoke(t *testing.T) {
	s := natstest.StartSecured(t)
	creds := s.Creds(t, natsauth.RoleWorker, "w1")
	cert, key := s.Client(t, "w1")
	closed := make(chan struct{})
	wc, err := nats.Connect(s.URL(), nats.UserCredentials(creds), nats.RootCAs(s.PKI.CA), nats.ClientCert(cert, key),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }), nats.MaxReconnects(-1), nats.ReconnectWait(10*time.Millisecond))
	require.NoError(t, err)
	defer wc.Close()

	code, _, errOut := foreman(t, "nats", "revoke", s.Dir, "w7", "--nats", s.URL())
	assert.Equal(t, 1, code)
	assert.Equal(t, `foreman: no user named "w7" was made in `+s.Dir+" (foreman nats creds records each user it makes in users)\n", errOut)

	acert, akey := s.Client(t, "admin")
	code, out, errOut := foreman(t, "nats", "revoke", s.Dir, "w1", "--nats", s.URL(), "--tls-ca", s.PKI.CA, "--tls-cert", acert, "--tls-key", akey)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "the server at "+s.URL()+" took it")
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("the revoked worker's connection was not closed")
	}
	_, err = nats.Connect(s.URL(), nats.UserCredentials(creds), nats.RootCAs(s.PKI.CA), nats.ClientCert(cert, key))
	require.Error(t, err, "it signed in again")

	code, _, errOut = foreman(t, "nats", "revoke", s.Dir, "w1", "--nats", s.URL(), "--tls-ca", s.PKI.CA)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "--nats: cannot reach NATS at "+s.URL()+" as the system account's user")
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)
}
