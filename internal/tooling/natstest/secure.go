package natstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/natsauth"
)

// PKI is a certificate authority made in the test, and the certificates it
// signs for 127.0.0.1: nothing committed, nothing valid after the test.
type PKI struct {
	Dir string
	CA  string // the CA's certificate, PEM
	ca  *x509.Certificate
	key *ecdsa.PrivateKey
	n   int64
}

// NewPKI makes a CA in a temporary directory.
func NewPKI(t testing.TB) *PKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "foreman test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	p := &PKI{Dir: t.TempDir(), ca: ca, key: key, n: 1}
	p.CA = p.write(t, "ca.pem", "CERTIFICATE", der)
	return p
}

// Issue makes a certificate for name signed by the CA, for a server on
// 127.0.0.1 or a client, and returns the paths of it and its key.
func (p *PKI) Issue(t testing.TB, name string, server bool) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	p.n++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.n), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost"}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &k.PublicKey, p.key)
	require.NoError(t, err)
	kder, err := x509.MarshalPKCS8PrivateKey(k)
	require.NoError(t, err)
	return p.write(t, name+".pem", "CERTIFICATE", der), p.write(t, name+"-key.pem", "PRIVATE KEY", kder)
}

func (p *PKI) write(t testing.TB, name, kind string, der []byte) string {
	path := filepath.Join(p.Dir, name)
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600))
	return path
}

// ExampleConfig is the example NATS configuration foreman ships
// (docs/nats/foreman.conf), which the secured tests run.
func ExampleConfig(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "docs", "nats", "foreman.conf")
}

// Secured is a NATS server run from the example configuration as it is:
// operator mode, the accounts natsauth.Init makes, TLS with client
// certificates from a CA made in the test. Its users are made as a team
// makes them (natsauth.Creds), each worker's key added to Trust.
type Secured struct {
	*Server
	PKI   *PKI
	Dir   string // the accounts' directory (foreman nats init's)
	Trust string // host.workers: every worker Creds made

	mu    sync.Mutex
	creds map[string]string // the last .creds file Creds made for each name
}

// StartSecured runs the example configuration on 127.0.0.1 and a random
// port, its store, accounts and certificates in temporary directories.
func StartSecured(t *testing.T) *Secured { return StartSecuredWith(t, nil) }

// StartSecuredWith is StartSecured with the configuration's text changed by
// edit first (a test's control: the same server without a defence).
func StartSecuredWith(t *testing.T, edit func(string) string) *Secured {
	t.Helper()
	confDir := t.TempDir()
	dir := filepath.Join(confDir, "foreman")
	require.NoError(t, natsauth.Init(dir))
	opts, pki := exampleOptions(t, confDir, edit)
	trust := filepath.Join(t.TempDir(), "workers")
	require.NoError(t, os.WriteFile(trust, []byte("# the workers natstest made\n"), 0o644))
	s := &Secured{PKI: pki, Dir: dir, Trust: trust, Server: &Server{t: t, opts: *opts}}
	s.Server.Start()
	t.Cleanup(s.Server.Stop)
	return s
}

// exampleOptions reads the example configuration as a server would, made
// to run here, in confDir (where foreman nats init made the accounts, in
// foreman/): on 127.0.0.1 and a random port, with a store and
// certificates from a CA made for the test.
func exampleOptions(t *testing.T, confDir string, edit func(string) string) (*server.Options, *PKI) {
	t.Helper()
	pki := NewPKI(t)
	cert, key := pki.Issue(t, "server", true)
	port := freePort(t)
	data, err := os.ReadFile(ExampleConfig(t))
	require.NoError(t, err)
	text := string(data)
	for from, to := range map[string]string{
		"listen: 0.0.0.0:4222":            "listen: 127.0.0.1:" + strconv.Itoa(port),
		"/var/lib/nats":                   t.TempDir(),
		"/etc/nats/tls/server.pem":        cert,
		"/etc/nats/tls/server-key.pem":    key,
		"/etc/nats/tls/ca.pem":            pki.CA,
		`include "foreman/accounts.conf"`: `include "foreman/accounts.conf"`,
	} {
		require.Contains(t, text, from, "the example configuration changed: the test no longer knows where to point it")
		text = strings.ReplaceAll(text, from, to)
	}
	if edit != nil {
		edited := edit(text)
		require.True(t, text != edited, "the edit changed nothing")
		text = edited
	}
	path := filepath.Join(confDir, "nats.conf")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	opts, err := server.ProcessConfigFile(path)
	require.NoError(t, err)
	opts.NoLog, opts.NoSigs = true, true
	return opts, pki
}

