package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/web"
)

// boardLoginFlags are foreman board-login's settings.
type boardLoginFlags struct {
	board, identity, url, channel string
	rateLimit                     time.Duration
}

func (a *app) boardLoginCommand() *cobra.Command {
	var f boardLoginFlags
	cmd := &cobra.Command{
		Use:   "board-login [CONFIG]",
		Short: "Sign in to the board as an operator; the decisions taken there are said in the room as you",
		Long: `board-login signs in to foreman's board with an operator's identity key
(roles.operators), so that the operator can settle escalations there
(RESOLVE, RELEASE, ASSIGN, MERGED, OVERRIDE), and says each decision taken on
the board in the room, as the operator, signed with the operator's key.

It answers the board's challenge with the key, prints a link to open (once,
within two minutes: it signs that browser in) and stays in the room until
stopped (Ctrl-C); the board's sign-in ends with it. The key never leaves
this process: the board holds no key and speaks for no one.

The room (server.url, server.channel, server.rate_limit) and the board
(http.listen) are the config's, as foreman up reads it; the flags override
them.`,
		Example: `  foreman board-login --identity .foreman/olga.json
  foreman board-login --identity olga.json --board http://127.0.0.1:8080/`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runBoardLogin(cmd, configArg(args), &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.identity, "identity", "", "the operator's identity file (required; never created: its key is who signs in)")
	fl.StringVar(&f.board, "board", "", "the board's URL (default: http.listen's)")
	fl.StringVar(&f.url, "url", "", "AgentChat server URL (default: server.url)")
	fl.StringVar(&f.channel, "channel", "", "channel to join (default: server.channel)")
	fl.DurationVar(&f.rateLimit, "rate-limit", time.Second, "the room's rate limit (default: server.rate_limit)")
	return cmd
}

func (a *app) runBoardLogin(cmd *cobra.Command, file string, f *boardLoginFlags) error {
	if f.identity == "" {
		return errors.New("--identity: missing: name the operator's identity file (one listed in roles.operators)")
	}
	c, err := a.loadConfig(cmd, file, agentFlagKeys)
	if err != nil {
		return err
	}
	board := f.board
	if board == "" {
		if c.HTTP == "" {
			return errors.New("the board's address is unknown: give --board http://127.0.0.1:8080/, or set http.listen in the config")
		}
		addr, err := net.ResolveTCPAddr("tcp", c.HTTP)
		if err != nil {
			return fmt.Errorf("http.listen %q: %v (give --board)", c.HTTP, err)
		}
		board = web.URL(addr)
	}
	if _, err := os.Stat(f.identity); err != nil {
		return fmt.Errorf("--identity %s: %v (board-login never makes a key: name the operator's file)", f.identity, err)
	}
	id, err := agentchat.LoadIdentity(f.identity)
	if err != nil {
		return fmt.Errorf("--identity %s: %w", f.identity, err)
	}
	warnOpenIdentity(a.stderr, f.identity)
	log, err := a.logger(c)
	if err != nil {
		return err
	}
	ctx, stop := untilInterrupted(cmd)
	defer stop()

	ans, err := web.Login(ctx, board, id)
	if err != nil {
		return err
	}
	room := agentchat.New(agentchat.Config{URL: c.Server.URL, Channel: c.Server.Channel, Name: id.Name, Identity: id,
		RateLimit: c.Server.RateLimit, Logger: log.With().Str("part", "room").Logger()})
	var wg sync.WaitGroup
	defer wg.Wait()
	roomCtx, leave := context.WithCancel(ctx)
	defer leave()
	roomErr := make(chan error, 1)
	wg.Add(2)
	go func() { defer wg.Done(); roomErr <- room.Run(roomCtx) }()
	go func() {
		defer wg.Done()
		for ev := range room.Events() {
			if j, ok := ev.(agentchat.Joined); ok {
				fmt.Fprintf(a.stderr, "%s: in %s as %s\n", id.Name, j.Channel, id.AgentID())
			}
		}
	}()
	fmt.Fprintf(a.stdout, "Signed in to the board as %s. Open this link once, within 2 minutes, to decide there:\n  %s\n"+
		"Keep this running: the decisions taken there are said in the room by it, as you. Ctrl-C signs out.\n", id.AgentID(), ans.URL)
	var seq uint64
	relayed := make(chan error, 1)
	go func() {
		relayed <- web.Relay(ctx, board, ans.Relay, func(line string) error {
			seq++
			room.Send(agentchat.Line{Seq: seq, Text: line})
			fmt.Fprintf(a.stdout, "said: %s\n", line)
			return nil
		})
	}()
	select {
	case err = <-relayed:
	case err = <-roomErr:
		err = config.RoomError(err, c)
	}
	if ctx.Err() != nil {
		return nil
	}
	return err
}
