// Package up is foreman up's supervisor: the room, foreman, the host and
// the board of one build, from one config, in one process. Each part is
// the same code as its own command, and talks to the room over a
// WebSocket as a participant of its own. Everything is opened (ports
// bound, locks taken) before anything starts, and a problem stops it with
// one line naming what to change; Run stops the parts in order. The CLI
// (cmd/foreman) is its flag layer.
package up

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/agentchat/server"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/agents"
	"github.com/agentforeman/foreman/internal/bot"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/host/live"
	"github.com/agentforeman/foreman/internal/host/remote"
	"github.com/agentforeman/foreman/internal/otlp"
	"github.com/agentforeman/foreman/internal/paste"
	"github.com/agentforeman/foreman/internal/web"
)

// Options are what foreman up is given besides the configuration.
type Options struct {
	Config *config.Config // loaded, with a build; the host's roles are added for the run
	Logger zerolog.Logger
	Stderr io.Writer // where the host's checks say what they cannot log
	// Listen serves the room here instead of at server.url's address
	// ("127.0.0.1:0" takes a free port); Join joins the room at server.url
	// instead of serving one.
	Listen string
	Join   bool
	// NewBuild starts a new build even though the room shows this
	// identity's earlier one.
	NewBuild bool
	// Reload is SIGHUP: a signal on it reloads the components and roles
	// from ReloadConfig.
	Reload       <-chan struct{}
	ReloadConfig func() (*config.Config, error)
	// Program names foreman in the commands Run prints (paste.Program).
	Program string
	// Version is what the room's GET /health reports.
	Version string
	// Agents are the agents up starts and supervises (internal/agents):
	// the config's agents:, and the scripted ones of --agents.
	Agents []config.Agent
	// Launch starts an agent's process. Default: confined by
	// internal/agentbox with host.sandbox on (confine), else agents.Exec.
	Launch agents.Launcher
}

// Stack is foreman up's parts, each opened (a port bound, a lock taken)
// before any of them starts.
type Stack struct {
	opts    Options
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
	host      *live.Setup // nil without host.repo
	hostID    string
	hostKey   bool     // the host's key was created now
	hostRoles []string // the roles its id was added to for this run
	here      *presence

	team     *agents.Supervisor // nil without agents
	gate     *remote.GitServer  // the agents' push gate: with agents and host.repo
	audRoles bool               // the auditors' ids were added to roles.auditors for this run
	confined string             // how the agents run (confine's word)
}

