package live

import (
	"os"

	"github.com/nats-io/nkeys"

	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentforeman/foreman/internal/natsauth"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/internal/cluster"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host/remote"
	"github.com/agentforeman/foreman/internal/host/sandbox"
	"github.com/agentforeman/foreman/internal/worker"
	"github.com/agentforeman/foreman/internal/workq"
)

// workers is a host's side of its workers: the NATS connection and the
// queue; the remote gives jobs once started (this host leads the build).
type workers struct {
	nc     *nats.Conn
	remote *remote.Remote
}

func (w *workers) Close() error {
	if w == nil {
		return nil
	}
	w.remote.Close()
	w.nc.Close()
	return nil
}

// connect joins NATS as a process of role in c's cluster and opens
// JetStream.
func connect(c *config.Config, role cluster.Role, log zerolog.Logger) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := cluster.Dial(cluster.FromConfig(c.Cluster, role, log.With().Str("part", "cluster").Logger()))
	if err != nil {
		return nil, nil, fmt.Errorf("cluster.nats: %w", err)
	}
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(5*time.Second))
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("cluster.nats: %w", err)
	}
	return nc, js, nil
}

// prepareWorkers readies a host whose checks workers run (cluster.nats):
// it joins NATS and makes the job queue. Nothing is given to the workers
// until its remote starts (start), which a host does once it leads the
// build: a host alone at once.
func prepareWorkers(ctx context.Context, c *config.Config, repo *gitrepo.Repo, self string, log zerolog.Logger) (*workers, error) {
	nc, js, err := connect(c, cluster.RoleHost, log)
	if err != nil {
		return nil, err
	}
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	q, err := workq.Make(qctx, js, workq.Config{Replicas: c.Cluster.Replicas})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("cluster.nats: the job queue: %w", err)
	}
	var trust *workq.Trust
	if c.Host.Workers != "" {
		if trust, err = workq.OpenTrust(c.Host.Workers); err != nil {
			nc.Close()
			return nil, fmt.Errorf("host.workers: %w", err)
		}
	}
	limits := c.Host.SandboxLimits.WithDefaults()
	r := remote.New(remote.Options{
		Queue: q, Repo: repo, Serve: c.Host.Serve, ServeURL: c.Host.ServeURL,
		Build: c.Build.Name, Host: self, Name: c.Host.Name, Target: c.Host.Target,
		Checks: c.Host.Checks, Labels: c.Host.CheckLabels, Env: c.Host.Env, Timeout: c.Rules.CITimeout,
		LogLimit: c.Host.LogLimit, Logs: c.Host.Logs,
		Sandbox: workq.Sandbox{Required: !c.Host.Unconfined, Net: c.Host.SandboxNet,
			Memory: limits.Memory, Tasks: limits.Tasks, FileSize: limits.FileSize},
		MaxParallel: c.Host.MaxParallel, Lease: c.Cluster.Lease, Trust: trust,
		Claims: func(ctx context.Context) (*jwt.AccountClaims, error) { return natsauth.Claims(ctx, nc) },
		Logger: log.With().Str("part", "workers").Logger(),
	})
	return &workers{nc: nc, remote: r}, nil
}

// start has the host give the build's jobs to the workers, from when it
// leads the build until stop: lastRun is the highest run its ledger holds.
func (w *workers) start(ctx context.Context, lastRun int, log zerolog.Logger) (stop func(), err error) {
	if w == nil {
		return func() {}, nil
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := w.remote.Start(sctx, lastRun); err != nil {
		return nil, fmt.Errorf("cluster.nats: %w", err)
	}
	log.Info().Str("url", w.remote.URL()).Msg("the workers fetch the commits to check from here")
	return w.remote.Close, nil
}

// describe says, for the host's start, where its checks run.
func (w *workers) describe(c *config.Config) []string {
	sets := strings.Join(w.remote.LabelSets(), ", ")
	if sets == "" {
		sets = "none: no checks"
	}
	return []string{
		fmt.Sprintf("checks run on workers (foreman worker) through NATS at %s, at most %d jobs in flight; while this host leads the build they fetch from it (host.serve %s)", c.Cluster.NATS, c.Host.MaxParallel, c.Host.Serve),
		"jobs ask for the label sets " + sets,
	}
}

// WorkerSandbox is the sandbox a worker's configuration gives its checks:
// host.sandbox_* as the host's own, keeping from them the files the
// configuration names (a machine may run a host and a worker from one
// file). Each job's mirror is its git directory (worker.sandbox).
func WorkerSandbox(c *config.Config) sandbox.Config { return SandboxConfig(c, "") }

// WorkerMain runs foreman worker from a configuration until ctx ends.
func WorkerMain(ctx context.Context, c *config.Config, log zerolog.Logger, out io.Writer) error {
	return workerMain(ctx, c, log, out)
}

// workerMain is WorkerMain with the worker's options changed by each of
// change (tests: a clock that is off).
func workerMain(ctx context.Context, c *config.Config, log zerolog.Logger, out io.Writer, change ...func(*worker.Options)) error {
	if err := c.RequireWorker(); err != nil {
		return err
	}
	if !c.Host.Unconfined {
		// What a host would refuse, a worker refuses too, before it takes
		// a job: the machine must confine checks as the keys say.
		s, err := sandbox.New(WorkerSandbox(c))
		if err != nil {
			return fmt.Errorf("host.sandbox: %w", err)
		}
		s.Close()
	}
	// The programs of host.checks it would run (none of the repository's:
	// it has none), when its configuration names them.
	if err := CheckPrograms(ctx, c, nil, true); err != nil {
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
	o := worker.Options{ID: id, Labels: c.Worker.Labels, Parallel: c.Worker.Parallel, Work: c.Worker.Work,
		Sandbox: WorkerSandbox(c), Unconfined: c.Host.Unconfined, Lease: c.Cluster.Lease, Key: key, JWT: userJWT,
		Logger: log.With().Str("part", "worker").Logger()}
	for _, f := range change {
		f(&o)
	}
	// worker.work is taken first: a second worker on it is refused before
	// it connects anywhere.
	w, err := worker.New(o)
	if err != nil {
		return err
	}
	defer w.Close()
	nc, js, err := connect(c, cluster.RoleWorker, log)
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
