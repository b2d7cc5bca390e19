package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/internal/bot"
	"github.com/agentforeman/foreman/internal/tooling/demo"
	"github.com/agentforeman/foreman/internal/web"
)

func (a *app) demoCommand() *cobra.Command {
	var (
		o       demo.Options
		seed    uint64
		noColor bool
		up      struct {
			on       bool
			limit    time.Duration
			builders int
		}
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
client's flood guard (2.5 messages a second) starts to stretch the story.

With --git, the work is real: the builders commit files on branches of a
temporary git repository and foreman host (the CI role and the merger, merge
mode external) checks each READY with git diff --check on what would land,
rebases a branch that conflicts when a rebase is clean, steps back one that
fails, and lands approved work on main; the demo ends with git log --graph.

With --http, the live board (as foreman run serves it) follows the build in a
browser; it stays up after the build, with the final board, until Ctrl-C.

With --up (make demo-real), the demo is the README's own path, with no
simulation in foreman's part of it: git init and foreman init in a temporary
directory, then foreman up itself (the embedded room at its stock pace of one
message a second per sender, foreman with its stock rules, foreman host, the
board), then scripted builders (foreman agent --role builder --repo .) and an
auditor, each its own client of the room, and the operator watching from the
chat client. It ends once the build is COMPLETE and main holds every
component, stops foreman up as Ctrl-C would, and says how long it took.
--minute paces the scripted agents only (default 250ms here).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if up.on {
				ctx, stop := untilInterrupted(cmd)
				defer stop()
				http := o.HTTP
				if http == "" {
					http = "127.0.0.1:0"
				}
				d := &upDemo{a: a, minute: o.Minute, http: http, dir: o.Dir, quiet: o.Quiet, color: !noColor && isTTY(a.stdout),
					limit: up.limit, workers: up.builders}
				if !cmd.Flags().Changed("minute") {
					d.minute = upMinute
				}
				return d.run(ctx)
			}
			c, err := a.loadConfig(cmd, "", nil)
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
			ctx, stop := untilInterrupted(cmd)
			defer stop()
			o.Seed, o.Out, o.Logger = seed, a.stdout, log
			o.Color = !noColor && isTTY(a.stdout)
			var boardURL string
			if o.HTTP != "" {
				board, url, stopBoard, err := web.Start(o.HTTP, web.Options{Logger: log})
				if err != nil {
					return fmt.Errorf("--http: %w", err)
				}
				defer stopBoard()
				o.Observe, o.Handled, o.Named = board.Observe, board.Handled, board.Named
				o.OnBot = func(b *bot.Bot) { board.Attach(b) }
				boardURL = url
				fmt.Fprintln(a.stdout, "board:", url)
			}
			_, err = demo.Run(ctx, o)
			if errors.Is(err, context.Canceled) {
				return nil // interrupted: the summary says how far it got
			}
			if err == nil && boardURL != "" {
				// The build takes seconds; the board is worth a look after.
				fmt.Fprintln(a.stdout, "board: the final board stays at", boardURL, "until Ctrl-C")
				<-ctx.Done()
			}
			return err
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.Minute, "minute", 100*time.Millisecond, "real length of one contract minute")
	f.Uint64Var(&seed, "seed", 1, "seed of the agents' reaction jitter")
	f.StringVar(&o.Listen, "listen", "127.0.0.1:0", "chat server address; port 0 picks a free one")
	f.BoolVar(&o.CI, "ci", false, "turn CI gating on, with a CI bot")
	f.BoolVar(&o.Git, "git", false, "make the work real: builders push to a temporary git repository, foreman host checks and lands it; ends with git log --graph")
	f.BoolVar(&noColor, "no-color", false, "no colours, even on a terminal")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "print only the summary")
	f.StringVar(&o.Dir, "dir", "", "keep the journal and the recorded transcript in this directory")
	f.StringVar(&o.HTTP, "http", "", "serve the live board here (e.g. 127.0.0.1:9090; port 0 picks a free one) and print its URL")
	f.BoolVar(&up.on, "up", false, "the README's path for real: foreman init and foreman up on a temporary git repository, with scripted builders and an auditor (make demo-real)")
	f.DurationVar(&up.limit, "limit", 5*time.Minute, "with --up: give up if the build is not complete by then")
	f.IntVar(&up.builders, "builders", 3, "with --up: how many scripted builders")
	return cmd
}

// upMinute paces demo --up's scripted agents: a component's four lines
// take 2.25s, each a little over the room's one message a second.
const upMinute = 250 * time.Millisecond

// isTTY reports whether w is a terminal: colours only go there.
func isTTY(w any) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