// Prepare checks the configuration and opens every part: nothing talks to
// the room yet. On any error what was opened is closed again, and the
// error is one line naming what to change.
func Prepare(ctx context.Context, o Options) (_ *Stack, err error) {
	c := o.Config
	if c.Cluster.Enabled() {
		return nil, errors.New("cluster.nats: set, but foreman up runs one build in one process; start a cluster's foremen with foreman run (README, \"Running several foremen\")")
	}
	if len(c.Roles.Operators) == 0 {
		return nil, errors.New("roles.operators: empty, so nobody could settle what foreman escalates; foreman init writes a config with you as the operator, or list your agent id there (foreman identity --identity .foreman/NAME.json --name NAME prints it)")
	}
	served, listen, err := roomPlan(c, o.Listen, o.Join)
	if err != nil {
		return nil, err
	}
	if c.Host.Repo != "" {
		if err := c.RequireHost(); err != nil {
			return nil, err
		}
	}
	// telemetry.secret, once, before anything is made: the receiver and
	// every agent's token are made from these same bytes.
	var secret []byte
	if c.HTTP != "" {
		if secret, err = web.TelemetrySecret(c); err != nil {
			return nil, err
		}
	}
	if o.Program == "" {
		o.Program = paste.Program()
	}
	log := o.Logger
	u := &Stack{opts: o, c: c, log: log, stderr: o.Stderr, origURL: c.Server.URL, served: served}
	if u.file, err = filepath.Abs(c.File); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			u.Close()
		}
	}()
	if c.Host.Repo != "" {
		id, created, err := agentchat.LoadOrCreateIdentity(c.Host.Identity, c.Host.Name)
		if err != nil {
			return nil, fmt.Errorf("host.identity: %s: %w", c.Host.Identity, err)
		}
		u.hostID, u.hostKey = id.AgentID(), created
		u.hostRoles = HostRoles(c, u.hostID)
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
	} else if served && o.Listen != "" {
		c.Server.URL = "ws://" + Dialable(listen)
	}
	if c.HTTP != "" && freePort(c.HTTP) {
		if err := u.listenBoard(); err != nil {
			return nil, err
		}
	}
	var push func(id string) ([]string, error)
	gitDir := "" // host.repo's, for the agents' gate and their box
	if len(o.Agents) > 0 && c.Host.Repo != "" {
		repo, err := gitrepo.Open(ctx, c.Host.Repo)
		if err != nil {
			return nil, fmt.Errorf("host.repo: %w", err)
		}
		gitDir = repo.GitDir()
		if push, err = u.serveGate(gitDir); err != nil {
			return nil, err
		}
	}
	if len(o.Agents) > 0 {
		launch, program, list := o.Launch, o.Program, o.Agents
		if launch == nil {
			box, err := confine(c, agents.Root(c), o.Program, gitDir)
			if err != nil {
				return nil, err
			}
			launch, program, list = box.launch, box.program, runs(o.Agents, o.Program, box.program)
			u.confined = box.said
			if box.launch == nil {
				log.Warn().Msg(box.said)
			}
		}
		// Before foreman and the board: its auditors' ids go in
		// roles.auditors, and the board lists its agents.
		// http.listen is where it really listens by now when it asked for
		// a free port (listenBoard).
		endpoint := ""
		if c.HTTP != "" {
			endpoint = "http://" + Dialable(c.HTTP)
		}
		u.team, err = agents.New(ctx, agents.Options{Config: c, Agents: list, Program: program, Launch: launch, Push: push, Revoke: u.revokePush,
			Secret: secret, Endpoint: endpoint,
			Log:  log.With().Str("part", "agents").Logger(),
			View: func(ctx context.Context) (coordinator.View, error) { return u.bot.View(ctx) }})
		if err != nil {
			return nil, err
		}
		u.audRoles = auditorRoles(c, u.team, o.Agents)
	}
	var b *web.Server
	spend := &otlp.LateSink{} // the bot, once made
	if c.HTTP != "" {
		wo := web.ConfigOptions(c, log)
		web.WithReceiver(&wo, secret, spend)
		if u.team != nil {
			wo.Agents = u.team.Status
		}
		b = web.New(wo)
		u.board = b
	}
	opts := bot.Options{
		Config: c, Logger: log, Reload: o.Reload, NewBuild: o.NewBuild,
		Members: func(ev agentchat.Event) {
			if b != nil {
				b.Members(ev)
			}
			u.here.see(ev)
		},
	}
	if o.ReloadConfig != nil {
		opts.ReloadConfig = func() (*config.Config, error) {
			next, err := o.ReloadConfig()
			if err == nil && u.hostID != "" {
				HostRoles(next, u.hostID)
			}
			return next, err
		}
	}
	if b != nil {
		opts.Observe, opts.Handled, opts.Named = b.Observe, b.Handled, b.Named
	}
	if u.team != nil {
		board := opts.Observe
		opts.Observe = func(ev *coordinator.Event, said []coordinator.Reply) {
			if board != nil {
				board(ev, said)
			}
			u.team.Observe(ev, said) // TIMEOUT, RELEASE, budget holds, COMPLETE
		}
	}
	if u.bot, err = bot.New(opts); err != nil {
		return nil, err
	}
	spend.Attach(u.bot)
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
		if err := u.startRoom(ctx, listen, o.Listen != ""); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// roomPlan says whether up serves the room, and on what address: it does
