package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/internal/bot"
	"github.com/agentforeman/foreman/internal/config"
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
coordinates one there that its journal does not know (the journal was lost).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := a.configFile
			if len(args) == 1 {
				file = args[0]
			}
			c, err := a.loadConfig(cmd, file, runFlagKeys)
			if err != nil {
				return err
			}
			log, err := a.logger(c)
			if err != nil {
				return err
			}
			for _, w := range buildWarnings(c) {
				log.Warn().Msg(w)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			reload := make(chan struct{}, 1)
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			go func() {
				for range hup {
					select {
					case reload <- struct{}{}:
					default:
					}
				}
			}()
			newBuild, _ := cmd.Flags().GetBool("new-build")
			opts := bot.Options{
				Config: c, Logger: log, Reload: reload, NewBuild: newBuild,
				ReloadConfig: func() (*config.Config, error) { return a.loadConfig(cmd, file, runFlagKeys) },
			}
			// The board starts before the bot, so a taken port fails at once,
			// and stops after it: /healthz answers while queued replies go out.
			var board *web.Server
			if c.HTTP != "" {
				var url string
				var stopBoard func()
				board, url, stopBoard, err = web.Start(c.HTTP, web.Options{Logger: log.With().Str("part", "http").Logger(), HostLogs: c.Host.Logs})
				if err != nil {
					return fmt.Errorf("http.listen: %w", err)
				}
				defer stopBoard()
				opts.Observe, opts.Handled, opts.Named = board.Observe, board.Handled, board.Named
				log.Info().Str("url", url).Msg("serving the board, /api/view, /metrics and /healthz")
			}
			b, err := bot.New(opts)
			if err != nil {
				return err
			}
			if board != nil {
				board.Attach(b)
			}
			return b.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.String("url", "", "AgentChat server URL (server.url)")
	f.String("channel", "", "channel to coordinate in (server.channel)")
	f.String("name", "", "display name (server.name)")
	f.String("identity", "", "identity file (server.identity)")
	f.String("journal", "", "journal file; \"\" for none (journal.path)")
	f.String("record", "", "record the session as a transcript to this file (record.path)")
	f.String("http", "", "listen address for the board, /metrics and /healthz (http.listen)")
	f.Bool("new-build", false, "start a new build even though the room shows this identity's earlier one (its journal is gone)")
	return cmd
}
