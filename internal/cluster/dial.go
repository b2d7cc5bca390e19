package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentforeman/foreman/internal/natsname"
)

// Role is what a process does in the cluster: it decides which buckets and
// streams the process opens (and makes, if they are not there yet), and
// the inbox its answers come to, so that each role's NATS user can be
// given only what it needs (docs/NATS.md).
type Role string

const (
	// RoleForeman leads builds: the logs, leases, snapshots, the pool.
	RoleForeman Role = "foreman"
	// RoleHost checks and lands one build's work: the hosts' leases and
	// ledgers, and the workers' job queue, results and logs.
	RoleHost Role = "host"
	// RoleWorker runs check jobs: the job queue, results and logs only.
	RoleWorker Role = "worker"
	// RoleReader only looks (foreman cluster status): it makes nothing.
	RoleReader Role = "reader"
)

// Inbox is where the answers to the requests of process id of role come
// (natsname.Inbox): a role's own, a worker's its own, so that a NATS user
// may subscribe to its own answers and no one else's.
func (r Role) Inbox(id string) string { return natsname.Inbox(string(r), id) }

// Auth is how a process signs in to NATS and checks that the server is
// the one it means: a .creds file (a user's JWT and nkey seed, as nsc and
// NATS providers make them), or a user and password, or a token; and TLS
// with the CAs that sign the server's certificate and a client certificate
// for a server that asks for one. The secrets are never logged.
type Auth struct {
	Creds    string // a .creds file
	User     string
	Password string
	Token    string
	CA       string // PEM file of the CAs to trust; "" with TLS: the system's
	Cert     string // PEM file of the client certificate
	Key      string // PEM file of its key
}

// tls reports whether the connection must be TLS.
func (a Auth) tls() bool { return a.CA != "" || a.Cert != "" }

// Dial connects to NATS as a process of role: the one connection function
// of foreman, its hosts, its workers and its readers. The connection
// reconnects for ever; refusals the server sends later (a permission it
// does not grant) are logged, not fatal.
func Dial(opts Options) (*nats.Conn, error) {
	role := opts.Role
	if role == "" {
		role = RoleForeman
	}
	lease := opts.Lease
	if lease <= 0 {
		lease = DefaultLease
	}
	log := opts.Logger
	o := []nats.Option{
		nats.Name("foreman " + string(role) + " " + opts.ID),
		nats.CustomInboxPrefix(role.Inbox(opts.ID)),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(100 * time.Millisecond),
		nats.ReconnectJitter(100*time.Millisecond, time.Second),
		nats.Timeout(2 * time.Second),
		nats.PingInterval(lease),
		nats.MaxPingsOutstanding(2),
		nats.NoCallbacksAfterClientClose(),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			ev := log.Warn().Err(err)
			if sub != nil {
				ev = ev.Str("subject", sub.Subject)
			}
			if errors.Is(err, nats.ErrPermissionViolation) {
				ev.Msg("NATS refused this process something its user may not do: see docs/NATS.md for what each role needs")
				return
			}
			ev.Msg("NATS reported an error")
		}),
	}
	a := opts.Auth
	switch {
	case a.Creds != "":
		o = append(o, nats.UserCredentials(a.Creds))
	case a.User != "":
		o = append(o, nats.UserInfo(a.User, a.Password))
	case a.Token != "":
		o = append(o, nats.Token(a.Token))
	}
	if a.tls() {
		cfg, err := a.tlsConfig()
		if err != nil {
			return nil, err
		}
		o = append(o, nats.Secure(cfg))
	}
	nc, err := nats.Connect(opts.URL, o...)
	if err != nil {
		return nil, fmt.Errorf("cannot reach NATS at %s: %w", opts.URL, dialErr(err))
	}
	return nc, nil
}

// tlsConfig is the client's TLS: the server verified against CA (or the
// system's roots), and the client's own certificate if set.
func (a Auth) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if a.CA != "" {
		data, err := os.ReadFile(a.CA)
		if err != nil {
			return nil, fmt.Errorf("cluster.tls.ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("cluster.tls.ca: %s holds no PEM certificate", a.CA)
		}
		cfg.RootCAs = pool
	}
	if a.Cert != "" {
		pair, err := tls.LoadX509KeyPair(a.Cert, a.Key)
		if err != nil {
			return nil, fmt.Errorf("cluster.tls.cert: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// dialErr says what a refused connection means, in words an operator
// acts on.
func dialErr(err error) error {
	switch {
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked):
		return fmt.Errorf("%w (the server refused this process's credentials: check cluster.creds, or %s and %s, or %s)",
			err, "FOREMAN_NATS_USER", "FOREMAN_NATS_PASSWORD", "FOREMAN_NATS_TOKEN")
	case strings.Contains(err.Error(), "x509:") || strings.Contains(err.Error(), "tls:"):
		return fmt.Errorf("%w (TLS: check cluster.tls.ca names the CA that signed the server's certificate, and cluster.tls.cert a certificate the server's CA signed)", err)
	case errors.Is(err, nats.ErrSecureConnRequired):
		return fmt.Errorf("%w (the server requires TLS: set cluster.tls.ca, or use a tls:// URL)", err)
	}
	return err
}
