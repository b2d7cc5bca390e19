package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/internal/tooling/loadtest"
)

func (a *app) benchCommand() *cobra.Command {
	var (
		o          loadtest.Options
		asJSON     bool
		quiet      bool
		cpuProfile string
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load-test foreman live: many agents claiming at once over WebSockets",
		Long: `bench drives --agents simulated agents, each a real AgentChat client with its
own key, against a chat server (the embedded one on 127.0.0.1 by default, or
--url on this machine) and a real foreman, started as a child process of this
same binary with a generated config: one component per agent, one claim per
agent. Once every agent is in the room and has heard the bot's TASKS, each
claims its component: at a random moment of --spread (a steady load), or all
at once with --simultaneous (a burst).

The report gives the CLAIM-to-ACK latency each agent saw (p50, p90, p99, max),
ACKs received against expected, RATE_LIMITED errors seen by the agents and the
bot's resends (from its /metrics), the bot's messages, its CPU time and peak
memory (from /proc; Linux only), the CPU time of this process (the agents and
the embedded server, which compete with the bot on a small machine), and the
machine. With --json it is one JSON object. It exits 1 when any expected ACK
is missing.

The two scenarios of the goals:
  foreman bench --agents 1000                                  # no rate limit
  foreman bench --agents 200 --rate-limit 1s --simultaneous    # stock limit

Against a stock AgentChat server, which lets only a verified key create the
channel: make foreman's key first (foreman identity --identity
keys/foreman.json), start the server with LURK_DISABLED=true and that id
(without @) as GENESIS_AGENT_ID, then
  foreman bench --url ws://127.0.0.1:PORT --keys keys --agents 20
foreman's key makes the channel before the agents join.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// A server elsewhere is assumed to be stock unless told.
			if o.URL != "" && !cmd.Flags().Changed("rate-limit") {
				o.RateLimit = time.Second
			}
			if !quiet {
				o.Progress = a.stderr
			}
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return fmt.Errorf("--cpuprofile: %w", err)
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return fmt.Errorf("--cpuprofile: %w", err)
				}
				defer pprof.StopCPUProfile()
			}
			ctx, stop := untilInterrupted(cmd)
			defer stop()
			r, err := loadtest.Run(ctx, o)
			if err != nil {
				if errors.Is(err, context.Canceled) {
					return &exitError{code: 130, silent: true, err: err}
				}
				return err
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(r); err != nil {
					return err
				}
			} else {
				r.WriteText(a.stdout)
			}
			if !r.OK() {
				return &exitError{code: 1, silent: !asJSON,
					err: fmt.Errorf("%d of %d expected ACKs missing", r.Expected-r.Acks, r.Expected)}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Agents, "agents", 1000, "simulated agents, one claim each")
	f.StringVar(&o.URL, "url", "", "chat server on this machine (ws://127.0.0.1:PORT); default: start the embedded one")
	f.StringVar(&o.Keys, "keys", "", "keep the agents' and foreman's keys here and reuse them (a stock server lets a key send once it is an hour old)")
	f.DurationVar(&o.RateLimit, "rate-limit", 0, "the room's rate limit, one message per this per connection (0: none; with --url default 1s)")
	f.IntVar(&o.FloodLimit, "flood-limit", 0, "the room's frames per 10s per connection (-1: none; 0: none without a rate limit, else the stock 60)")
	f.DurationVar(&o.Spread, "spread", 10*time.Second, "send the claims at random moments over this long")
	f.BoolVar(&o.Simultaneous, "simultaneous", false, "send every claim at once instead of spreading them")
	f.DurationVar(&o.Settle, "settle", -1, "pause between the bot's first TASKS and the first claim (default: one send slot of the bot and 250ms)")
	f.BoolVar(&o.Journal, "journal", true, "run the bot with its journal (as in production)")
	f.StringVar(&o.Channel, "channel", "#build", "the room's channel")
	f.DurationVar(&o.Timeout, "timeout", 30*time.Second, "how long to wait for answers after the last claim")
	f.Uint64Var(&o.Seed, "seed", 0, "seed of the claims' random moments (0: a new one each run)")
	f.StringVar(&o.Binary, "bot", "", "the foreman binary to run the bot with (default: this one), e.g. to compare two builds")
	f.StringVar(&o.Dir, "dir", "", "keep the bot's config, log and journal in this directory")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress lines on stderr")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of this process (the agents and embedded server) here")
	return cmd
}