// when server.url is a ws:// address on this machine, unless told to join
// the room there.
func roomPlan(c *config.Config, listenFlag string, join bool) (serve bool, listen string, err error) {
	switch {
	case join && listenFlag != "":
		return false, "", errors.New("--listen and --join: --listen is where up serves the room, --join joins the one at server.url; give one")
	case join:
		return false, "", nil
	case listenFlag != "":
		return true, listenFlag, nil
	}
	u, err := neturl.Parse(c.Server.URL)
	if err != nil || u.Scheme != "ws" || !loopback(u.Hostname()) {
		return false, "", nil // a room elsewhere: join it
	}
	listen, err = ListenAddress(c.Server.URL)
	return true, listen, err
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Dialable is where to reach a listen address: on this machine when it
// names every interface (":9090", "0.0.0.0:9090", "[::]:9090").
func Dialable(addr string) string {
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
func (u *Stack) startRoom(ctx context.Context, listen string, moved bool) error {
	cfg := server.DefaultConfig()
	cfg.Listen, cfg.Listener = listen, u.roomLn
	StockRoom(&cfg, u.c, u.log.With().Str("part", "server").Logger(), []string{u.c.Server.Channel}, u.opts.Version)
	cfg.StateFile = RoomStateFile(u.c)
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

// listenBoard binds the board's port; a free one becomes http.listen, so
// that the host's log links point at it.
func (u *Stack) listenBoard() error {
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

// auditorRoles lists the ids of the agents that audit in roles.auditors,
// in memory, for this run, when that list is not empty (empty: anyone but
// a component's builder may audit, and they may already).
func auditorRoles(c *config.Config, team *agents.Supervisor, list []config.Agent) bool {
	if len(c.Roles.Auditors) == 0 {
		return false
	}
	added := false
	for _, a := range list {
		id := team.Workspace(a.Name).ID
		if a.Role == config.AgentAuditor && !slices.Contains(c.Roles.Auditors, id) {
			c.Roles.Auditors = append(slices.Clone(c.Roles.Auditors), id)
			added = true
		}
	}
	return added
}

// HostRoles lists the host's id in the roles foreman must take its lines
// from (roles.ci with CI gating, roles.merger when merge is external), in
// memory, for this run; it returns the keys it was added to.
func HostRoles(c *config.Config, id string) []string {
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

// serveGate serves host.repo (its git directory) to the agents up starts, on a free port of
// this machine: each agent's token pushes only to its own namespace,
// refs/heads/<its id without @>/... (remote.GitServer.GrantPush), and
// the host, for this run, refuses a READY of a branch outside the
// builder's (host.branch_namespaces). It returns what grants an agent
// its push: the gate's URL and its token, in its environment.
func (u *Stack) serveGate(gitDir string) (func(id string) ([]string, error), error) {
	var err error
	if u.gate, err = remote.ServeGit(gitDir, "127.0.0.1:0", ""); err != nil {
		return nil, fmt.Errorf("the agents' push gate: %w", err)
	}
	u.c.Host.BranchNamespaces = true
	return func(id string) ([]string, error) {
		token, err := u.gate.GrantPush(host.NamespaceName(id))
		if err != nil {
			return nil, err
		}
		return []string{config.EnvPushURL + "=" + u.gate.URL(), config.EnvPushToken + "=" + token}, nil
	}, nil
}

// runs is list with the agents whose command is foreman (program) running
// prog instead: the copy of foreman its confined agents may run.
func runs(list []config.Agent, program, prog string) []config.Agent {
	if prog == program {
		return list
	}
	same := func(a, b string) bool {
		pa, ea := exec.LookPath(a)
		pb, eb := exec.LookPath(b)
		if ea != nil || eb != nil {
			return a == b
		}
		fa, ea := os.Stat(pa)
		fb, eb := os.Stat(pb)
		return ea == nil && eb == nil && os.SameFile(fa, fb)
	}
	out := slices.Clone(list)
	for i, a := range out {
		if len(a.Command) > 0 && (a.Command[0] == program || same(a.Command[0], program)) {
			a.Command = append([]string{prog}, a.Command[1:]...)
			out[i] = a
		}
	}
	return out
}

// revokePush ends the push token of an agent stopped for good.
func (u *Stack) revokePush(id string) {
	if u.gate != nil {
		u.gate.RevokePush(host.NamespaceName(id))
	}
}
