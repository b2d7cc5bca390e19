package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nkeys"
	"github.com/spf13/viper"
)

// Cluster is where foreman keeps its builds when it runs as one of several:
// in NATS JetStream, under leases. With NATS "" (the default) foreman runs
// alone, with the local journal.
type Cluster struct {
	NATS     string        // one or more nats:// URLs, comma-separated; "" runs alone
	Lease    time.Duration // a lease's time to live: how long a dead leader's builds wait for a standby
	Capacity int           // the most builds this process leads at once
	Builds   string        // a directory of build configs this process shares with the pool; "" leads this config's build
	ID       string        // this process's name in the cluster; "" for host-pid
	Replicas int           // copies JetStream keeps of each stream and bucket
	// How this process signs in to NATS and checks it is talking to the
	// right server (docs/NATS.md). The secrets come from the environment
	// only, never the file, and are never logged.
	Creds string     // cluster.creds: a .creds file (the user's JWT and nkey seed)
	TLS   ClusterTLS // cluster.tls.*
	Auth  NATSAuth   // FOREMAN_NATS_USER, FOREMAN_NATS_PASSWORD, FOREMAN_NATS_TOKEN
}

// ClusterTLS is the TLS of the connection to NATS: the CAs that sign the
// server's certificate (none: the system's), and a client certificate with
// its key for a server that asks for one.
type ClusterTLS struct {
	CA   string // cluster.tls.ca: PEM
	Cert string // cluster.tls.cert: PEM
	Key  string // cluster.tls.key: PEM
}

// NATSAuth is a user and password, or a token, read from the environment:
// secrets that do not belong in a config file. String never shows them.
type NATSAuth struct {
	User     string
	Password string
	Token    string
}

// The environment variables that sign in to NATS: not configuration keys
// (a config file, often committed, never holds them).
const (
	EnvNATSUser     = "FOREMAN_NATS_USER"
	EnvNATSPassword = "FOREMAN_NATS_PASSWORD"
	EnvNATSToken    = "FOREMAN_NATS_TOKEN"
)

// String says which way of signing in is set, never the secrets.
func (a NATSAuth) String() string {
	switch {
	case a.User != "":
		return "user " + a.User + " (password from " + EnvNATSPassword + ")"
	case a.Token != "":
		return "a token (" + EnvNATSToken + ")"
	}
	return "none"
}

// GoString keeps the secrets out of %#v too.
func (a NATSAuth) GoString() string { return "config.NATSAuth{" + a.String() + "}" }

// Enabled reports whether foreman runs in a cluster.
func (c Cluster) Enabled() bool { return c.NATS != "" }

func clusterDefaults(d map[string]any) {
	d["cluster.nats"] = ""
	d["cluster.lease"] = "3s"
	d["cluster.capacity"] = 100
	d["cluster.builds"] = ""
	d["cluster.id"] = ""
	d["cluster.replicas"] = 1
	d["cluster.creds"] = ""
	d["cluster.tls.ca"] = ""
	d["cluster.tls.cert"] = ""
	d["cluster.tls.key"] = ""
}

// idRE is what a NATS KV key may hold: a process's id is one.
var idRE = regexp.MustCompile(`^[-/_=.A-Za-z0-9]{1,128}$`)

// Bounds on the lease: shorter than this and a busy machine's scheduling
// alone could run a lease out between renewals; longer, and a dead leader's
// builds wait for no reason a build would accept.
const (
	minLease = 500 * time.Millisecond
	maxLease = 5 * time.Minute
)

