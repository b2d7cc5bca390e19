package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/internal/bot"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/otlp"
	"github.com/agentforeman/foreman/internal/web"
)

// runFlagKeys maps run's flags to configuration keys.
var runFlagKeys = map[string]string{
	"url":      "server.url",
	"channel":  "server.channel",
	"name":     "server.name",
	"identity": "server.identity",
	"journal":  "journal.path",
	"record":   "record.path",
	"http":     "http.listen",
}

func (a *app) runCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run [CONFIG]",
		Short: "Join the room and coordinate the build",
		Long: `run joins the configured AgentChat room and coordinates the build until it is
stopped. Every input is journaled, so a restart (even after kill -9) resumes
exactly where it stopped; the time foreman was away counts as a pause.

Signals: SIGINT and SIGTERM shut down gracefully (the journal is flushed and
queued replies get a few seconds to go out); SIGHUP reloads the components,
their dependencies (with the cycle check) and the roles from the config.

--new-build starts a new build even when the room shows that this identity
coordinates one there that its journal does not know (the journal was lost).

A config whose dependencies form a cycle is refused, as validate refuses it,
unless --halted: then foreman joins with the build halted, says the cycle in
the room, and an operator mends it there (UNDEPEND) or by a SIGHUP reload.

The journal (journal.path, --journal) is a directory foreman creates and
locks; another foreman cannot open it while this one runs.

With cluster.nats set, run joins a pool of foremen sharing builds through NATS
JetStream (README, "Running several foremen"): it leads the builds whose leases
it holds, its config's or every one in cluster.builds, and stands by for the
rest; a pool's config (cluster.builds) has no build section of its own, and a
build there with a cycle is refused as above. SIGINT and SIGTERM then also
release the leases, so that a standby takes over at once.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := configArg(args)
			c, err := a.loadConfig(cmd, file, runFlagKeys)
			if err != nil {
				return err
			}
			if err := requireFile(c, "run"); err != nil {
				return err
			}
			// A pool's builds are the configs in cluster.builds; the
			// process config has none of its own.
			builds, err := runBuilds(c)
			if err != nil {
				return err
			}
			if halted, _ := cmd.Flags().GetBool("halted"); !halted {
				for _, b := range builds {
					if err := refuseCycle(b); err != nil {
						if b != c {
							err = fmt.Errorf("%s: %w", b.File, err)
						}
						return err
					}
				}
			}
			log, err := a.logger(c)
			if err != nil {
				return err
			}
			warnings := buildWarnings(c)
			if c.Cluster.Builds != "" {
				warnings = poolWarnings(builds, buildWarnings)
			}
			for _, w := range warnings {
				log.Warn().Msg(w)
			}
			ctx, stop := untilInterrupted(cmd)
			defer stop()
			reload, stopHUP := reloadOnHUP()
			defer stopHUP()
			newBuild, _ := cmd.Flags().GetBool("new-build")
			if c.Cluster.Enabled() {
				return a.runInCluster(ctx, cmd, c, builds, file, log, reload, newBuild)
			}
			opts := bot.Options{
				Config: c, Logger: log, Reload: reload, NewBuild: newBuild,
				ReloadConfig: func() (*config.Config, error) { return a.loadConfig(cmd, file, runFlagKeys) },
			}
			// The board starts before the bot, so a taken port fails at once,
			// and stops after it: /healthz answers while queued replies go out.
			var board *web.Server
			spend := &otlp.LateSink{}
			if c.HTTP != "" {
				var url string
				var stopBoard func()
				wopts := web.ConfigOptions(c, log)
				secret, err := web.TelemetrySecret(c)
				if err != nil {
					return err
				}
				web.WithReceiver(&wopts, secret, spend)
				board, url, stopBoard, err = web.Start(c.HTTP, wopts)
				if err != nil {
					return fmt.Errorf("http.listen: %w", err)
				}
				defer stopBoard()
				opts.Observe, opts.Handled, opts.Named, opts.Members = board.Observe, board.Handled, board.Named, board.Members
				log.Info().Str("url", url).Msg("serving the board, /api/view, /metrics and /healthz")
			}
			b, err := bot.New(opts)
			if err != nil {
				return err
			}
			if board != nil {
				board.Attach(b)
			}
			spend.Attach(b)
			return config.RoomError(b.Run(ctx), c)
		},
	}
	f := cmd.Flags()
	f.String("url", "", "AgentChat server URL (server.url)")
	f.String("channel", "", "channel to coordinate in (server.channel)")
	f.String("name", "", "display name (server.name)")
	f.String("identity", "", "identity file (server.identity)")
	f.String("journal", "", "journal directory, created and locked by foreman; \"\" for none (journal.path)")
	f.String("record", "", "record the session as a transcript to this file (record.path)")
	f.String("http", "", "listen address for the board, /metrics and /healthz (http.listen)")
	f.Bool("new-build", false, "start a new build even though the room shows this identity's earlier one (its journal is gone)")
	f.Bool("halted", false, "start even when the dependencies form a cycle: the build waits, halted, until an operator mends it")
	return cmd
}

// reloadOnHUP turns SIGHUP into reloads for the bot (one waiting at most),
// until stop.
func reloadOnHUP() (reload <-chan struct{}, stop func()) {
	ch := make(chan struct{}, 1)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}()
	return ch, func() { signal.Stop(hup); close(hup) }
}

// noConfigFile is the error of a command that needs a config file and
// found none: the same words for every such command.
func noConfigFile(command string) error {
	return fmt.Errorf("no config file: name one (foreman %s CONFIG, or -c), set FOREMAN_CONFIG, or write foreman.yaml here with foreman init", command)
}

// requireFile refuses to go on without a config file: a room or a build
// made of defaults alone is never what the user meant. It is checked
// before any port is bound.
func requireFile(c *config.Config, command string) error {
	if c.File == "" {
		return noConfigFile(command)
	}
	return nil
}

// runBuilds are the builds a config runs: a pool's (cluster.builds), or
// else its own, which it must have.
func runBuilds(c *config.Config) ([]*config.Config, error) {
	builds, err := c.PoolBuilds()
	if err != nil || builds != nil {
		return builds, err
	}
	if err := c.RequireBuild(); err != nil {
		return nil, err
	}
	return []*config.Config{c}, nil
}

// refuseCycle gives validate's one line for a dependency cycle.
func refuseCycle(c *config.Config) error {
	g := config.Graph(c.Build.Components)
	if _, cycle := g.Order(); cycle != nil {
		return fmt.Errorf("build %s: dependency cycle: %s (fix the config, or start it halted with --halted and mend it in the room with UNDEPEND)", c.Build.Name, g.Format(cycle))
	}
	return nil
}
