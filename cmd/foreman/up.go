package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/internal/agents"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/paste"
	"github.com/agentforeman/foreman/internal/up"
)

// upFlags are foreman up's settings besides the config's.
type upFlags struct {
	listen            string // where to serve the room, instead of server.url's address
	noServe, newBuild bool
	agents            int // scripted builders to add to the config's agents
}

// maxScripted bounds --agents: each is a process with a clone of the
// target.
const maxScripted = 64

// upFlagKeys are up's flags that name configuration keys.
var upFlagKeys = map[string]string{"http": "http.listen"}

func (a *app) upCommand() *cobra.Command {
	var f upFlags
	cmd := &cobra.Command{
		Use:   "up [CONFIG]",
		Short: "Run a real build from one config, in one process: the room, foreman, the host and the board",
		Long: `up runs what a real build needs, from one config, in this one process:

  the room     an AgentChat-compatible server at server.url, as foreman serve
               runs it (unless server.url is not on this machine, or --join:
               then up joins the room there)
  foreman      joins the room and coordinates, as foreman run does
  the host     when host.repo is set: checks each READY and lands approved
               work, as foreman host does. Its key (host.identity) is created
               on first use, and its id is added to roles.ci and roles.merger
               for this run where the config does not list it
  the board    on http.listen, with /metrics and /healthz
  the agents   the config's agents: and --agents N scripted ones, each in a
               workspace of its own beside the journal (.foreman/agents/NAME:
               a clone of host.repo's target, its key, its log, a private HOME
               and TMPDIR, its CLI's MCP config), started once all are in the
               room, confined with host.sandbox on (a PID namespace, a uid
               of their own as root, Landlock: their own directory, nothing
               of foreman's), restarted with backoff when they crash, stopped
               when foreman times them out or a budget holds them, and at
               COMPLETE (docs/AGENTS.md, "Agents foreman up runs")

Each part is the same code as its own command, and talks to the room over a
WebSocket as a participant of its own: nothing in the protocol changes. Once
all are in the room, up prints the board's URL, the command that puts you,
the operator, in the room, and an MCP client configuration for LLM agents
(as foreman mcp --print-config prints it), with absolute paths.

Everything is checked before anything starts, and a problem stops up with one
line naming what to change: a port in use, a host.repo that is not a git
repository, no operator in roles.operators, a journal or a repository that
another foreman up (or run, or host) is using.

SIGINT and SIGTERM (Ctrl-C) stop it all, in order: the agents (SIGTERM, then
SIGKILL after 10s), the host's queue (its
ledger is synced at every step), then foreman (its journal flushed, queued
replies sent), then the board and the room. SIGHUP reloads the components and
the roles, as for foreman run. The separate commands (serve, run, host) remain
for running the parts on different machines, and for a cluster.`,
		Example: `  foreman init --name olga && foreman up --agents 3   # three scripted builders and an auditor
  foreman up --listen 127.0.0.1:0 --http 127.0.0.1:0   # free ports, printed once ready`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := untilInterrupted(cmd)
			defer stop()
			return a.runUp(ctx, cmd, configArg(args), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "", "serve the room here instead of at server.url's address (127.0.0.1:0 takes a free port)")
	fl.BoolVar(&f.noServe, "join", false, "join the room already at server.url instead of serving it")
	fl.String("http", "", "listen address of the board, /metrics and /healthz (http.listen; 127.0.0.1:0 takes a free port)")
	fl.IntVar(&f.agents, "agents", 0, "start N scripted builders (foreman agent) and a scripted auditor besides the config's agents:, each in its own workspace")
	fl.BoolVar(&f.newBuild, "new-build", false, "start a new build even though the room shows this identity's earlier one (its journal is gone)")
	return cmd
}

// runUp is foreman up: the configuration loaded and checked as every
// command checks it, then the stack (internal/up) prepared and run.
func (a *app) runUp(ctx context.Context, cmd *cobra.Command, file string, f upFlags) error {
	c, err := a.loadConfig(cmd, file, upFlagKeys)
	if err != nil {
		return err
	}
	if err := requireFile(c, "up"); err != nil {
		return err
	}
	if err := c.RequireBuild(); err != nil {
		return err
	}
	if err := refuseCycle(c); err != nil {
		return err
	}
	if c.Log.Format == "auto" {
		// up is a person's command: its summary goes to stdout, its log
		// beside it, and JSON lines there drown the summary even when
		// stderr is not a terminal (2>&1 | tee). log.format: json asks
		// for them.
		c.Log.Format = "console"
	}
	log, err := a.logger(c)
	if err != nil {
		return err
	}
	if f.agents < 0 || f.agents > maxScripted {
		return fmt.Errorf("--agents %d: want 0 to %d scripted builders", f.agents, maxScripted)
	}
	scripted, err := agents.Scripted(paste.Program(), f.agents, c.Agents)
	if err != nil {
		return err
	}
	reload, stopHUP := reloadOnHUP()
	defer stopHUP()
	s, err := up.Prepare(ctx, up.Options{
		Config: c, Logger: log, Stderr: a.stderr, Listen: f.listen, Join: f.noServe, NewBuild: f.newBuild,
		Reload: reload, ReloadConfig: func() (*config.Config, error) { return a.loadConfig(cmd, file, upFlagKeys) },
		Version: programVersion(), Agents: append(slices.Clone(c.Agents), scripted...),
	})
	if err != nil {
		return err
	}
	return s.Run(ctx, a.stdout)
}
