package main

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/agentchat/server"
	"github.com/agentforeman/foreman/internal/up"
)

func (a *app) serveCommand() *cobra.Command {
	var (
		cfg      = server.DefaultConfig()
		channels []string
	)
	cmd := &cobra.Command{
		Use:   "serve [CONFIG]",
		Short: "Run a local AgentChat-compatible chat server",
		Long: `serve runs an AgentChat-compatible chat server until interrupted (Ctrl-C or
SIGTERM), for local builds, demos and tests. It behaves like a stock AgentChat
server wherever a client can tell: the sign-in challenge, channels and their
history, one message per second per connection, frame limits and error codes,
presence, nicks, typing and floor control, and GET /health on the same port.
Every client frame a stock server accepts gets its answer; the features it
does not host (proposals, disputes, skills, admin commands, file transfer,
private channels) are refused as a stock server refuses a feature that is off.
See docs/agentchat-compat.md.

It listens where the config's server.url points (ws://127.0.0.1:6667 by
default), so foreman run and foreman agent with the same config find it, and
paces senders at server.rate_limit. Like a stock AgentChat server it needs
no config file: without one (no CONFIG argument, -c, FOREMAN_CONFIG or
foreman.yaml here) it uses the defaults, or --listen. It starts with the
stock channels (#general ... #ops) plus server.channel (#build), or those
given with --channel. (foreman up serves the room itself; serve is for the
separate processes of the advanced path, and for agents' tests.)
Two things differ from a stock server by
default: new identities, and agents without a key, may send at once (as on a
stock server run with LURK_DISABLED=true; --lurk restores the stock default:
new keys wait an hour, agents without a key never send), and only the agent
ids given with --verified count as vetted by the admin (only they may create
channels, unless --open-create).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.loadConfig(cmd, configArg(args), map[string]string{"rate-limit": "server.rate_limit"})
			if err != nil {
				return err
			}
			log, err := a.logger(c)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("listen") {
				if cfg.Listen, err = up.ListenAddress(c.Server.URL); err != nil {
					return err
				}
			}
			if !cmd.Flags().Changed("channel") {
				channels = []string{c.Server.Channel}
			}
			up.StockRoom(&cfg, c, log, channels, programVersion())
			ctx, stop := untilInterrupted(cmd)
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
	f.StringVar(&cfg.Listen, "listen", "", "address to listen on (default: the host and port of server.url)")
	f.StringSliceVar(&channels, "channel", nil, "channel to create besides the stock ones, repeatable (default: server.channel)")
	f.Duration("rate-limit", time.Second, "one message per this interval per connection, 0 for no limit (default: server.rate_limit)")
	f.IntVar(&cfg.BufferSize, "buffer-size", 20, "messages of history kept per channel and replayed on JOIN")
	f.StringVar(&cfg.StateFile, "state-file", "", "keep the channels and their history in this file over a restart: written when the server stops in order, read (and removed) when it starts")
	f.BoolVar(&cfg.Lurk, "lurk", false, "make new identities wait --lurk-period before they may send, and agents without a key never send, like a stock server")
	f.DurationVar(&cfg.LurkPeriod, "lurk-period", time.Hour, "how long new identities wait with --lurk")
	f.StringSliceVar(&cfg.Verified, "verified", nil, "agent id to treat as vetted by the admin (repeatable)")
	f.BoolVar(&cfg.AllowUnverifiedCreate, "open-create", false, "let any agent create channels, not only verified ones")
	f.StringVar(&cfg.Name, "name", "", "the server's name, told to clients when they sign in and on GET /health")
	f.DurationVar(&cfg.ChallengeTimeout, "challenge-timeout", time.Minute, "how long a client has to answer the sign-in challenge")
	f.DurationVar(&cfg.VerifyTimeout, "verify-timeout", 30*time.Second, "how long an agent has to answer another's VERIFY_REQUEST about it")
	return cmd
}

// programVersion is the version GET /health reports, for serve and up.
func programVersion() string {
	info, _ := debug.ReadBuildInfo()
	return moduleVersion(version, info)
}
