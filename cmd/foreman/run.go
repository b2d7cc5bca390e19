package main

import (
	"context"
	"fmt"
	"net"
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
queued replies get a few seconds to go out); SIGHUP reloads the components and
their dependencies from the config, with the cycle check.`,
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
			opts := bot.Options{
				Config: c, Logger: log, Reload: reload,
				ReloadConfig: func() (*config.Config, error) { return a.loadConfig(cmd, file, runFlagKeys) },
			}
			// Listen before the bot starts, so a taken port fails at once.
			var board *web.Server
			var ln net.Listener
			if c.HTTP != "" {
				if ln, err = net.Listen("tcp", c.HTTP); err != nil {
					return fmt.Errorf("http.listen: %w", err)
				}
				defer ln.Close()
				board = web.New(web.Options{Logger: log.With().Str("part", "http").Logger()})
				opts.Observe, opts.Handled = board.Observe, board.Handled
			}
			b, err := bot.New(opts)
			if err != nil {
				return err
			}
			if board == nil {
				return b.Run(ctx)
			}
			board.Attach(b)
			// The board outlives ctx by the bot's shutdown grace: /healthz
			// still answers while queued replies go out.
			httpCtx, stopHTTP := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() { served <- board.Serve(httpCtx, ln) }()
			log.Info().Str("url", web.URL(ln.Addr())).Msg("serving the board, /api/view, /metrics and /healthz")
			err = b.Run(ctx)
			stopHTTP()
			if herr := <-served; herr != nil {
				log.Error().Err(herr).Msg("the board's server failed")
			}
			return err
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
	return cmd
}
