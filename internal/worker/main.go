package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/internal/cluster"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/host/checks"
	"github.com/agentforeman/foreman/internal/host/sandbox"
	"github.com/agentforeman/foreman/internal/natsauth"
)

// SandboxFor is the sandbox a worker's configuration gives its checks:
// host.sandbox_* as the host's own, keeping from them the files the
// configuration names (a machine may run a host and a worker from one
// file). Each job's mirror is its git directory (worker.sandbox).
func SandboxFor(c *config.Config) sandbox.Config { return sandbox.Configured(c, "") }

// Main runs foreman worker from a configuration until ctx ends, with the
// worker's options changed by each of change (tests: a clock that is off).
func Main(ctx context.Context, c *config.Config, log zerolog.Logger, out io.Writer, change ...func(*Options)) error {
	if err := c.RequireWorker(); err != nil {
		return err
	}
	if !c.Host.Unconfined {
		// What a host would refuse, a worker refuses too, before it takes
		// a job: the machine must confine checks as the keys say.
		s, err := sandbox.New(SandboxFor(c))
		if err != nil {
			return fmt.Errorf("host.sandbox: %w", err)
		}
		s.Close()
	}
	// The programs of host.checks it would run (none of the repository's:
	// it has none), when its configuration names them.
	if err := checks.ConfiguredPrograms(c, nil, true); err != nil {
		return err
	}
	id := c.Cluster.ID
	if id == "" {
		id = cluster.DefaultID()
	}
	key, userJWT, err := workerKey(c, id)
	if err != nil {
		return err
	}
	o := Options{ID: id, Labels: c.Worker.Labels, Parallel: c.Worker.Parallel, Work: c.Worker.Work,
		Sandbox: SandboxFor(c), Unconfined: c.Host.Unconfined, Lease: c.Cluster.Lease, Key: key, JWT: userJWT,
		Logger: log.With().Str("part", "worker").Logger()}
	for _, f := range change {
		f(&o)
	}
	// worker.work is taken first: a second worker on it is refused before
	// it connects anywhere.
	w, err := New(o)
	if err != nil {
		return err
	}
	defer w.Close()
	nc, js, err := cluster.JetStream(c.Cluster, cluster.RoleWorker, log)
	if err != nil {
		return err
	}
	defer nc.Close()
	w.Connect(js)
	confined := "checks sandboxed (host.sandbox_*)"
	if c.Host.Unconfined {
		confined = "CHECKS RUN UNCONFINED (host.sandbox: off): only jobs of hosts that run theirs unconfined come here"
	}
	fmt.Fprintf(out, "foreman worker %s: taking check jobs from %s with labels %s, %d at once, in %s; %s\n",
		id, c.Cluster.NATS, strings.Join(w.Labels(), ", "), c.Worker.Parallel, c.Worker.Work, confined)
	err = w.Run(ctx)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// workerKey is what worker id signs its word and results with: the nkey
// of its NATS user (cluster.creds), whose name must be id, since its
// permissions name it; and its user JWT, which it shows the hosts. Nil
// without creds (the host then must not require signatures: host.workers
// unset).
func workerKey(c *config.Config, id string) (nkeys.KeyPair, string, error) {
	if c.Cluster.Creds == "" {
		return nil, "", nil
	}
	data, err := os.ReadFile(c.Cluster.Creds)
	if err != nil {
		return nil, "", fmt.Errorf("cluster.creds: %w", err)
	}
	kp, name, err := natsauth.Seed(data)
	if err != nil {
		return nil, "", fmt.Errorf("cluster.creds: %s: %w", c.Cluster.Creds, err)
	}
	if name != id {
		return nil, "", fmt.Errorf("cluster.id: %q is not the name of cluster.creds's user (%q): a worker signs in as itself (foreman nats creds --role worker --name %s)", id, name, id)
	}
	uj, err := jwt.ParseDecoratedJWT(data)
	if err != nil {
		return nil, "", fmt.Errorf("cluster.creds: %s: %w", c.Cluster.Creds, err)
	}
	return kp, uj, nil
}
