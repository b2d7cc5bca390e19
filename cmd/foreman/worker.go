package main

import (
	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/internal/worker"
)

func (a *app) workerCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worker [CONFIG]",
		Short: "Run the check jobs of the cluster's hosts on this machine (with cluster.nats)",
		Long: `worker joins the NATS JetStream at cluster.nats and takes check jobs from the
hosts of the cluster: a foreman host with cluster.nats set runs no check
itself, it puts each on the job queue. For each job the worker

  fetches exactly the commit the job names from its host (git's smart HTTP,
  read-only, with the token the job carries) into a mirror it keeps in
  worker.work between jobs, so each fetch brings only what is new;
  checks it out in a worktree of its own and runs the job's checks there,
  in order, each in the sandbox a host runs its checks in (host.sandbox_*:
  this machine's paths, the host's limits, the stricter network of the
  two), under the job's time limit;
  stores the result and the logs, which the host reports as its own.

A job is acknowledged only once its result is stored; while it runs, the
worker tells JetStream it is still at it, so a long check stays its own. A
worker that dies has its job given to another after cluster.lease. When two
workers ran one job, the first result stored is the one reported; the other
is dropped and counted. A commit the worker cannot fetch is reported to the
host as the infrastructure's failure, tried again elsewhere, never the
builder's. worker.labels says what this machine offers (gpu, linux); a check
that asks for labels (host.checks: {run: ..., labels: [...]}) goes only to a
worker that has them. A worker with host.sandbox off takes only the jobs of
hosts that run their checks unconfined too. foreman cluster status lists the
workers. See docs/HOST.md, "Workers".`,
		Example: `  foreman worker                                    # cluster.nats and worker.* in foreman.yaml
  FOREMAN_CLUSTER_NATS=nats://10.0.0.5:4222 foreman worker worker.yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.loadConfig(cmd, configArg(args), nil)
			if err != nil {
				return err
			}
			log, err := a.logger(c)
			if err != nil {
				return err
			}
			ctx, stop := untilInterrupted(cmd)
			defer stop()
			return worker.Main(ctx, c, log, a.stderr)
		},
	}
	return cmd
}