func decodeCluster(v *viper.Viper, c *Config, src sources) error {
	cl := Cluster{
		NATS:   strings.TrimSpace(v.GetString("cluster.nats")),
		Builds: src.path("cluster.builds", v.GetString("cluster.builds")),
		ID:     strings.TrimSpace(v.GetString("cluster.id")),
		Creds:  src.path("cluster.creds", strings.TrimSpace(v.GetString("cluster.creds"))),
		TLS: ClusterTLS{
			CA:   src.path("cluster.tls.ca", strings.TrimSpace(v.GetString("cluster.tls.ca"))),
			Cert: src.path("cluster.tls.cert", strings.TrimSpace(v.GetString("cluster.tls.cert"))),
			Key:  src.path("cluster.tls.key", strings.TrimSpace(v.GetString("cluster.tls.key"))),
		},
		Auth: NATSAuth{User: os.Getenv(EnvNATSUser), Password: os.Getenv(EnvNATSPassword), Token: os.Getenv(EnvNATSToken)},
	}
	var err error
	if cl.Lease, err = duration(v, "cluster.lease", true); err != nil {
		return err
	}
	if cl.Lease < minLease || cl.Lease > maxLease {
		return errorf("cluster.lease", "%v is outside %v to %v", cl.Lease, minLease, maxLease)
	}
	if cl.Capacity, err = count(v, "cluster.capacity", 1); err != nil {
		return err
	}
	if err := atMost(cl.Capacity, 1_000_000, "cluster.capacity"); err != nil {
		return err
	}
	if cl.Replicas, err = count(v, "cluster.replicas", 1); err != nil {
		return err
	}
	if err := atMost(cl.Replicas, 5, "cluster.replicas"); err != nil {
		return err
	}
	for _, u := range strings.Split(cl.NATS, ",") {
		if cl.NATS == "" {
			break
		}
		p, perr := url.Parse(strings.TrimSpace(u))
		if perr != nil || (p.Scheme != "nats" && p.Scheme != "tls") || p.Host == "" {
			return errorf("cluster.nats", "%q is not a nats:// or tls:// URL (several are separated by commas)", redactURL(u))
		}
		if p.User != nil {
			// The URL is logged and shown; a secret in it would be too.
			return errorf("cluster.nats", "%s holds a user or token: give them in %s and %s, or %s, which are never logged",
				redactURL(u), EnvNATSUser, EnvNATSPassword, EnvNATSToken)
		}
	}
	if cl.ID != "" && !idRE.MatchString(cl.ID) {
		return errorf("cluster.id", "%q is not a name: letters, digits and . _ - = / only (it is a key in NATS)", cl.ID)
	}
	if cl.NATS == "" {
		for _, k := range []string{"cluster.builds", "cluster.id", "cluster.creds", "cluster.tls.ca", "cluster.tls.cert", "cluster.tls.key"} {
			if v.GetString(k) != "" {
				return errorf(k, "needs cluster.nats: a pool shares its builds through NATS")
			}
		}
	}
	if cl.Builds != "" {
		info, serr := os.Stat(cl.Builds)
		if serr != nil || !info.IsDir() {
			return errorf("cluster.builds", "%s is not a directory of build configs", cl.Builds)
		}
	}
	if cl.NATS != "" {
		if err := checkNATSAuth(cl); err != nil {
			return err
		}
	}
	c.Cluster = cl
	return nil
}

// redactURL is a URL of cluster.nats as it may be shown: without what its
// user part holds.
func redactURL(u string) string {
	u = strings.TrimSpace(u)
	if p, err := url.Parse(u); err == nil && p.User != nil {
		p.User = url.User("REDACTED")
		return p.String()
	}
	if at := strings.LastIndex(u, "@"); at >= 0 {
		if scheme := strings.Index(u, "://"); scheme >= 0 && scheme < at {
			return u[:scheme+3] + "REDACTED" + u[at:]
		}
	}
	return u
}

// checkNATSAuth reads what signs this process in to NATS now, so that a
// mistake is one line naming the key, not a failed connection later.
func checkNATSAuth(cl Cluster) error {
	a := cl.Auth
	switch {
	case a.Password != "" && a.User == "":
		return errorf(EnvNATSPassword, "set without %s", EnvNATSUser)
	case a.User != "" && a.Password == "":
		return errorf(EnvNATSUser, "set without %s", EnvNATSPassword)
	case a.User != "" && a.Token != "":
		return errorf(EnvNATSToken, "set with %s: NATS takes a user and password or a token, not both", EnvNATSUser)
	case cl.Creds != "" && a.User != "":
		return errorf("cluster.creds", "set with %s: NATS takes one way to sign in; unset the variable, or cluster.creds", EnvNATSUser)
	case cl.Creds != "" && a.Token != "":
		return errorf("cluster.creds", "set with %s: NATS takes one way to sign in; unset the variable, or cluster.creds", EnvNATSToken)
	}
	if cl.Creds != "" {
		data, err := os.ReadFile(cl.Creds)
		if err != nil {
			return errorf("cluster.creds", "%s cannot be read: %v", cl.Creds, unwrapPath(err))
		}
		if _, err := nkeys.ParseDecoratedJWT(data); err != nil || !strings.Contains(string(data), "-----BEGIN NATS USER JWT-----") {
			return errorf("cluster.creds", "%s holds no user JWT: a .creds file (nsc generate creds, or the one your NATS provider gave you) holds a JWT and a seed", cl.Creds)
		}
		if _, err := nkeys.ParseDecoratedUserNKey(data); err != nil {
			return errorf("cluster.creds", "%s holds no user nkey seed: a .creds file holds a JWT and a seed", cl.Creds)
		}
	}
	t := cl.TLS
	switch {
	case t.Cert != "" && t.Key == "":
		return errorf("cluster.tls.cert", "set without cluster.tls.key: a client certificate needs its private key")
	case t.Key != "" && t.Cert == "":
		return errorf("cluster.tls.key", "set without cluster.tls.cert: a private key needs its client certificate")
	}
	if t.Cert != "" {
		for _, f := range []struct{ key, path string }{{"cluster.tls.cert", t.Cert}, {"cluster.tls.key", t.Key}} {
			if _, err := os.Stat(f.path); err != nil {
				return errorf(f.key, "%s cannot be read: %v", f.path, unwrapPath(err))
			}
		}
		if _, err := tls.LoadX509KeyPair(t.Cert, t.Key); err != nil {
			return errorf("cluster.tls.cert", "%s and cluster.tls.key %s are not a certificate and its key: %v", t.Cert, t.Key, err)
		}
	}
	if t.CA != "" {
		data, err := os.ReadFile(t.CA)
		if err != nil {
			return errorf("cluster.tls.ca", "%s cannot be read: %v", t.CA, unwrapPath(err))
		}
		if !x509.NewCertPool().AppendCertsFromPEM(data) {
			return errorf("cluster.tls.ca", "%s holds no PEM certificate", t.CA)
		}
	}
	return nil
}

