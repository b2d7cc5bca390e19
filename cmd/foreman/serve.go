package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/agentchat/server"
)

func (a *app) serveCommand() *cobra.Command {
	var (
		cfg      = server.DefaultConfig()
		channels []string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a local AgentChat-compatible chat server",
		Long: `serve runs an AgentChat-compatible chat server until interrupted (Ctrl-C or
SIGTERM), for local builds, demos and tests. It behaves like a stock AgentChat
server wherever a client can tell: the sign-in challenge, channels and their
history, one message per second per connection, frame limits and error codes.

It starts with the stock channels (#general ... #ops) plus those given with
--channel (#build by default). Two things differ from a stock server by
default: new identities may send at once instead of after an hour (--lurk
restores the wait), and only the agent ids given with --verified count as
vetted by the admin (only they may create channels, unless --open-create).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.settings(cmd, nil)
			if err != nil {
				return err
			}
			log, err := a.logger(c)
			if err != nil {
				return err
			}
			cfg.Channels = append(server.DefaultChannels(), channels...)
			cfg.Logger = log
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			srv, err := server.Start(ctx, cfg)
			if err != nil {
				return fmt.Errorf("cannot start the chat server on %s: %w", cfg.Listen, err)
			}
			log.Info().Msgf("connect foreman with server.url: %s (stop with Ctrl-C)", srv.URL())
			<-srv.Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Listen, "listen", cfg.Listen, "address to listen on")
	f.StringSliceVar(&channels, "channel", []string{"#build"}, "channel to create besides the stock ones (repeatable)")
	f.DurationVar(&cfg.RateLimit, "rate-limit", time.Second, "one message per this interval per connection (0: no limit)")
	f.IntVar(&cfg.BufferSize, "buffer-size", 20, "messages of history kept per channel and replayed on JOIN")
	f.BoolVar(&cfg.Lurk, "lurk", false, "make new identities wait --lurk-period before they may send, like a stock server")
	f.DurationVar(&cfg.LurkPeriod, "lurk-period", time.Hour, "how long new identities wait with --lurk")
	f.StringSliceVar(&cfg.Verified, "verified", nil, "agent id to treat as vetted by the admin (repeatable)")
	f.BoolVar(&cfg.AllowUnverifiedCreate, "open-create", false, "let any agent create channels, not only verified ones")
	f.StringVar(&cfg.Name, "name", "", "the server's name, told to clients when they sign in")
	return cmd
}
