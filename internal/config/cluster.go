package config

import (
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

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
}

// Enabled reports whether foreman runs in a cluster.
func (c Cluster) Enabled() bool { return c.NATS != "" }

func clusterDefaults(d map[string]any) {
	d["cluster.nats"] = ""
	d["cluster.lease"] = "3s"
	d["cluster.capacity"] = 100
	d["cluster.builds"] = ""
	d["cluster.id"] = ""
	d["cluster.replicas"] = 1
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
			return errorf("cluster.nats", "%q is not a nats:// or tls:// URL (several are separated by commas)", strings.TrimSpace(u))
		}
	}
	if cl.ID != "" && !idRE.MatchString(cl.ID) {
		return errorf("cluster.id", "%q is not a name: letters, digits and . _ - = / only (it is a key in NATS)", cl.ID)
	}
	if cl.NATS == "" {
		for _, k := range []string{"cluster.builds", "cluster.id"} {
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
	c.Cluster = cl
	return nil
}

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
	return fmt.Sprintf("%s (lease %v)", c.NATS, c.Lease)
}