// unwrapPath drops the path a *PathError repeats.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// TLSEnabled reports whether any of cluster.tls is set.
func (t ClusterTLS) TLSEnabled() bool { return t.CA != "" || t.Cert != "" }

// BuildFiles lists the build configs in the cluster.builds directory:
// every *.yaml and *.yml in it, sorted.
func (c Cluster) BuildFiles() ([]string, error) {
	if c.Builds == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(c.Builds)
	if err != nil {
		return nil, errorf("cluster.builds", "%v", err)
	}
	var out []string
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && (strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) {
			out = append(out, c.Builds+string(os.PathSeparator)+n)
		}
	}
	if len(out) == 0 {
		return nil, errorf("cluster.builds", "%s holds no build configs (*.yaml)", c.Builds)
	}
	return out, nil
}

// buildKeys are the keys of a build section: a pool's process config
// has none of them (PoolBuilds).
var buildKeys = []string{"build.name", "build.components", "build.spec"}

// PoolBuilds loads the builds of a pool: every build config in
// cluster.builds, each checked as foreman run alone checks its config
// (something to build, well formed) and each with a name of its own. It
// returns nil when cluster.builds is not set: then the config leads its
// own build.
//
// A pool's process config has no build of its own: it is refused with a
// line that says to drop the build section, rather than leading one build
// that no other process of the pool knows (so none could stand by for it)
// or leaving it silently unled.
func (c *Config) PoolBuilds() ([]*Config, error) {
	if c.Cluster.Builds == "" {
		return nil, nil
	}
	for _, k := range buildKeys {
		if c.set[k] {
			return nil, fmt.Errorf("%s: drop the build section: with cluster.builds this process leads the builds in %s, and none of its own (to have the pool lead this build, move it into %s as a config of its own)",
				c.Origin(k), c.Cluster.Builds, c.Cluster.Builds)
		}
	}
	files, err := c.Cluster.BuildFiles()
	if err != nil {
		return nil, err
	}
	out := make([]*Config, 0, len(files))
	seen := make(map[string]string, len(files))
	for _, f := range files {
		bc, err := Load(f, nil, nil)
		if err == nil {
			err = bc.RequireBuild()
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if other, dup := seen[bc.Build.Name]; dup {
			return nil, fmt.Errorf("%s: %w", f, errorf("build.name", "%q is also the name of the build in %s; every build of a pool needs its own", bc.Build.Name, other))
		}
		seen[bc.Build.Name] = f
		out = append(out, bc)
	}
	return out, nil
}

// String says where the cluster is, for logs.
func (c Cluster) String() string {
	if !c.Enabled() {
		return "alone"
	}
	s := fmt.Sprintf("%s (lease %v", c.NATS, c.Lease)
	if c.Creds != "" {
		s += ", creds " + c.Creds
	}
	if c.TLS.Cert != "" {
		s += ", client certificate " + c.TLS.Cert
	}
	if c.Auth.User != "" || c.Auth.Token != "" {
		s += ", " + c.Auth.String()
	}
	return s + ")"
}
