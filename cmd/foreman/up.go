package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	neturl "net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/agentchat/server"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/bot"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/host/live"
	"github.com/agentforeman/foreman/internal/web"
)

// upFlags are foreman up's settings besides the config's.
type upFlags struct {
	listen            string // where to serve the room, instead of server.url's address
	noServe, newBuild bool
}

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

Each part is the same code as its own command, and talks to the room over a
WebSocket as a participant of its own: nothing in the protocol changes. Once
all are in the room, up prints the board's URL, the command that puts you,
the operator, in the room, and an MCP client configuration for LLM agents
(as foreman mcp --print-config prints it), with absolute paths.

Everything is checked before anything starts, and a problem stops up with one
line naming what to change: a port in use, a host.repo that is not a git
repository, no operator in roles.operators, a journal or a repository that
another foreman up (or run, or host) is using.

SIGINT and SIGTERM (Ctrl-C) stop it all, in order: the host's queue (its
ledger is synced at every step), then foreman (its journal flushed, queued
replies sent), then the board and the room. SIGHUP reloads the components and
the roles, as for foreman run. The separate commands (serve, run, host) remain
for running the parts on different machines, and for a cluster.`,
		Example: `  foreman init --name olga && foreman up
  foreman up --listen 127.0.0.1:0 --http 127.0.0.1:0   # free ports, printed once ready`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			u, err := a.prepareUp(ctx, cmd, configArg(args), f)
			if err != nil {
				return err
			}
			return u.run(ctx, a.stdout)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "", "serve the room here instead of at server.url's address (127.0.0.1:0 takes a free port)")
	fl.BoolVar(&f.noServe, "join", false, "join the room already at server.url instead of serving it")
	fl.String("http", "", "listen address of the board, /metrics and /healthz (http.listen; 127.0.0.1:0 takes a free port)")
	fl.BoolVar(&f.newBuild, "new-build", false, "start a new build even though the room shows this identity's earlier one (its journal is gone)")
	return cmd
}

// upStack is foreman up's parts, each opened (a port bound, a lock taken)
// before any of them starts.
type upStack struct {
	c       *config.Config
	log     zerolog.Logger
	stderr  io.Writer
	file    string // the config, absolute
	origURL string // server.url before up served the room elsewhere

	served bool           // up serves the room
	roomLn net.Listener   // its free port, bound before anything starts
	room   *server.Server // nil until started, or when joining one elsewhere

	board    *web.Server // nil with http.listen off
	boardLn  net.Listener
	boardURL string

	bot       *bot.Bot
	reload    <-chan struct{}
	stopHUP   func()
	host      *live.Setup // nil without host.repo
	hostID    string
	hostKey   bool     // the host's key was created now
	hostRoles []string // the roles its id was added to for this run
	here      *presence
}

