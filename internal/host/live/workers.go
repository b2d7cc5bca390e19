package live

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentforeman/foreman/internal/natsauth"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/internal/cluster"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host/remote"
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

// prepareWorkers readies a host whose checks workers run (cluster.nats):
// it joins NATS and makes the job queue. Nothing is given to the workers
// until its remote starts (start), which a host does once it leads the
// build: a host alone at once.
func prepareWorkers(ctx context.Context, c *config.Config, repo *gitrepo.Repo, self string, log zerolog.Logger) (*workers, error) {
	nc, js, err := cluster.JetStream(c.Cluster, cluster.RoleHost, log)
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
