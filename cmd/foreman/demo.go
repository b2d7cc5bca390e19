package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/internal/demo"
)

func (a *app) demoCommand() *cobra.Command {
	var (
		o       demo.Options
		seed    uint64
		noColor bool
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Watch foreman coordinate a simulated team building a bookshop",
		Long: `demo runs a whole build on this machine with no setup: a chat server on
127.0.0.1, foreman itself, and simulated builders, an auditor and an operator,
each a real client of the room. The clock is accelerated (--minute: one
contract minute lasts 100ms), so the build takes seconds, and the cast is
scripted to show what foreman handles: a claim race, a builder that goes
silent and times out, failed audits (FIX, then RETRY), a component that waits
on another (WAIT, UNBLOCKED) and a hard blocker a human settles (ESCALATE,
RESOLVE), until COMPLETE. The room is printed as a chat log in contract time;
sender ids in lines are shown as @name.

Every duration of foreman's rules and of the agents' pacing is scaled by
--minute. So is the room's rate limit, to one message per half a contract
minute per sender (50ms at the default): the stock 1s scaled by the clock
would be under 2ms, a pace no room keeps. Below about 50ms a minute the chat
client's flood guard (2.5 messages a second) starts to stretch the story.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.settings(cmd, nil)
			if err != nil {
				return err
			}
			// The chat log is the output; the bot's own log would repeat it.
			if f := cmd.Flags().Lookup("log-level"); f == nil || !f.Changed {
				c.Log.Level = "error"
			}
			log, err := a.logger(c)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			o.Seed, o.Out, o.Logger = seed, a.stdout, log
			o.Color = !noColor && isTTY(a.stdout)
			_, err = demo.Run(ctx, o)
			if errors.Is(err, context.Canceled) {
				return nil // interrupted: the summary says how far it got
			}
			return err
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.Minute, "minute", 100*time.Millisecond, "real length of one contract minute")
	f.Uint64Var(&seed, "seed", 1, "seed of the agents' reaction jitter")
	f.StringVar(&o.Listen, "listen", "127.0.0.1:0", "chat server address; port 0 picks a free one")
	f.BoolVar(&o.CI, "ci", false, "turn CI gating on, with a CI bot")
	f.BoolVar(&noColor, "no-color", false, "no colours, even on a terminal")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "print only the summary")
	f.StringVar(&o.Dir, "dir", "", "keep the journal and the recorded transcript in this directory")
	return cmd
}

// isTTY reports whether w is a terminal: colours only go there.
func isTTY(w any) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