// prepareUp checks the configuration and opens every part: nothing talks
// to the room yet. On any error what was opened is closed again, and the
// error is one line naming what to change.
func (a *app) prepareUp(ctx context.Context, cmd *cobra.Command, file string, f upFlags) (_ *upStack, err error) {
	c, err := a.loadConfig(cmd, file, upFlagKeys)
	if err != nil {
		return nil, err
	}
	if err := requireFile(c, "up"); err != nil {
		return nil, err
	}
	if err := c.RequireBuild(); err != nil {
		return nil, err
	}
	if err := refuseCycle(c); err != nil {
		return nil, err
	}
	if c.Cluster.Enabled() {
		return nil, errors.New("cluster.nats: set, but foreman up runs one build in one process; start a cluster's foremen with foreman run (README, \"Running several foremen\")")
	}
	if len(c.Roles.Operators) == 0 {
		return nil, errors.New("roles.operators: empty, so nobody could settle what foreman escalates; foreman init writes a config with you as the operator, or list your agent id there (foreman identity --identity .foreman/NAME.json --name NAME prints it)")
	}
	served, listen, err := roomPlan(c, f)
	if err != nil {
		return nil, err
	}
	if c.Host.Repo != "" {
		if err := c.RequireHost(); err != nil {
			return nil, err
		}
	}
	log, err := a.logger(c)
	if err != nil {
		return nil, err
	}
	u := &upStack{c: c, log: log, stderr: a.stderr, origURL: c.Server.URL, served: served}
	if u.file, err = filepath.Abs(c.File); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			u.close()
		}
	}()
	if c.Host.Repo != "" {
		id, created, err := agentchat.LoadOrCreateIdentity(c.Host.Identity, c.Host.Name)
		if err != nil {
			return nil, fmt.Errorf("host.identity: %s: %w", c.Host.Identity, err)
		}
		u.hostID, u.hostKey = id.AgentID(), created
		u.hostRoles = addHostRoles(c, u.hostID)
	}
	u.here = &presence{host: u.hostID, ready: make(chan struct{})}

	// A free port is taken first, so that every part knows the address; a
	// fixed one last, so that a second up of the same config hears of the
	// journal it shares, not of a port. The room serves once all is open.
	if served && freePort(listen) {
		if u.roomLn, err = net.Listen("tcp", listen); err != nil {
			return nil, fmt.Errorf("--listen %s: cannot serve the room: %s", listen, listenProblem(err))
		}
		c.Server.URL = "ws://" + u.roomLn.Addr().String()
	} else if served && f.listen != "" {
		c.Server.URL = "ws://" + dialable(listen)
	}
	if c.HTTP != "" && freePort(c.HTTP) {
		if err := u.listenBoard(); err != nil {
			return nil, err
		}
	}
	var b *web.Server
	if c.HTTP != "" {
		b = web.New(boardOptions(c, log))
		u.board = b
	}
	u.reload, u.stopHUP = reloadOnHUP()
	opts := bot.Options{
		Config: c, Logger: log, Reload: u.reload, NewBuild: f.newBuild,
		ReloadConfig: func() (*config.Config, error) {
			next, err := a.loadConfig(cmd, file, upFlagKeys)
			if err == nil && u.hostID != "" {
				addHostRoles(next, u.hostID)
			}
			return next, err
		},
		Members: func(ev agentchat.Event) {
			if b != nil {
				b.Members(ev)
			}
			u.here.see(ev)
		},
	}
	if b != nil {
		opts.Observe, opts.Handled, opts.Named = b.Observe, b.Handled, b.Named
	}
	if u.bot, err = bot.New(opts); err != nil {
		return nil, err
	}
	if c.Host.Repo != "" {
		if u.host, err = live.Prepare(ctx, c, log); err != nil {
			return nil, err
		}
	}
	if c.HTTP != "" && u.boardLn == nil {
		if err := u.listenBoard(); err != nil {
			return nil, err
		}
	}
	if served { // last: once it serves, it says so
		if err := u.startRoom(ctx, listen, f.listen != ""); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// roomPlan says whether up serves the room, and on what address: it does
// when server.url is a ws:// address on this machine, unless told to join
// the room there.
func roomPlan(c *config.Config, f upFlags) (serve bool, listen string, err error) {
	switch {
	case f.noServe && f.listen != "":
		return false, "", errors.New("--listen and --join: --listen is where up serves the room, --join joins the one at server.url; give one")
	case f.noServe:
		return false, "", nil
	case f.listen != "":
		return true, f.listen, nil
	}
	u, err := neturl.Parse(c.Server.URL)
	if err != nil || u.Scheme != "ws" || !loopback(u.Hostname()) {
		return false, "", nil // a room elsewhere: join it
	}
	listen, err = listenAddress(c.Server.URL)
	return true, listen, err
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// dialable is where to reach a listen address: on this machine when it
// names every interface.
func dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// freePort reports whether addr asks for any free port (port 0).
func freePort(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	return err == nil && port == "0"
}

// startRoom serves the room on listen; where it really listens becomes
// server.url for every part when the address was not the config's.
func (u *upStack) startRoom(ctx context.Context, listen string, moved bool) error {
	cfg := server.DefaultConfig()
	cfg.Listen, cfg.Listener = listen, u.roomLn
	stockRoom(&cfg, u.c, u.log.With().Str("part", "server").Logger(), []string{u.c.Server.Channel})
	cfg.StateFile = roomStateFile(u.c)
	// The room outlives ctx: it closes last, once foreman's queued
	// replies are out.
	srv, err := server.Start(context.WithoutCancel(ctx), cfg)
	if err != nil {
		where := u.c.Origin("server.url")
		if moved {
			where = "--listen"
		}
		return fmt.Errorf("%s %s: cannot serve the room on %s: %s; %s", where, u.c.Server.URL, listen, listenProblem(err),
			"stop what uses it, join a room already there with --join, or take a free port with --listen 127.0.0.1:0")
	}
	u.room, u.roomLn = srv, nil // the room's own now
	return nil
}

// roomStateFile is where up's room keeps its history over a restart, next
// to the journal: a room and a foreman that stopped together start again
// together, and foreman's catch-up finds every line said before the stop
// in the room's replay (a room that died instead starts empty, and foreman
// says what it may have missed). "" without a journal: foreman then starts
// a new build each time, and needs no history.
func roomStateFile(c *config.Config) string {
	if c.Journal == "" {
		return ""
	}
	return filepath.Clean(c.Journal) + "-room.json"
}

// listenBoard binds the board's port; a free one becomes http.listen, so
// that the host's log links point at it.
func (u *upStack) listenBoard() error {
	ln, err := net.Listen("tcp", u.c.HTTP)
	if err != nil {
		return fmt.Errorf("%s %s: cannot serve the board: %s; change it, or take a free port with --http 127.0.0.1:0",
			u.c.Origin("http.listen"), u.c.HTTP, listenProblem(err))
	}
	u.boardLn, u.boardURL = ln, web.URL(ln.Addr())
	if freePort(u.c.HTTP) {
		u.c.HTTP = ln.Addr().String()
	}
	return nil
}

// listenProblem says why a port could not be bound, without the syscall's
// words when they are the usual ones.
func listenProblem(err error) string {
	if errors.Is(err, syscall.EADDRINUSE) {
		return "the port is in use (another foreman up, or another server?)"
	}
	return err.Error()
}

// addHostRoles lists the host's id in the roles foreman must take its lines
// from (roles.ci with CI gating, roles.merger when merge is external), in
// memory, for this run; it returns the keys it was added to.
func addHostRoles(c *config.Config, id string) []string {
	var added []string
	if c.Rules.CIGating && !slices.Contains(c.Roles.CI, id) {
		c.Roles.CI = append(slices.Clone(c.Roles.CI), id)
		added = append(added, "roles.ci")
	}
	if c.Rules.Merge == coordinator.MergeExternal && !slices.Contains(c.Roles.Merger, id) {
		c.Roles.Merger = append(slices.Clone(c.Roles.Merger), id)
		added = append(added, "roles.merger")
	}
	return added
}
