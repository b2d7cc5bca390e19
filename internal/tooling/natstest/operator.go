package natstest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/require"
)

// Operator is a NATS server in operator mode, as Synadia's and most
// deployments run: accounts and users are JWTs an operator signed, and a
// process signs in with a .creds file (its user's JWT and nkey seed). TLS
// with client certificates, as the example configuration has. The users'
// permissions are the example configuration's, role by role.
type Operator struct {
	*Server
	PKI     *PKI
	account nkeys.KeyPair
	perms   map[string]*server.Permissions
}

// StartOperator runs a server in operator mode on 127.0.0.1, with one
// account for foreman whose JetStream has no limits.
func StartOperator(t *testing.T) *Operator {
	t.Helper()
	example, pki, _ := exampleOptions(t, nil)
	perms := map[string]*server.Permissions{}
	for _, u := range example.Users {
		perms[u.Username] = u.Permissions
	}
	op, err := nkeys.CreateOperator()
	require.NoError(t, err)
	opPub, _ := op.PublicKey()
	oc := jwt.NewOperatorClaims(opPub)
	oc.Name = "foreman-test"
	opJWT, err := oc.Encode(op)
	require.NoError(t, err)
	oclaims, err := jwt.DecodeOperatorClaims(opJWT)
	require.NoError(t, err)

	resolver := &server.MemAccResolver{}
	account := func(name string, js bool) (nkeys.KeyPair, string) {
		kp, err := nkeys.CreateAccount()
		require.NoError(t, err)
		pub, _ := kp.PublicKey()
		ac := jwt.NewAccountClaims(pub)
		ac.Name = name
		if js {
			ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
		}
		aj, err := ac.Encode(op)
		require.NoError(t, err)
		require.NoError(t, resolver.Store(pub, aj))
		return kp, pub
	}
	_, sysPub := account("SYS", false)
	acc, _ := account("FOREMAN", true)

	opts := *example
	opts.Users, opts.Nkeys, opts.Accounts = nil, nil, nil
	opts.TrustedOperators = []*jwt.OperatorClaims{oclaims}
	opts.AccountResolver = resolver
	opts.SystemAccount = sysPub
	opts.ServerName = "operator"
	o := &Operator{Server: &Server{t: t, opts: opts}, PKI: pki, account: acc, perms: perms}
	o.Server.Start()
	t.Cleanup(o.Server.Stop)
	return o
}

// Creds writes a .creds file for a user of role (foreman, host, worker,
// reader) with that role's permissions in the example configuration.
func (o *Operator) Creds(t testing.TB, role string) string {
	t.Helper()
	p, ok := o.perms[role]
	require.True(t, ok, "the example configuration has no user %s", role)
	user, err := nkeys.CreateUser()
	require.NoError(t, err)
	pub, _ := user.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Name = role
	if p != nil {
		if p.Publish != nil {
			uc.Pub.Allow.Add(p.Publish.Allow...)
			uc.Pub.Deny.Add(p.Publish.Deny...)
		}
		if p.Subscribe != nil {
			uc.Sub.Allow.Add(p.Subscribe.Allow...)
			uc.Sub.Deny.Add(p.Subscribe.Deny...)
		}
	}
	uj, err := uc.Encode(o.account)
	require.NoError(t, err)
	seed, err := user.Seed()
	require.NoError(t, err)
	creds, err := jwt.FormatUserConfig(uj, seed)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), role+".creds")
	require.NoError(t, os.WriteFile(path, creds, 0o600))
	return path
}

// Client is a certificate and key the CA signed for a client.
func (o *Operator) Client(t testing.TB, name string) (cert, key string) {
	return o.PKI.Issue(t, name, false)
}
