package main

import (
	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/internal/host/live"
)

func (a *app) hostCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "host [CONFIG]",
		Short: "Check builders' branches and land approved work on a git repository (CI and merge queue)",
		Long: `host joins the room with its own key (host.identity) as the CI role, and as
the merger when rules.merge is external, bound to the git repository
host.repo. It makes the work real:

  READY c <branch>  the branch (or full commit id) is checked: a bad or
                    missing ref is refused at once (CI c FAIL ...); else it
                    is merged with host.target without a working tree (git
                    merge-tree), rebased in a private worktree if that
                    conflicts and host.auto_rebase is on, and host.checks
                    run in a worktree holding exactly the merge result
                    (reset and cleaned: as fresh as a new checkout), each
                    sandboxed (host.sandbox: namespaces, Landlock, limits;
                    --check-sandbox says what this machine enforces), with
                    a clean environment, under rules.ci_timeout: CI c PASS
                    <commit>, CI c FAIL <commit>
                    <first failing line> log=<path> [url=...], or
                    CI c CONFLICT <files>
  AUDIT c PASS      (merge external) once foreman's STATUS c says approved,
                    c joins the train: each approved component is checked
                    on the target merged with every car ahead of it, all at
                    once, and lands by compare-and-swap as soon as its check
                    and every check ahead passed; then MERGED c. A car that
                    fails with every car ahead passed steps back: CI c
                    FAIL|CONFLICT, and c goes back to its builder; the cars
                    behind it are checked again without it.

A failed check runs again on the same tree (host.retries) before anyone is
blamed; a failure then a pass is reported flaky. At most host.max_parallel
checks run at once; the rest wait in a queue that STATUS in the room,
foreman status and the board show, with the train. A run whose component
leaves CI (FIX, RETRY, ABORT, RELEASE, ASSIGN...) is cancelled and never
reported. The host's ledger (host.ledger) and the room let it restart, even
after kill -9, without landing anything twice or reporting a stale run.

With cluster.nats set, several host processes (same config, same key, the
same repository) share the build's host lease in NATS JetStream: the leader
alone is in the room, keeps its ledger in a fenced stream, and lands; the
others stand by and take over when it dies or on SIGTERM, as a restart does.
The leader runs no check itself: it puts each on the cluster's job queue for
foreman worker processes, serves them host.repo read-only (host.serve), and
reports their results as its own; at most host.max_parallel jobs are in
flight across all of them. cluster.creds, cluster.tls and
FOREMAN_NATS_USER/PASSWORD/TOKEN sign them in (docs/NATS.md). See
docs/HOST.md.`,
		Example: `  foreman identity --identity .foreman/host.json   # the id to list in roles.ci and roles.merger
  foreman host --check-sandbox                      # what this machine enforces on checks
  foreman host                                      # with host.repo set in foreman.yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.loadConfig(cmd, configArg(args), nil)
			if err != nil {
				return err
			}
			if check, _ := cmd.Flags().GetBool("check-sandbox"); check {
				return live.CheckSandbox(cmd.Context(), c, a.stdout)
			}
			log, err := a.logger(c)
			if err != nil {
				return err
			}
			ctx, stop := untilInterrupted(cmd)
			defer stop()
			return live.Main(ctx, c, log, a.stderr)
		},
	}
	cmd.Flags().Bool("check-sandbox", false, "say what this machine enforces on checks (host.sandbox), then exit: 0 if it can sandbox them, 1 if not")
	return cmd
}