// Creds makes a user of role named name, as foreman nats creds does
// (a worker with labels, confining its checks, and trusted in s.Trust; a
// host or a foreman for its builds, "shop" if none), and writes its
// .creds file.
func (s *Secured) Creds(t testing.TB, role, name string, labelsOrBuilds ...string) string {
	t.Helper()
	u := natsauth.User{Role: role, Name: name, Labels: labelsOrBuilds, Confined: true}
	if role == natsauth.RoleHost || role == natsauth.RoleForeman {
		u.Labels, u.Builds = nil, labelsOrBuilds
		if len(u.Builds) == 0 {
			u.Builds = []string{"shop"}
		}
	}
	creds, pub, err := natsauth.Creds(s.Dir, u)
	require.NoError(t, err)
	if role == natsauth.RoleWorker {
		s.mu.Lock()
		require.NoError(t, natsauth.AddTrusted(s.Trust, name, pub))
		s.mu.Unlock()
	}
	path := filepath.Join(t.TempDir(), name+".creds")
	require.NoError(t, os.WriteFile(path, creds, 0o600))
	s.mu.Lock()
	if s.creds == nil {
		s.creds = map[string]string{}
	}
	s.creds[name] = path
	s.mu.Unlock()
	return path
}

// CredsOf is the .creds file Creds made last for name.
func (s *Secured) CredsOf(t testing.TB, name string) string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	path, ok := s.creds[name]
	require.True(t, ok, "no user %s made", name)
	return path
}

// JWT is the user JWT of the .creds file Creds made last for name.
func (s *Secured) JWT(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(s.CredsOf(t, name))
	require.NoError(t, err)
	uj, err := jwt.ParseDecoratedJWT(data)
	require.NoError(t, err)
	return uj
}

// Key is the public key of the user Creds made last for name.
func (s *Secured) Key(t testing.TB, name string) string {
	t.Helper()
	uc, err := jwt.DecodeUserClaims(s.JWT(t, name))
	require.NoError(t, err)
	return uc.Subject
}

// CredsWith makes a user named name with perms as they are, signed by the
// account's own key, not a role's: a test's control, the same user
// without a defence (today's permissions, or none).
func (s *Secured) CredsWith(t testing.TB, name string, perms jwt.Permissions) string {
	t.Helper()
	acc, err := os.ReadFile(filepath.Join(s.Dir, "keys", "account.nk"))
	require.NoError(t, err)
	kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(acc))))
	require.NoError(t, err)
	user, err := nkeys.CreateUser()
	require.NoError(t, err)
	pub, _ := user.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Name, uc.Permissions = name, perms
	uj, err := uc.Encode(kp)
	require.NoError(t, err)
	seed, _ := user.Seed()
	creds, err := jwt.FormatUserConfig(uj, seed)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), name+"-with.creds")
	require.NoError(t, os.WriteFile(path, creds, 0o600))
	return path
}

// Client is a certificate and key the CA signed for a client.
func (s *Secured) Client(t testing.TB, name string) (cert, key string) {
	return s.PKI.Issue(t, name, false)
}

// Seed is the user's seed a .creds file holds: a secret no log may show.
func Seed(t testing.TB, creds string) string {
	t.Helper()
	data, err := os.ReadFile(creds)
	require.NoError(t, err)
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "SU") {
			return l
		}
	}
	t.Fatal("no seed in " + creds)
	return ""
}
